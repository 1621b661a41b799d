"""The claims table: each paper's headline claims, and whether our run reproduces them.

`python -m workflow_src.report.claims --papers vmf joint --evidence results/joint/table2.evidence.json ...
 --data-notes JSON --out-prefix results/claims`

A paper module lists `CLAIMS` (`workflow_src/paper_records.py`), each a statement with one or more
`Check`s: in one column of one artefact, a row beats another row (or a threshold). A check is
decided by a test that fits its evidence (`workflow_src/score/evidence.py`), never by eye. With d the
claimed difference (ours(row) - ours(than) + margin, turned so that d > 0 is the claim; on
log values for a `factor`), and `ALPHA` = 0.05:

- BLEU, perplexity, F1, METEOR (units: test sentences or blocks of test tokens, one set per seed):
  a paired bootstrap over the units (`RESAMPLES`, the draw of sacrebleu's paired bootstrap, the
  same for both rows), nested with a draw of each row's seeds with replacement, so that both the
  test set's and the seeds' variance count; on each resample a row scores the mean over its drawn
  seeds. With one seed it is Koehn's (2004) paired bootstrap.

      p = (1 + #{resamples: d_r <= 0}) / (1 + R)

- Values (timings over repeats; per-seed numbers: convergence times, distances, accuracies):
  Welch's t on the replicates (a threshold has no variance), one-sided p from Student's t.

Reproduced if p < ALPHA; not reproduced if the opposite's p < ALPHA; inconclusive otherwise, or
with fewer than 2 replicates of a value. A `parity` check (the same within ±parity) is two
one-sided tests on the log ratio: reproduced if it is significantly inside both bounds, not
reproduced if significantly outside one. A claim is reproduced when all its checks are, not
reproduced when any is not, and inconclusive otherwise; a missing artefact or cell is inconclusive
and says why.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from pathlib import Path

import numpy as np
from scipy import stats
from sacrebleu.metrics import BLEU

from workflow_src.atomic import write_text
from workflow_src.paper_records import Check, Claim
from workflow_src.score import evidence, meteor, significance
from workflow_src.score.evidence import Cell

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
ALPHA = 0.05
RESAMPLES = significance.RESAMPLES
UNIT_KINDS = {"bleu": "test sentences", "perplexity": f"blocks of {evidence.BLOCK_TOKENS} test tokens",
              "f1": "test sentences", "meteor": "test sentences"}


@dataclasses.dataclass(frozen=True)
class Outcome:
    verdict: str
    ours: str
    reason: str


def score(kind: str, totals: np.ndarray, parameters: dict | None = None) -> np.ndarray:
    """The number a unit kind gives from summed unit statistics (R x k) -> R; METEOR (in %) with
    its cell's `parameters` (`meteor.meteor_score` of `meteor.vector_statistics`)."""
    if kind == "bleu":
        metric = BLEU()
        return np.array([metric._compute_score_from_stats(list(map(int, t))).score for t in totals])
    if kind == "perplexity":
        return np.exp(totals[:, 0] / totals[:, 1])
    if kind == "f1":
        return np.divide(2 * totals[:, 0], totals[:, 1] + totals[:, 2], out=np.zeros(len(totals)),
                         where=totals[:, 1] + totals[:, 2] > 0)
    if kind == "meteor":
        p = meteor.MeteorParameters(**{**parameters, "weights": tuple(parameters["weights"])})
        return np.array([100 * meteor.meteor_score(meteor.vector_statistics(t), p)["score"] for t in totals])
    raise ValueError(f"no unit score for kind {kind!r}")


def draw_counts(units: int, resamples: int = RESAMPLES) -> np.ndarray:
    """R x n: how often each unit is drawn on each resample (sacrebleu's draw)."""
    indices = significance.resample_indices(units, resamples) + units * np.arange(resamples)[:, None]
    return np.bincount(indices.ravel(), minlength=resamples * units).reshape(resamples, units).astype(float)


def seed_scores(cell: Cell, counts: np.ndarray) -> np.ndarray:
    """R x S: each seed's number on each resample of the units (the all-ones row: the observed)."""
    return np.stack([score(cell.kind, counts @ np.asarray(units, dtype=float), cell.parameters)
                     for units in cell.replicates], axis=1)


def resampled(cell: Cell, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """R: the mean over a draw (with replacement) of the cell's seeds, on each resample."""
    per_seed = seed_scores(cell, counts)
    draw = rng.integers(per_seed.shape[1], size=per_seed.shape)
    return np.take_along_axis(per_seed, draw, axis=1).mean(axis=1)


def observed(cell: Cell) -> float:
    if cell.kind == "value":
        return float(np.mean(cell.replicates))
    return float(seed_scores(cell, np.ones((1, len(cell.replicates[0])))).mean())


def on_scale(check: Check, values):
    """Ratios (a factor, a parity) are compared as logs, everything else as it is."""
    return np.log(values) if check.factor is not None or check.parity is not None else np.asarray(values, dtype=float)


def difference(check: Check, a, b):
    """d on the check's scale (`on_scale`), positive in the claim's direction; a parity check's is
    the log ratio itself."""
    if check.parity is not None:
        return a - b
    sign = -1 if check.lower_is_better else 1
    if check.factor is not None:
        return sign * (a - b - math.log(check.factor))
    return sign * (a - b) + check.margin


def resample_p(failures: np.ndarray) -> float:
    """p = (1 + #{resamples on which the claim fails}) / (1 + R)."""
    return float((1 + np.sum(failures)) / (1 + len(failures)))


def by_bootstrap(check: Check, a: Cell, b: Cell | None) -> tuple[float, float, float, str]:
    """(d, p of the claim, p of the opposite, method) by the nested paired bootstrap; a parity
    check returns the p of being inside, and of being outside, its bounds."""
    if b is not None and len(a.replicates[0]) != len(b.replicates[0]):
        raise ValueError(f"{check.artefact}: {check.row} and {check.compared_name} were scored on different units "
                         f"({len(a.replicates[0])} and {len(b.replicates[0])})")
    units = len(a.replicates[0])
    counts = draw_counts(units)
    rng = np.random.default_rng(2019)
    a_r = resampled(a, counts, rng)
    b_r = resampled(b, counts, rng) if b is not None else np.full(RESAMPLES, check.threshold)
    reference = observed(b) if b is not None else check.threshold
    d = float(difference(check, on_scale(check, observed(a)), on_scale(check, reference)))
    d_r = difference(check, on_scale(check, a_r), on_scale(check, b_r))
    seeds_too = ", seeds resampled too" if max(len(a.replicates), len(b.replicates) if b else 1) > 1 else ""
    method = f"paired bootstrap over the {units} {UNIT_KINDS[a.kind]}{seeds_too} ({RESAMPLES} resamples; {runs_of(a, b)})"
    if check.parity is not None:
        bound = math.log(1 + check.parity)
        return (d, max(resample_p(d_r >= bound), resample_p(d_r <= -bound)),
                min(resample_p(d_r <= bound), resample_p(d_r >= -bound)), method)
    return d, resample_p(d_r <= 0), resample_p(d_r >= 0), method


def one_sided_p(excess: float, se: float, df: float) -> float:
    """p of "the true difference exceeds 0", given the estimate `excess` with standard error `se`."""
    if se == 0:
        return 0.0 if excess > 0 else 1.0
    return float(stats.t.sf(excess / se, df))


def by_t(check: Check, a: Cell, b: Cell | None) -> tuple[float, float, float, str] | str:
    """(d, p of the claim, p of the opposite, method) by Welch's t on the replicates (on the
    check's scale), or the reason there is no spread to decide by."""
    values_a = on_scale(check, a.replicates)
    values_b = on_scale(check, b.replicates) if b is not None else None
    for cell, values in ((a, values_a), (b, values_b)):
        if values is not None and len(values) < 2:
            return f"only one run of {cell.row} ({', '.join(cell.labels)}): no spread to decide by"
    var_a = np.var(values_a, ddof=1) / len(values_a)
    var_b = np.var(values_b, ddof=1) / len(values_b) if values_b is not None else 0.0
    se = math.sqrt(var_a + var_b)
    if values_b is None:
        df, method = len(values_a) - 1, f"t-test of {runs_of(a, b)} against the threshold"
    else:
        df = (len(values_a) + len(values_b) - 2 if se == 0 else
              (var_a + var_b) ** 2 / (var_a ** 2 / (len(values_a) - 1) + var_b ** 2 / (len(values_b) - 1)))
        method = f"t-test (Welch's) over {runs_of(a, b)}"
    reference = np.mean(values_b) if values_b is not None else on_scale(check, check.threshold)
    d = float(difference(check, np.mean(values_a), reference))
    if check.parity is not None:
        bound = math.log(1 + check.parity)
        inside = max(one_sided_p(d + bound, se, df), one_sided_p(bound - d, se, df))
        outside = min(one_sided_p(d - bound, se, df), one_sided_p(-bound - d, se, df))
        return d, inside, outside, method
    return d, one_sided_p(d, se, df), one_sided_p(-d, se, df), method


def runs(cell: Cell) -> str:
    """How many runs a cell's numbers come from, in words: "3 seeds", "5 timed repeats"."""
    kind = "timed repeat" if cell.labels and cell.labels[0].startswith("repeat") else "seed"
    return f"{len(cell.replicates)} {kind}{'s' if len(cell.replicates) > 1 else ''}"


def runs_of(a: Cell, b: Cell | None) -> str:
    """The runs of a check's two cells (or its one), in words: "3 seeds each", "2 seeds and 3 seeds"."""
    if b is None:
        return runs(a)
    return f"{runs(a)} each" if runs(a) == runs(b) else f"{runs(a)} and {runs(b)}"


def describe(check: Check, value_a: float, value_b: float | None, a: Cell, b: Cell | None, d: float) -> str:
    """Our two numbers, and the difference (or ratio) the claim is about."""
    other = f"{value_b:.4g} ({check.compared_name}, {runs(b)})" if b is not None else f"{check.threshold:g}"
    if check.parity is not None or check.factor is not None:
        return f"{value_a:.4g} ({runs(a)}) against {other}: ratio {value_a / value_b:.3g}"
    return f"{value_a:.4g} ({runs(a)}) against {other}; d = {d:+.3g}"


def decide(check: Check, cells: dict | None, missing: str = "") -> Outcome:
    """A check's verdict on its artefact's evidence (None: not built, `missing` says why)."""
    if cells is None:
        return Outcome(INCONCLUSIVE, "", missing)
    a = cells.get((check.row, check.column, check.x))
    b = cells.get(check.compared) if check.compared is not None else None
    at = f" at x = {check.x:g}" if check.x is not None else ""
    for (name, column), cell in (((check.row, check.column), a), ((check.compared or (None, None))[:2], b)):
        if name is not None and cell is None:
            return Outcome(INCONCLUSIVE, "", f"{check.artefact} has no evidence for {name} in {column}{at}: its "
                                             "column or row is not configured in this run, or it was not computed "
                                             "(the artefact's note says which)")
    if b is not None and a.kind != b.kind:
        raise ValueError(f"{check.artefact}: {check.row} is {a.kind}, {check.compared_name} is {b.kind}")
    if a.kind == "value":
        result = by_t(check, a, b)
        if isinstance(result, str):
            return Outcome(INCONCLUSIVE, f"{observed(a):.4g}", result)
    else:
        result = by_bootstrap(check, a, b)
    d, p_claim, p_opposite, method = result
    shown = describe(check, observed(a), observed(b) if b is not None else None, a, b, d)
    if check.parity is not None:
        bounds = f"±{check.parity:.0%}"
        if p_claim < ALPHA:
            return Outcome(REPRODUCED, shown, f"{method}: within {bounds}, p = {p_claim:.3g}")
        if p_opposite < ALPHA:
            return Outcome(NOT_REPRODUCED, shown, f"{method}: outside {bounds}, p = {p_opposite:.3g}")
        return Outcome(INCONCLUSIVE, shown, f"{method}: neither within nor outside {bounds} at p < {ALPHA:g}")
    if p_claim < ALPHA:
        return Outcome(REPRODUCED, shown, f"{method}: p = {p_claim:.3g} < {ALPHA:g}")
    if p_opposite < ALPHA:
        return Outcome(NOT_REPRODUCED, shown, f"{method}: the opposite holds, p = {p_opposite:.3g} < {ALPHA:g}")
    return Outcome(INCONCLUSIVE, shown, f"{method}: p = {p_claim:.3g}, not below {ALPHA:g} either way")


def verdict(outcomes: list[Outcome]) -> str:
    verdicts = {o.verdict for o in outcomes}
    if verdicts == {REPRODUCED}:
        return REPRODUCED
    return NOT_REPRODUCED if NOT_REPRODUCED in verdicts else INCONCLUSIVE


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

    return tuple(getattr(registry.paper_module(paper), "CLAIMS", ()))


def evidence_paths(configured: list[tuple[str, str]]) -> list[str]:
    """The evidence files (`evidence_path`) the claims of the configured
    artefacts ((paper, artefact) pairs) read."""
    papers = {paper for paper, _ in configured}
    needed = {(paper, c.artefact) for paper in papers for claim in paper_claims(paper) for c in claim.checks}
    return sorted(evidence_path(p, a) for p, a in needed if (p, a) in set(configured))


def claim_rows(papers: list[str], found: dict[str, dict], data_notes: dict[str, str]) -> list[dict]:
    """One row per claim of `papers`, decided on `found` (evidence path -> its cells)."""
    rows = []
    for paper in papers:
        for claim in paper_claims(paper):
            outcomes = []
            for check in claim.checks:
                path = evidence_path(paper, check.artefact)
                why = f"{path} is not built in this run (papers.{paper}.{check.artefact} not configured)"
                outcomes.append(decide(check, found.get(path), why))
            rows.append({"id": f"{paper}:{claim.id}", "paper": paper, "claim": claim.statement, "measure": claim.measure,
                         "paper's numbers": claim.paper, "ours": "; ".join(o.ours for o in outcomes if o.ours),
                         "verdict": verdict(outcomes),
                         "decided by": "; ".join(dict.fromkeys(o.reason for o in outcomes)),  # a shared reason once
                         "data": data_notes.get(paper, "")})
    return rows


COLUMNS = ["id", "claim", "measure", "paper's numbers", "ours", "verdict", "decided by"]
VERDICTS = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
# a colour per verdict (background, text), in the HTML and the report
VERDICT_COLOURS = {REPRODUCED: ("#d8f0d8", "#14532d"), NOT_REPRODUCED: ("#f8d7da", "#7f1d1d"),
                   INCONCLUSIVE: ("#fff1c2", "#6b4e00")}
VERDICT_STYLE = "".join(f"td.{verdict.replace(' ', '-')}{{background:{background};color:{text};font-weight:600}}"
                        for verdict, (background, text) in VERDICT_COLOURS.items())


def tally(rows: list[dict], papers: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, cells): how many claims of each paper reached each verdict."""
    columns = ["paper", *VERDICTS, "claims"]
    cells = []
    for paper in papers:
        verdicts = [row["verdict"] for row in rows if row["paper"] == paper]
        cells.append({"paper": paper, **{v: str(verdicts.count(v)) for v in VERDICTS}, "claims": str(len(verdicts))})
    return columns, cells


def verdict_class(column: str, text: str) -> str:
    """A claims row's verdict cell, and a tally's non-zero count, in its verdict's colour."""
    verdict = text if column == "verdict" else column if text not in ("", "0") else ""
    return verdict.replace(" ", "-") if verdict in VERDICTS else ""


def main(argv: list[str] | None = None) -> None:
    from workflow_src import tables

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", nargs="+", required=True)
    parser.add_argument("--evidence", nargs="*", default=[], help="the evidence files built in this run")
    parser.add_argument("--data-notes", type=json.loads, required=True, help="JSON: paper -> its data note")
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    found = {os.path.normpath(path): read_evidence(path) for path in args.evidence if path}
    rows = claim_rows(args.papers, found, args.data_notes)
    notes = sorted(set(args.data_notes.values()))
    data_note = notes[0] if len(notes) == 1 else "per row (the CSV's data column)"
    title = "Headline claims of the papers, and whether this run reproduces them"
    footer = [f"Each claim is decided by a test that fits its evidence, at p < {ALPHA:g}: BLEU, perplexity, F1 and METEOR by "
              "a paired bootstrap over test sentences (or blocks of test tokens), each system's seeds resampled too; "
              "timings and per-seed values by a t-test (Welch's) over their timed repeats or seeds "
              "(workflow_src/report/claims.py). "
              "Inconclusive rows say what is missing or how far from significance they are."]
    tally_columns, tally_cells = tally(rows, args.papers)
    prefix = args.out_prefix  # the CSV keeps each row's own data note
    markdown = tables.to_markdown(title, data_note, COLUMNS, rows, footer,
                                  before=["Claims per verdict:", "", *tables.markdown_table(tally_columns, tally_cells), ""])
    write_text(prefix.with_suffix(".csv"), tables.to_csv(COLUMNS + ["data"], rows))
    write_text(prefix.with_suffix(".md"), markdown)
    write_text(prefix.with_suffix(".html"), tables.to_html(
        title, data_note, COLUMNS, rows, footer, cell_class=verdict_class, style=VERDICT_STYLE,
        before="<p>Claims per verdict:</p>" + tables.html_table(tally_columns, tally_cells, verdict_class)))
    print(markdown)


if __name__ == "__main__":
    main()
