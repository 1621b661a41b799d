"""The claims' decision rule: each paper's headline claims, and whether our run reproduces them. The page
that shows them is `workflow_src/report/claims_page.py`.

A paper's claims module, `workflow_src/papers/<paper>_claims.py`, lists `CLAIMS`
(`workflow_src/paper_records.py`): each quotes the paper's sentence and tests exactly what it states
with one or more `Check`s (in one column of one artefact, a row beats another row, its own point at
another x, or a number the paper prints) or `Gap`s (one check's difference exceeds another's:
d_wider - d_narrower > 0, on the two checks' bootstrap resamples, which draw the same test units
where they share a test set; for timings, by Welch's t over the four cells). A check is decided by a
test that fits its evidence, never by eye (`workflow_src/score/inference.py`: a paired bootstrap
over test sentences or blocks of test tokens with the seeds redrawn, Welch's t over per-seed values
and timed repeats, or none for exact counts), at `ALPHA` = 0.05.

A claim is

- reproduced when every check's p is below ALPHA (all must hold, so no correction is needed); a
  `pooled` claim (many cells with small gaps, "in all cases") when one paired bootstrap of the mean
  d over its cells, resampled together, gives p < ALPHA;
- not reproduced when Holm's correction over its checks' reverse tests (p of the opposite, in
  ascending order p_(i) < ALPHA / (m - i + 1) for every i up to one) rejects any, or a pooled
  claim's mean is significantly reversed;
- not decidable in this run when a check's evidence is missing (not configured, not built),
  comes from runs still learning when their training stopped (`Cell.unsettled`), or is a ratio
  (a factor, a parity) with a score of 0 (`ratio_of_zero`);
- not comparable on synthetic data (the demo) when a check compares with a number the paper prints;
- inconclusive otherwise: too little evidence either way.

Each claim shows its power: with the paper's gap g (its own numbers on the check's scale) and this
run's standard error of d, se(S)^2 = v_test + v_seed / S over S seeds (v_test from the bootstrap
with the seeds held, v_seed from redrawing them; timings and per-seed values: the replicates'
variance / S), power = Φ(g / se - z_(1-ALPHA)) per check, their product for a claim of several, and
the seeds that would give 80%.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from workflow_src.paper_records import Check, Claim, Gap
from workflow_src.score import evidence, significance
from workflow_src.score.evidence import Cell
from workflow_src.score.inference import (
    ALPHA,
    RESAMPLES,
    Spread,
    Test,
    by_bootstrap,
    by_count,
    by_t,
    difference,
    difference_by_t,
    holm,
    observed,
    on_scale,
    power,
    resample_p,
    runs,
)

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NOT_DECIDABLE, NOT_COMPARABLE = "not decidable", "not comparable"
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_DECIDABLE, NOT_COMPARABLE)
# the tally's columns: what each verdict means
VERDICT_HEADINGS = {
    REPRODUCED: REPRODUCED,
    NOT_REPRODUCED: NOT_REPRODUCED,
    INCONCLUSIVE: "inconclusive: too little evidence",
    NOT_DECIDABLE: "not decidable in this run: evidence missing",
    NOT_COMPARABLE: "not comparable: synthetic data",
}
TARGET_POWER = 0.8
MAX_RUNS = 50  # the most seeds (or repeats) a power answer looks at
ONE_SEED = "one seed: test-set variance only"
NO_EVIDENCE = "not configured in this run, or not computed (its note says which)"
STILL_LEARNING = "not decided on runs still learning, which rank by their training budget"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A check on its own: its verdict at ALPHA (uncorrected: `decide_claim` combines them), our
    numbers and why; `test` where one ran; `learning`, its cells from runs still learning; `absent`,
    the (artefact, name, where, why) of a cell with no evidence; a gap not decidable: `undecided`,
    its parts that are not."""

    verdict: str
    ours: str
    reason: str
    test: Test | None = None
    learning: tuple[str, ...] = ()
    absent: tuple[str, str, str, str] | None = None
    undecided: tuple["Outcome", ...] = ()


COUNTED = "parameters"  # the unit of exact counts, printed whole ("214,999 parameters")


def with_unit(value: float, unit: str) -> str:
    return f"{value:,.0f} {unit}" if unit == COUNTED else f"{value:.4g} {unit}".rstrip()


def describe(
    check: Check,
    value_a: float,
    value_b: float | None,
    a: Cell,
    b: Cell | None,
    d: float,
    unit: str = "",
    points: tuple[str, str] = ("", ""),
) -> str:
    """Our two numbers with their unit, and the difference (or ratio) the claim is about; `points`:
    where a figure's two cells lie on its x axis, in words (`point_names`)."""
    at_a, at_b = (f", {point}" if point else "" for point in points)
    compared = (check.than or check.row) if at_b and check.than_x is not None else check.compared_name
    other = (
        f"{with_unit(value_b, unit)} ({compared}, {runs(b)}{at_b})"
        if b is not None
        else with_unit(check.threshold, unit)
    )
    ours = f"{with_unit(value_a, unit)} ({check.name}, {runs(a)}{at_a}) against {other}"
    if check.parity is not None or check.factor is not None:
        return f"{ours}: ratio {value_a / value_b:.3g}" if value_b > 0 else f"{ours}: no ratio"
    return f"{ours}; d = {d:+,.0f}" if unit == COUNTED else f"{ours}; d = {d:+.3g}"


def decide(
    check: Check | Gap,
    cells: dict | None,
    missing: str = "",
    unit: str | tuple[str, ...] = "",
    points: tuple[str, str] = ("", ""),
) -> Outcome:
    """A check's verdict on its artefact's evidence, uncorrected (None: not built, `missing` says
    why); `unit` is what its numbers are in (a gap's: one per part, `unit_of`), `points` where a
    figure's cells lie (`point_names`). A gap's parts, and a check's compared cell, read the same
    `cells` here; `decide_in_run` gives each part its own artefact's, and a compared cell its
    `than_artefact`'s."""
    if isinstance(check, Gap):
        units = unit if isinstance(unit, tuple) else (unit,) * len(check.parts)
        return gap_outcome(check, [decide(part, cells, missing, u) for part, u in zip(check.parts, units)])
    if cells is None:
        return Outcome(NOT_DECIDABLE, "", missing)
    a = cells.get((check.row, check.column, check.x))
    b = cells.get(check.compared) if check.compared is not None else None
    for (name, column, x), cell, point, artefact in (
        ((check.row, check.column, check.x), a, points[0], check.artefact),
        (check.compared or (None, None, None), b, points[1], check.compared_artefact),
    ):
        if name is not None and cell is None:
            at = f" at {point}" if point else (f" at x = {x:g}" if x is not None else "")
            why = evidence.as_evidence(cells).why_left_out(name, column) or NO_EVIDENCE
            return Outcome(
                NOT_DECIDABLE,
                "",
                f"{artefact} has no evidence for {name} in {column}{at}: {why}",
                absent=(artefact, name, f"{column}{at}", why),
            )
    if b is not None and a.kind != b.kind:
        raise ValueError(f"{check.artefact}: {check.row} is {a.kind}, {check.compared_name} is {b.kind}")
    value_a, value_b = observed(a), (observed(b) if b is not None else None)
    shown_with = functools.partial(describe, check, value_a, value_b, a, b, unit=unit, points=points)
    if moving := [
        f"{cell.row if cell is a else check.compared_name} {cell.unsettled}"
        for cell in (a, b)
        if cell is not None and cell.unsettled
    ]:
        reference = value_b if b is not None else check.threshold
        d = float(difference(check, on_scale(check, value_a), on_scale(check, reference)))
        return Outcome(
            NOT_DECIDABLE,
            shown_with(d=d),
            f"{STILL_LEARNING}: {'; '.join(moving)}",
            learning=tuple(moving),
        )
    if zero := ratio_of_zero(check, value_a, value_b, unit):
        return Outcome(NOT_DECIDABLE, shown_with(d=math.nan), zero)
    if a.kind == "count":
        test = by_count(check, a, b)
        shown = shown_with(d=test.d)
        verdict, how = (
            (REPRODUCED, "holds")
            if test.d > 0
            else (NOT_REPRODUCED, "fails")
            if test.d < 0
            else (INCONCLUSIVE, "sits on its bar")
        )
        return Outcome(verdict, shown, f"{test.method}: the claim {how}", test)
    if a.kind == "value":
        test = by_t(check, a, b)
        if isinstance(test, str):
            where = ", ".join(filter(None, (check.name, points[0])))
            return Outcome(INCONCLUSIVE, f"{with_unit(value_a, unit)} ({where})", test)
    else:
        test = by_bootstrap(check, a, b)
    shown = shown_with(d=test.d)
    if check.parity is not None:
        bounds = f"±{check.parity:.0%}"
        if test.p_claim < ALPHA:
            return Outcome(REPRODUCED, shown, f"{test.method}: within {bounds}, p = {test.p_claim:.3g}", test)
        if test.p_opposite < ALPHA:
            return Outcome(NOT_REPRODUCED, shown, f"{test.method}: outside {bounds}, p = {test.p_opposite:.3g}", test)
        return Outcome(
            INCONCLUSIVE, shown, f"{test.method}: neither within nor outside {bounds} at p < {ALPHA:g}", test
        )
    return one_sided_outcome(test, shown)


def ratio_of_zero(check: Check, value_a: float, value_b: float | None, unit: str) -> str:
    """Why a ratio check (a factor, a parity) cannot be decided on these observed numbers, or "": a
    ratio needs both above 0 (a model that scores 0 BLEU learned nothing, and its log is -inf)."""
    if check.parity is None and check.factor is None:
        return ""
    numbers = ((value_a, check.name), (value_b, check.compared_name))
    zero = [name for value, name in numbers if value is not None and value <= 0]
    return f"a ratio needs both numbers above 0, and {' and '.join(zero)} scored {with_unit(0, unit)}" if zero else ""


def one_sided_outcome(test: Test, shown: str) -> Outcome:
    """A one-sided test's verdict at ALPHA: the claim holds, the opposite does, or neither."""
    if test.p_claim < ALPHA:
        return Outcome(REPRODUCED, shown, f"{test.method}: p = {test.p_claim:.3g} < {ALPHA:g}", test)
    if test.p_opposite < ALPHA:
        return Outcome(
            NOT_REPRODUCED, shown, f"{test.method}: the opposite holds, p = {test.p_opposite:.3g} < {ALPHA:g}", test
        )
    return Outcome(INCONCLUSIVE, shown, f"{test.method}: p = {test.p_claim:.3g}, not below {ALPHA:g} either way", test)


def gap_outcome(gap: Gap, parts: list[Outcome]) -> Outcome:
    """A gap's verdict from its two checks' outcomes: d_r = d_wider,r - d_narrower,r on each
    resample, or Welch's t of d_wider - d_narrower for values (uncorrected, as a check's)."""
    ours = " | ".join(o.ours for o in parts if o.ours)
    if undecided := tuple(o for o in parts if o.verdict == NOT_DECIDABLE):
        return Outcome(NOT_DECIDABLE, ours, "; ".join(dict.fromkeys(o.reason for o in undecided)), undecided=undecided)
    if any(o.test is None and o.verdict == INCONCLUSIVE for o in parts):
        return Outcome(INCONCLUSIVE, ours, "; ".join(o.reason for o in parts if o.test is None))
    wider, narrower = (o.test for o in parts)
    if all(t is not None and t.resampled is not None for t in (wider, narrower)):
        d_r, d_fixed = wider.resampled - narrower.resampled, wider.resampled_fixed - narrower.resampled_fixed
        test = Test(
            wider.d - narrower.d,
            resample_p(d_r > 0),
            resample_p(d_r < 0),
            f"paired bootstrap of the difference of the two d ({wider.method}; {narrower.method})",
            Spread.of_bootstrap(d_r, d_fixed, min(wider.spread.runs, narrower.spread.runs)),
            d_r,
            d_fixed,
        )
    elif all(t is not None and t.welch is not None for t in (wider, narrower)):
        test = difference_by_t(wider, narrower)
    else:
        raise ValueError(
            f"{pair_name(gap)}: a gap needs unit evidence (BLEU, perplexity, F1, METEOR) in both checks, or "
            "values (timings, per-seed numbers) in both"
        )
    shown = f"{ours}: d {wider.d:+.3g} against {narrower.d:+.3g}, difference {test.d:+.3g}"
    return one_sided_outcome(test, shown)


def pooled_test(claim: Claim, outcomes: list[Outcome]) -> Test | None:
    """One test of the mean d over a pooled claim's checks, their resamples averaged (each check's
    own draw of its units and seeds); None unless every check has a bootstrap test."""
    tests = [o.test for o in outcomes]
    if any(t is None or t.resampled is None for t in tests):
        if any(t is not None and t.resampled is None for t in tests):
            raise ValueError(
                f"claim {claim.id}: a pooled claim needs unit evidence (BLEU, perplexity, F1, METEOR) in every check"
            )
        return None
    d_r = np.mean([t.resampled for t in tests], axis=0)
    d_fixed = np.mean([t.resampled_fixed for t in tests], axis=0)
    spread = Spread.of_bootstrap(d_r, d_fixed, min(t.spread.runs for t in tests))
    positive = sum(t.d > 0 for t in tests)
    method = (
        f"pooled paired bootstrap of the mean d over the {len(tests)} cells (each cell's units and seeds "
        f"resampled, {RESAMPLES} resamples): mean d = {np.mean([t.d for t in tests]):+.3g}, "
        f"{positive} of {len(tests)} cells in the claimed direction"
    )
    return Test(
        float(np.mean([t.d for t in tests])), resample_p(d_r > 0), resample_p(d_r < 0), method, spread, d_r, d_fixed
    )


# -- power ---------------------------------------------------------------------------------------------
def check_gap(check: Check, numbers: tuple[float, float]) -> float:
    """The paper's own d on the check's scale (a parity check: its margin to the nearer bound)."""
    a, b = numbers
    if check.parity is not None:
        return math.log(1 + check.parity) - abs(math.log(a) - math.log(b))
    return float(difference(check, on_scale(check, a), on_scale(check, b)))


def paper_gap(paper: str, check: Check | Gap) -> float | None:
    """The paper's own d of a check (`check_gap`), or of a gap: its wider d less its narrower;
    None where the paper prints no number for a part."""
    gaps = [None if (n := paper_numbers(paper, part)) is None else check_gap(part, n) for part in check.parts]
    if None in gaps:
        return None
    return gaps[0] - gaps[1] if isinstance(check, Gap) else gaps[0]


def runs_text(count: int, kind: str) -> str:
    return f"{count} {kind}{'s' if count != 1 else ''}"


def claim_power(claim: Claim, outcomes: list[Outcome], gaps: list[float | None], pooled: Test | None) -> str:
    """The chance this run could reproduce the claim, were the paper's gaps the truth, and the
    runs that would give TARGET_POWER; or why it cannot be said."""
    if any(o.verdict == NOT_DECIDABLE for o in outcomes):
        return "unknown: not decidable in this run"
    if any(g is None for g in gaps):
        return "unknown: the paper prints no number for it"
    if any(o.test is None for o in outcomes):
        return "unknown: one run, no spread"
    if all(o.test.spread.run_kind == "count" for o in outcomes):
        return f"exact counts, no spread: the paper's own counts {'meet' if all(g > 0 for g in gaps) else 'fail'} it"
    if claim.pooled:
        tests, gap_of = [pooled], [float(np.mean(gaps))]
    else:
        tests, gap_of = [o.test for o in outcomes], gaps

    def at(runs: int | None) -> float | None:
        chances = [power(g, t.spread.se(runs)) for t, g in zip(tests, gap_of)]
        return None if any(c is None for c in chances) else float(np.prod(chances))

    now, kind = at(None), tests[0].spread.run_kind
    if now is None:
        return "unknown: a ratio with a score of 0 on some resample has no finite spread"
    current = min(t.spread.runs for t in tests)
    text = f"{now:.2f} at {runs_text(current, kind)}"
    if any(t.spread.per_run is None for t in tests):
        return f"{text} (test-set variance only); the {kind}s' spread is unmeasured at one {kind}: run 2 or more"
    if now >= TARGET_POWER:
        return text
    needed = next((n for n in range(current + 1, MAX_RUNS + 1) if at(n) >= TARGET_POWER), None)
    if needed is not None:
        return f"{text}; {TARGET_POWER:.0%} needs {runs_text(needed, kind)}"
    if at(10**6) < TARGET_POWER:
        return f"{text}; no number of {kind}s reaches {TARGET_POWER:.0%}: the test set's own variance is too large"
    return f"{text}; {TARGET_POWER:.0%} needs more than {runs_text(MAX_RUNS, kind)}"


# -- a claim -------------------------------------------------------------------------------------------
def pair_name(check: Check | Gap, paper: str | None = None) -> str:
    """What a check compares, in words: "lm-small-al against lm-small-vd (PTB test)", "Emb w/ NLL-vMF
    against Softmax (5-9)" (a table whose columns are the systems), "d(Lᵀ, W) at x = 1 against x = 0";
    a gap: "the gap of <one pair> beyond that of <another>". With its `paper`, a figure's points are
    named as its panel names them (`point_names`: "at β = 1 against β = 0", "against NMT at high
    frequency")."""
    if isinstance(check, Gap):
        return f"the gap of {pair_name(check.wider, paper)} beyond that of {pair_name(check.narrower, paper)}"
    at, than_at = point_names(paper, check) if paper is not None else ("", "")
    if check.than_column is not None and check.x is not None:
        here, there = (at or f"x = {check.x:g}"), (than_at or f"x = {check.compared[2]:g}")
        return f"{check.row} at {here} [{check.column}] against {there} [{check.than_column}]"
    if check.than_column is not None:
        return f"{check.column} against {check.than_column} ({check.row})"
    if check.than_x is not None:
        return (
            f"{check.row} at {at or f'x = {check.x:g}'} against {than_at or f'x = {check.than_x:g}'} ({check.column})"
        )
    where = f" at {at}" if at else (f" at x = {check.x:g}" if check.x is not None else "")
    if check.than_artefact is not None:
        return f"{check.row} of {check.artefact} against {check.compared_name}{where} ({check.column})"
    than = check.than if check.than is not None else f"{check.threshold:g}"
    return f"{check.row} against {than}{where} ({check.column})"


@dataclasses.dataclass(frozen=True)
class Decision:
    verdict: str  # one of VERDICTS
    shown: str  # the verdict as the page prints it (with "one seed: test-set variance only")
    reason: str  # what decided it, beyond each check's own test
    power: str


def decide_claim(
    claim: Claim,
    outcomes: list[Outcome],
    gaps: list[float | None] | None = None,
    synthetic: bool = False,
    paper: str | None = None,
) -> Decision:
    """The claim's verdict from its checks' outcomes (module docstring): Holm for "not reproduced",
    every check (or the pooled test) for "reproduced"; `gaps`: the paper's d per check (None: not
    printed); `paper` names a figure's points in words (`pair_name`)."""
    gaps = gaps if gaps is not None else [None] * len(outcomes)
    pooled = pooled_test(claim, outcomes) if claim.pooled else None
    tested = [(check, o) for check, o in zip(claim.checks, outcomes) if o.test is not None]
    reversed_ = [check for (check, _), r in zip(tested, holm([o.test.p_opposite for _, o in tested])) if r]
    notes = []
    if reversed_:
        notes.append(
            f"Holm's correction over the {len(tested)} tested checks: reversed in "
            + ", ".join(pair_name(check, paper) for check in reversed_)
        )
    if pooled is not None:
        notes.append(f"{pooled.method}: p = {pooled.p_claim:.3g}, of the opposite {pooled.p_opposite:.3g}")
    if synthetic and any(c.against_printed_constant for c in claim.checks):
        verdict = NOT_COMPARABLE
        notes.insert(
            0, "synthetic data: compared with a number the paper prints, which the demo's data cannot be held to"
        )
    elif reversed_ or (pooled is not None and pooled.p_opposite < ALPHA):
        verdict = NOT_REPRODUCED
    elif any(o.verdict == NOT_DECIDABLE for o in outcomes):
        verdict = NOT_DECIDABLE
    elif pooled.p_claim < ALPHA if pooled is not None else all(o.verdict == REPRODUCED for o in outcomes):
        verdict = REPRODUCED
    else:
        verdict = INCONCLUSIVE
    one_seed = [o.test.resampled is not None and o.test.spread.runs == 1 for _, o in tested]
    shown = verdict
    if verdict in (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE) and any(one_seed):
        shown += f" ({ONE_SEED})" if all(one_seed) else " (some checks at one seed: test-set variance only there)"
    chance = "not comparable" if verdict == NOT_COMPARABLE else claim_power(claim, outcomes, gaps, pooled)
    return Decision(verdict, shown, "; ".join(notes), chance)


# -- what the registry knows: the paper's numbers, units, table marks ---------------------------------------
def paper_numbers(paper: str, check: Check) -> tuple[float, float] | None:
    """The paper's numbers for a check's row and what it is compared with, as its artefact (or the
    check itself, for a figure) gives them; None where the paper prints none."""
    if check.paper_values is not None:
        return check.paper_values
    a = paper_value(paper, check.artefact, check.row, check.column)
    if check.threshold is not None:
        return None if a is None else (a, check.threshold)
    row, column, _ = check.compared
    b = paper_value(paper, check.compared_artefact, row, column)
    return None if a is None or b is None else (a, b)


def paper_value(paper: str, artefact_id: str, row: str, column: str) -> float | None:
    from workflow_src import artefacts, registry

    artefact = registry.artefact(paper, artefact_id)
    if isinstance(
        artefact, (artefacts.ScoreTable, artefacts.PerplexityTable, artefacts.ParameterTable, artefacts.SamplingTable)
    ):
        keys = {"ms per batch": ("ms",), artefacts.LAYER_PARAMETERS: ("input", "output")}.get(column, (column,))
        if isinstance(artefact, artefacts.SamplingTable):
            keys = (f"{float(column.rstrip('%')) / 100:g}",)
        found = next(([r.paper.get(k) for k in keys] for r in artefact.rows if r.experiment == row), [None])
        return None if None in found else float(sum(found))
    if isinstance(artefact, artefacts.ConvergenceTable):
        return artefact.paper_hours.get(row, {}).get(column.removesuffix(" ours"))
    if isinstance(artefact, (artefacts.RareWordTable, artefacts.NeighbourTable)):
        return artefact.paper.get(row, {}).get(column)
    return None


def unit_of(paper: str, check: Check | Gap) -> str | tuple[str, ...]:
    """What a check's numbers are in, as the artefact shows them (a gap: each part's)."""
    from workflow_src import artefacts, registry

    if isinstance(check, Gap):
        return tuple(unit_of(paper, part) for part in check.parts)

    artefact = registry.artefact(paper, check.artefact)
    if isinstance(artefact, artefacts.ScoreTable):
        column = next((c for c in artefact.columns if c.name == check.column), None)
        return COUNTED if column is None else "METEOR (%)" if column.metric == "meteor" else "BLEU"
    if isinstance(artefact, artefacts.Figure):
        panel = next(p for p in artefact.panels if p.title == check.column)
        return {
            artefacts.Throughput: "instances/s",
            artefacts.MeteorByFrequency: "METEOR (%)",
            artefacts.ScoreAgainst: "BLEU",
            artefacts.SubspaceSweep: "(subspace distance)",
        }.get(type(panel), "")
    if isinstance(artefact, artefacts.NeighbourTable):
        return "%" if "(%)" in check.row else "cosine"
    return {
        artefacts.PerplexityTable: "perplexity",
        artefacts.RareWordTable: "F1",
        artefacts.ConvergenceTable: "epochs" if check.column.endswith(artefacts.BEST_BLEU_EPOCH) else "s of training",
        artefacts.ParameterTable: COUNTED if check.column == artefacts.LAYER_PARAMETERS else "ms per batch",
        artefacts.SamplingTable: "target tokens/s",
        artefacts.NextWordTable: "(mean probability)",
    }.get(type(artefact), "")


def point_names(paper: str, check: Check) -> tuple[str, str]:
    """Where a figure check's cell and the cell it is compared with lie on the panel's x axis, in
    words ("d_j = 2048", "batch 128", "high frequency", "β = 0.5"), each on its own panel (a compared
    cell's is `than_column`'s where it is set); "" for a table's cell."""
    from workflow_src import artefacts, registry

    artefact = registry.artefact(paper, check.artefact)
    if not isinstance(artefact, artefacts.Figure) or check.x is None:
        return "", ""
    panels = {p.title: p for p in artefact.panels}

    def name(x: float | None, panel) -> str:
        if x is None:
            return ""
        if isinstance(panel, artefacts.MeteorByFrequency):
            return f"{panel.bins[int(x)]} frequency"
        if isinstance(panel, artefacts.SubspaceSweep):
            return f"{SWEPT_SYMBOLS.get(panel.parameter, panel.parameter)} = {x:g}"
        if isinstance(panel, artefacts.ScoreAgainst):
            return f"{panel.xlabel} = {x:g}"
        if isinstance(panel, artefacts.Throughput):
            return f"batch {x:g}"
        return f"x = {x:g}"

    if check.compared is None:
        return name(check.x, panels[check.column]), ""
    return name(check.x, panels[check.column]), name(check.compared[2], panels[check.compared[1]])


SWEPT_SYMBOLS = {"beta": "β", "tau": "τ"}


def table_mark_note(paper: str, check: Check, cells: dict, outcome: Outcome) -> str:
    """Where a score table marks this check's pair with its own test (the joint paper's two-sided
    test against each row's baseline, seeds held) and that answer differs from this check's, the
    table's answer, so that both pages name both."""
    from workflow_src import artefacts, registry

    artefact = registry.artefact(paper, check.artefact)
    if outcome.test is None or not isinstance(artefact, artefacts.ScoreTable) or not artefact.significance_levels:
        return ""
    row = next((r for r in artefact.rows if r.experiment == check.row), None)
    if (
        row is None
        or check.than is None
        or check.than_artefact is not None
        or row.baseline != check.than
        or check.margin
        or check.lower_is_better
    ):
        return ""
    a, b = cells[check.row, check.column, None], cells[check.compared]
    if a.kind == "count":  # the table marks its scores, not its |Θ|
        return ""
    p = significance.difference_p(
        [np.array(s) for s in a.replicates],
        [np.array(s) for s in b.replicates],
        significance.resample_indices(len(a.replicates[0])),
    )
    table_says = p < ALPHA and outcome.test.d > 0
    if table_says == (outcome.test.p_claim < ALPHA):
        return ""
    mark = next((m for level, m in artefact.significance_levels if p < level), "no mark")
    return (
        f"{check.artefact} answers differently: {mark} (its test: sacrebleu's two-sided paired bootstrap with the "
        f"seeds held, p = {p:.3g}; this page: one-sided, seeds resampled)"
    )


def evidence_path(paper: str, artefact: str) -> str:
    """A table's evidence file; a figure's where it has per-unit evidence (`Figure.unit_evidence`),
    else its data (CSV)."""
    from workflow_src import registry

    if artefact.startswith("table") or registry.artefact(paper, artefact).unit_evidence:
        return f"results/{paper}/{artefact}.evidence.json"
    return f"results/{paper}/{artefact}.csv"


def read_evidence(path: str) -> dict:
    return evidence.read(path) if path.endswith(".evidence.json") else evidence.read_figure(path)


def paper_claims(paper: str) -> tuple[Claim, ...]:
    from workflow_src import registry

    return registry.paper_claims(paper)


def evidence_paths(configured: list[tuple[str, str]]) -> list[str]:
    """The evidence files (`evidence_path`) the claims of the configured
    artefacts ((paper, artefact) pairs) read."""
    papers = {paper for paper, _ in configured}
    needed = {
        (paper, artefact)
        for paper in papers
        for claim in paper_claims(paper)
        for c in claim.checks
        for part in c.parts
        for artefact in (part.artefact, part.compared_artefact)
    }
    return sorted(evidence_path(p, a) for p, a in needed if (p, a) in set(configured))


def decide_in_run(paper: str, check: Check | Gap, found: dict[str, dict]) -> Outcome:
    """A check's outcome on the evidence of its artefact (a gap: of each part's; a check across
    two artefacts: its compared cell from `than_artefact`'s) that this run built (`found`: evidence
    path -> its cells)."""
    if isinstance(check, Gap):
        return gap_outcome(check, [decide_in_run(paper, part, found) for part in check.parts])
    for artefact in dict.fromkeys((check.artefact, check.compared_artefact)):
        path = evidence_path(paper, artefact)
        if path not in found:
            return decide(check, None, f"{path} is not built in this run (papers.{paper}.{artefact} not configured)")
    cells = evidence.as_evidence(found[evidence_path(paper, check.artefact)])
    if check.than_artefact is not None:  # its compared cell, even where `artefact` has a row of that name
        than = evidence.as_evidence(found[evidence_path(paper, check.than_artefact)])
        compared, name = than.get(check.compared), check.compared[0]
        rows = {row: why for row, why in cells.left_out_rows.items() if row != name}
        rows |= {name: than.left_out_rows[name]} if name in than.left_out_rows else {}
        kept = {key: cell for key, cell in cells.items() if key != check.compared}
        cells = evidence.Evidence(kept, rows, cells.left_out_columns)
        cells |= {check.compared: compared} if compared is not None else {}
    return decide(check, cells, "", unit_of(paper, check), point_names(paper, check))
