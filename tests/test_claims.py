"""The claims table: each test against an independent computation, and every claim decidable
under config.yaml's seeds and columns (`workflow_src/report/claims.py`)."""

from __future__ import annotations

import csv
import dataclasses
import math

import numpy as np
import pytest
import yaml
from scipy import stats

from tests.conftest import REPO
from workflow_src import artefacts, layout, registry
from workflow_src.paper_records import Check, Claim
from workflow_src.report import claims
from workflow_src.report.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED
from workflow_src.score import evidence, meteor, significance
from workflow_src.score.evidence import Cell

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
REPEATS = 5  # timed repeats of a benchmark (the issue's minimum; the benchmarks' own count is tested there)


def values(row: str, column: str, numbers, x=None) -> Cell:
    return Cell(row, column, "value", tuple(float(v) for v in numbers), evidence.repeat_labels(len(numbers)), x)


def keyed(*cells: Cell) -> dict:
    return {c.key: c for c in cells}


def bleu_statistics(quality: float, sentences: int, seed: int, length: int = 20) -> list[list[int]]:
    """Per sentence, sacrebleu's statistics of a hypothesis of `length` tokens whose n-grams match
    with probability quality**n, drawn with fixed uniforms so that BLEU rises with quality."""
    uniforms = np.random.default_rng(seed).random((sentences, 4, length))
    out = []
    for sentence in uniforms:
        matches = [int(np.sum(sentence[n - 1, :length - n + 1] < quality ** n)) for n in range(1, 5)]
        totals = [length - n + 1 for n in range(1, 5)]
        out.append([length, length, *matches, *totals])  # sacrebleu's order: lengths, matches, totals
    return out


def meteor_sentences(quality: float, sentences: int, seed: int, words: int = 10) -> list[list[int]]:
    """Per sentence, Meteor's statistics (`meteor.statistics_vector`, one stage) of a hypothesis and
    a reference of 2 x `words` units, half of them the bin's (the function words), each matched
    with probability `quality`, drawn with fixed uniforms so that METEOR rises with quality."""
    out = []
    for uniforms in np.random.default_rng(seed).random((sentences, 2, words)):
        function, content = (int(np.sum(u < quality)) for u in uniforms)
        matches = function + content
        out.append([2 * words, 2 * words, words, words, (matches + 1) // 2, matches, content, function, content, function])
    return out


# -- each method against an independent computation ---------------------------------------------------------

def test_one_seed_bleu_is_koehns_paired_bootstrap_on_sacrebleus_draw():
    """With one seed a side, p is the share of sacrebleu's resamples on which the claim fails,
    as significance.seed_mean_bleu computes BLEU on them; the shown numbers are corpus BLEU."""
    a_stats, b_stats = bleu_statistics(0.62, 150, 1), bleu_statistics(0.6, 150, 2)
    a = Cell("a", "fr-en", "bleu", (a_stats,), ("seed 1",))
    b = Cell("b", "fr-en", "bleu", (b_stats,), ("seed 1",))
    d, p_claim, p_opposite, method = claims.by_bootstrap(Check("table1", "fr-en", "a", than="b"), a, b)
    indices = significance.resample_indices(150)
    a_r = significance.seed_mean_bleu([np.array(a_stats)], indices)
    b_r = significance.seed_mean_bleu([np.array(b_stats)], indices)
    assert p_claim == pytest.approx((1 + np.sum(a_r <= b_r)) / 1001)
    assert p_opposite == pytest.approx((1 + np.sum(a_r >= b_r)) / 1001)
    everything = np.arange(150)[None]
    assert d == pytest.approx(significance.seed_mean_bleu([np.array(a_stats)], everything)[0]
                              - significance.seed_mean_bleu([np.array(b_stats)], everything)[0])
    assert "150 test sentences" in method and "resampled" not in method


def test_seed_variance_counts_in_the_multi_seed_bootstrap():
    """Row a beats row b slightly on every seed's sentences, while the seeds themselves spread over
    several BLEU: a bootstrap of sentences alone (the seed-mean test of the tables' marks) calls it
    significant; redrawing the seeds as well does not."""
    qualities = (0.55, 0.63, 0.71, 0.6)
    spread_a = [bleu_statistics(q + 0.006, 300, 10 + i) for i, q in enumerate(qualities)]
    spread_b = [bleu_statistics(q, 300, 10 + i) for i, q in enumerate(qualities)]
    sentences_only = significance.paired_bootstrap_p([np.array(s) for s in spread_a], [np.array(s) for s in spread_b],
                                                     significance.resample_indices(300))
    assert sentences_only < 0.05
    a = Cell("a", "c", "bleu", tuple(spread_a), evidence.seed_labels(range(4)))
    b = Cell("b", "c", "bleu", tuple(spread_b), evidence.seed_labels(range(4)))
    outcome = claims.decide(Check("table1", "c", "a", than="b"), keyed(a, b))
    assert outcome.verdict == INCONCLUSIVE and "seeds resampled too" in outcome.reason and "4 seeds each" in outcome.reason


def test_meteor_bootstrap_recomputes_meteor_on_each_resampled_test_set():
    """With one seed a side, a METEOR claim's resampled scores are corpus METEOR (add_statistics,
    meteor_score) of the sentences each of sacrebleu's resamples draws, and p is the share of
    resamples on which the claim fails; the shown numbers are the bin's corpus METEOR (%)."""
    rng = np.random.default_rng(3)
    words = "the a of zebra okapi runs dog cat sat on mat".split()
    references = [list(rng.choice(words, rng.integers(3, 9))) for _ in range(30)]
    bin_words, p = {"the", "a", "dog", "cat"}, meteor.MeteorParameters(0.85, 0.2, 0.6, 0.0)

    def system(keep: float) -> list[list[str]]:
        return [[w if rng.random() < keep else "xx" for w in r] for r in references]

    hypotheses = {"a": system(0.8), "b": system(0.6)}
    cells = {name: Cell(name, "De→En", "meteor", (meteor.binned_meteor(h, references, {"bin": bin_words}, p)["bin"]["sentences"],),
                        ("seed 1",), 0.0, dataclasses.asdict(p)) for name, h in hypotheses.items()}
    sentence_stats = {name: [meteor.meteor_statistics(h, r, meteor.align(h, r), bin_words, 1) for h, r in zip(hyps, references)]
                      for name, hyps in hypotheses.items()}

    def corpus(name: str, drawn) -> float:
        total = None
        for i in drawn:
            total = meteor.add_statistics(total, sentence_stats[name][i])
        return 100 * meteor.meteor_score(total, p)["score"]

    indices = significance.resample_indices(30)
    direct = {name: np.array([corpus(name, drawn) for drawn in indices]) for name in cells}
    resampled = {name: claims.seed_scores(cell, claims.draw_counts(30))[:, 0] for name, cell in cells.items()}
    for name in cells:
        assert resampled[name] == pytest.approx(direct[name], rel=1e-12)
        assert claims.observed(cells[name]) == pytest.approx(corpus(name, range(30)), rel=1e-12)
    d, p_claim, p_opposite, method = claims.by_bootstrap(Check("figure3", "De→En", "a", than="b", x=0.0), cells["a"], cells["b"])
    assert p_claim == pytest.approx((1 + np.sum(direct["a"] <= direct["b"])) / 1001)
    assert p_opposite == pytest.approx((1 + np.sum(direct["a"] >= direct["b"])) / 1001)
    assert d == pytest.approx(corpus("a", range(30)) - corpus("b", range(30))) and "30 test sentences" in method


def test_perplexity_and_f1_numbers_from_their_units():
    blocks = [[1000 * math.log(80.0), 1000], [500 * math.log(120.0), 500]]
    cell = Cell("r", "PTB test", "perplexity", (blocks,), ("seed 1",))
    assert claims.observed(cell) == pytest.approx(math.exp((1000 * math.log(80) + 500 * math.log(120)) / 1500))
    f1 = Cell("1", "Softmax", "f1", ([[1, 2, 2], [0, 1, 0], [2, 2, 3]],), ("seed 1",))
    assert claims.observed(f1) == pytest.approx(2 * 3 / (5 + 5))


@pytest.mark.parametrize("a, b", [([10.0, 11.0, 12.5, 10.4], [9.0, 9.6, 8.8, 9.9]),
                                  ([5.0, 5.2, 4.9], [5.1, 5.0, 5.3, 4.8, 5.2])])
def test_values_are_decided_by_welchs_t(a, b):
    result = claims.by_t(Check("table3", "c", "a", than="b"), values("a", "c", a), values("b", "c", b))
    assert result[1] == pytest.approx(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
    assert result[2] == pytest.approx(stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)


def test_a_threshold_a_factor_and_a_parity():
    times = [101.0, 99.0, 100.5, 98.7, 100.2]
    below = claims.by_t(Check("t", "c", "a", threshold=102.0, lower_is_better=True), values("a", "c", times), None)
    assert below[1] == pytest.approx(stats.ttest_1samp(times, 102.0, alternative="less").pvalue)
    half = [48.0, 51.0, 49.5, 50.5, 47.9]
    factor = Check("t", "c", "a", than="b", lower_is_better=True, factor=0.6)
    assert claims.decide(factor, keyed(values("a", "c", half), values("b", "c", times))).verdict == REPRODUCED
    assert claims.decide(dataclasses.replace(factor, factor=0.4),
                         keyed(values("a", "c", half), values("b", "c", times))).verdict == NOT_REPRODUCED
    parity = Check("t", "c", "a", than="b", parity=0.1)
    same = keyed(values("a", "c", [t * 1.01 for t in times]), values("b", "c", times))
    assert claims.decide(parity, same).verdict == REPRODUCED
    assert claims.decide(parity, keyed(values("a", "c", half), values("b", "c", times))).verdict == NOT_REPRODUCED
    noisy = keyed(values("a", "c", [60.0, 140.0, 90.0, 120.0, 80.0]), values("b", "c", times))
    assert claims.decide(parity, noisy).verdict == INCONCLUSIVE


def test_one_replicate_missing_cells_and_missing_artefacts_are_inconclusive_with_the_reason():
    check = Check("table3", "Emb ours", "fr-en", than_column="Softmax ours", lower_is_better=True)
    one = keyed(Cell("fr-en", "Emb ours", "value", (3.0,), ("seed 1",)),
                Cell("fr-en", "Softmax ours", "value", (5.0,), ("seed 1",)))
    outcome = claims.decide(check, one)
    assert outcome.verdict == INCONCLUSIVE and "only one run of fr-en (seed 1)" in outcome.reason
    outcome = claims.decide(check, keyed(one[("fr-en", "Emb ours", None)]))
    assert outcome.verdict == INCONCLUSIVE and "no evidence for fr-en in Softmax ours" in outcome.reason
    outcome = claims.decide(check, None, "results/vmf/table3.evidence.json is not built")
    assert outcome == claims.Outcome(INCONCLUSIVE, "", "results/vmf/table3.evidence.json is not built")


def test_a_claim_needs_every_check():
    win, loss = claims.Outcome(REPRODUCED, "", ""), claims.Outcome(NOT_REPRODUCED, "", "")
    assert claims.verdict([win, win]) == REPRODUCED
    assert claims.verdict([win, claims.Outcome(INCONCLUSIVE, "", "")]) == INCONCLUSIVE
    assert claims.verdict([win, loss]) == NOT_REPRODUCED


def test_evidence_files_round_trip(tmp_path):
    cells = [Cell("r", "fr-en", "bleu", ([[20, 20, 10, 5, 2, 1, 20, 19, 18, 17]],), ("seed 1",)),
             values("r", "ms per batch", [1.0, 2.0]),
             Cell("NMT", "De→En", "meteor", (meteor_sentences(0.6, 3, 1),), ("seed 1",), 2.0,
                  {"alpha": 0.85, "beta": 0.2, "gamma": 0.6, "delta": 0.0, "weights": [1.0]})]
    evidence.write(tmp_path / "t.evidence.json", cells)
    assert evidence.read(tmp_path / "t.evidence.json") == {c.key: c for c in cells}
    (tmp_path / "f.csv").write_text(evidence.figure_csv(
        [{"panel": "(a)", "series": "d", "x": 1.0, "y": 0.1, "replicate": "seed 1"},
         {"panel": "(a)", "series": "d", "x": 1.0, "y": 0.2, "replicate": "seed 2"}]))
    assert evidence.read_figure(tmp_path / "f.csv")[("d", "(a)", 1.0)].replicates == (0.1, 0.2)
    (tmp_path / "bad.csv").write_text("panel,series\n")
    with pytest.raises(ValueError, match="bad.csv: columns"):
        evidence.read_figure(tmp_path / "bad.csv")


# -- every claim can be decided under config.yaml ----------------------------------------------------------

def evidence_shape(paper: str, check: Check) -> tuple[str, int]:
    """(kind, replicates) of a check's cells in a full run of config.yaml."""
    artefact = registry.artefact(paper, check.artefact)
    ctx = layout.context(CONFIG, paper, check.artefact)
    if isinstance(artefact, artefacts.ScoreTable):
        column = next(c for c in artefact.columns if c.name == check.column)
        return "bleu", len(ctx.dataset_seeds(column.dataset))
    if isinstance(artefact, artefacts.PerplexityTable):
        corpus = next(c for c in artefact.columns if check.column.startswith(f"{c.name} "))
        return "perplexity", len(ctx.dataset_seeds(corpus.base))
    if isinstance(artefact, artefacts.RareWordTable):
        return "f1", len(ctx.dataset_seeds(artefact.column.dataset))
    if isinstance(artefact, artefacts.ConvergenceTable):
        column = next(c for c in artefact.columns if c.name == check.row)
        return "value", len(ctx.dataset_seeds(column.dataset))
    if isinstance(artefact, artefacts.NeighbourTable):
        return "value", len(ctx.dataset_seeds(artefact.column.dataset))
    if isinstance(artefact, (artefacts.ParameterTable, artefacts.SamplingTable)):
        return "value", REPEATS
    panel = next(p for p in artefact.panels if p.title == check.column)
    if isinstance(panel, artefacts.Throughput):
        return "value", REPEATS
    if isinstance(panel, artefacts.SubspaceSweep):
        return "value", len(ctx.dataset_seeds(panel.corpus.base))
    if isinstance(panel, artefacts.MeteorByFrequency):
        return "meteor", len(ctx.dataset_seeds(panel.column.dataset))
    raise AssertionError(f"{paper} {check.artefact}: no evidence shape for {type(panel).__name__}")


def boundary(check: Check, reference: float) -> float:
    """The value of the claimed row at which the claim is exactly undecided."""
    if check.threshold is not None:
        return check.threshold
    if check.parity is not None:
        return reference * (1 + check.parity)
    if check.factor is not None:
        return reference * check.factor
    return reference - (-1 if check.lower_is_better else 1) * check.margin


def value_cells(check: Check, replicates: int, case: str) -> tuple[Cell, Cell | None]:
    """Replicates around 100 (a 2% spread); the claimed row clearly beyond its boundary (effect),
    clearly short of it (opposite), or at it with the same noise (noise)."""
    noise = 1 + 0.02 * np.random.default_rng(7).standard_normal(replicates)
    reference = 100.0
    base = boundary(check, reference)
    better = -1 if check.lower_is_better else 1
    if check.parity is not None:
        centre = {"effect": reference, "opposite": reference * (1 + check.parity) ** 2, "noise": base}[case]
    else:
        centre = {"effect": base * (1 + better * 0.3), "opposite": base * (1 - better * 0.3), "noise": base}[case]
    a = values(check.row, check.column, centre * noise, check.x)
    if check.compared is None:
        return a, None
    row, column, x = check.compared
    return a, values(row, column, reference * noise[::-1] if case != "noise" else reference * noise, x)


def meteor_parameters(paper: str, check: Check) -> dict | None:
    """The MeteorParameters (as a dict) of a METEOR panel's target language; None elsewhere."""
    artefact = registry.artefact(paper, check.artefact)
    panel = next((p for p in getattr(artefact, "panels", ()) if p.title == check.column), None)
    if not isinstance(panel, artefacts.MeteorByFrequency):
        return None
    return dataclasses.asdict(meteor.MeteorParameters(*panel.parameters[panel.column.pair.split("-")[1]]))


def unit_cells(check: Check, kind: str, replicates: int, case: str, parameters: dict | None = None) -> tuple[Cell, Cell | None]:
    """Per-seed units (200 sentences, or 60 blocks of 1,000 tokens) of a clear effect, the
    opposite, or none (the claimed row at its boundary); a METEOR cell scores with `parameters`."""
    better = -1 if check.lower_is_better else 1
    seeds = evidence.seed_labels(range(1, replicates + 1))

    def cell(row, column, level, offset):
        if kind == "bleu":
            units = [bleu_statistics(level, 200, offset + s) for s in range(replicates)]
        elif kind == "meteor":
            units = [meteor_sentences(level, 200, offset + s) for s in range(replicates)]
        elif kind == "perplexity":
            rng = np.random.default_rng(offset)
            units = [[[1000 * (math.log(level) + 0.3 * rng.standard_normal()), 1000] for _ in range(60)]
                     for _ in range(replicates)]
        else:
            rng = np.random.default_rng(offset)
            units = []
            for _ in range(replicates):
                references = rng.integers(1, 4, 200)
                units.append([[int(rng.binomial(r, level)), int(r), int(r)] for r in references])
        return Cell(row, column, kind, tuple(units), seeds, check.x, parameters)

    if kind in ("bleu", "meteor"):  # quality of matching n-grams (or units); BLEU and METEOR rise with it
        effect, opposite = 0.75 if better > 0 else 0.5, 0.5 if better > 0 else 0.75
        levels = {"effect": effect, "opposite": opposite}
        reference = 0.62
    elif kind == "perplexity":
        reference = check.threshold or 100.0
        levels = {"effect": reference * (0.8 if better < 0 else 1.25), "opposite": reference * (1.25 if better < 0 else 0.8)}
    else:
        reference = 0.4
        levels = {"effect": 0.6 if better > 0 else 0.2, "opposite": 0.2 if better > 0 else 0.6}
    compared = None if check.compared is None else cell(check.compared[0], check.compared[1], reference, 1000)
    if case != "noise":
        return cell(check.row, check.column, levels[case], 0), compared
    if check.compared is None:  # a perplexity threshold: the same blocks, exactly at it
        return cell(check.row, check.column, check.threshold, 0), None
    if not check.margin:  # the compared row's own units: no difference at all
        return Cell(check.row, check.column, kind, compared.replicates, seeds, check.x, parameters), compared
    low, high = 0.3, 0.9  # BLEU within a margin: the quality whose BLEU sits at the boundary
    for _ in range(30):
        middle = (low + high) / 2
        d = claims.difference(check, claims.observed(cell(check.row, check.column, middle, 0)), claims.observed(compared))
        low, high = (middle, high) if d < 0 else (low, middle)
    return cell(check.row, check.column, (low + high) / 2, 0), compared


def made_to_show(paper: str, check: Check, case: str) -> dict:
    kind, replicates = evidence_shape(paper, check)
    a, b = (value_cells(check, replicates, case) if kind == "value" else
            unit_cells(check, kind, replicates, case, meteor_parameters(paper, check)))
    return keyed(a, *([b] if b is not None else []))


EVERY_CLAIM = [(paper, claim) for paper in registry.PAPERS for claim in claims.paper_claims(paper)]


@pytest.mark.parametrize("paper, claim", EVERY_CLAIM, ids=[f"{p}:{c.id}" for p, c in EVERY_CLAIM])
def test_every_claim_can_be_decided_under_config_yaml(paper: str, claim: Claim):
    """Evidence shaped as a full run of config.yaml makes it (its seeds per artefact and column,
    5 timed repeats): the claimed effect shown clearly is reproduced, the opposite is not, and no
    effect (the claimed row at the claim's boundary) is inconclusive."""
    for case, expected in (("effect", REPRODUCED), ("opposite", NOT_REPRODUCED), ("noise", INCONCLUSIVE)):
        outcomes = [claims.decide(check, made_to_show(paper, check, case)) for check in claim.checks]
        reasons = "; ".join(o.reason for o in outcomes)
        if case == "opposite":  # one failed check is enough
            assert all(o.verdict == NOT_REPRODUCED for o in outcomes), f"{case}: {reasons}"
        assert claims.verdict(outcomes) == expected, f"{case}: {reasons}"


# -- the claims of the papers ----------------------------------------------------------------------------

def artefact_keys(paper: str, check: Check) -> tuple[set, set]:
    """(rows, columns) a check may name in its artefact."""
    artefact = registry.artefact(paper, check.artefact)
    if isinstance(artefact, artefacts.Figure):
        panels = {p.title for p in artefact.panels}
        series = {s.name for p in artefact.panels for s in getattr(p, "systems", ())} | {"d(Lᵀ, W)"}
        return series, panels
    if isinstance(artefact, artefacts.ConvergenceTable):
        return {c.name for c in artefact.columns}, {f"{s.name} ours" for s in artefact.systems}
    if isinstance(artefact, artefacts.RareWordTable):
        labels = {"0 (unseen)"} | {analysis_bin_label(*b) for b in artefact.bins}
        return labels, {s.name for s in artefact.systems}
    if isinstance(artefact, artefacts.NeighbourTable):
        return set(artefact.paper), {s.name for s in artefact.systems}
    if isinstance(artefact, artefacts.ParameterTable):
        return {r.experiment for r in artefact.rows}, {"ms per batch"}
    if isinstance(artefact, artefacts.SamplingTable):
        return {r.experiment for r in artefact.rows}, {f"{share:.0%}" for share in artefact.shares}
    if isinstance(artefact, artefacts.PerplexityTable):
        return {r.experiment for r in artefact.rows}, {f"{c.name} {split}" for c in artefact.columns for split in ("valid", "test")}
    return {r.experiment for r in artefact.rows}, {c.name for c in artefact.columns}


def analysis_bin_label(low, high):
    from workflow_src.score.rare_words import bin_label

    return bin_label(low, high)


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_each_paper_states_seven_claims_on_cells_its_artefacts_have(paper):
    stated = claims.paper_claims(paper)
    assert len(stated) >= 7 and len({c.id for c in stated}) == len(stated)
    for claim in stated:
        assert claim.statement and claim.measure and claim.paper and claim.checks, f"{paper} {claim.id}"
        for check in claim.checks:
            rows, columns = artefact_keys(paper, check)
            assert check.row in rows and check.column in columns, f"{paper} {claim.id}: {check}"
            if check.compared is not None:
                assert check.compared[0] in rows and check.compared[1] in columns, f"{paper} {claim.id}: {check}"


def test_the_tool_writes_every_claim_with_its_data_note(tmp_path):
    out = tmp_path / "results" / "claims"
    claims.main(["--papers", "tying", "joint", "--evidence", "", "--data-notes", '{"tying": "demo", "joint": "demo"}',
                 "--out-prefix", str(out)])
    with out.with_suffix(".csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(claims.paper_claims("tying")) + len(claims.paper_claims("joint"))
    assert {r["verdict"] for r in rows} == {INCONCLUSIVE} and {r["data"] for r in rows} == {"demo"}
    assert "not built in this run" in rows[0]["decided by"]


@pytest.mark.parametrize("configfile", ["config.yaml", "config.demo.yaml"])
def test_claims_and_ledgers_are_in_the_dag_of_all(configfile, tmp_path, full_config_outputs):
    from tests.test_workflow import planned_outputs

    config = yaml.safe_load((REPO / configfile).read_text())
    planned = full_config_outputs if configfile == "config.yaml" else planned_outputs(tmp_path, REPO / configfile)
    needed = claims.evidence_paths(layout.configured_artefacts(config))
    assert "results/claims.csv" in planned and needed and set(needed) <= planned
    assert {f"results/{paper}/deviations.md" for paper in config["papers"]} <= planned
