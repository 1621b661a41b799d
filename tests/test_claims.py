"""The claims table: each test against an independent computation, the decision rule over a
claim's checks (Holm, the pooled test, power), every claim quoting its paper and decidable under
config.yaml's seeds and columns (`workflow_src/report/claims.py`)."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from tests.conftest import REPO
from workflow_src import artefacts, layout, registry
from workflow_src.paper_records import Check, Claim, Gap
from workflow_src.report import claims, claims_page
from workflow_src.report.claims import INCONCLUSIVE, NOT_COMPARABLE, NOT_DECIDABLE, NOT_REPRODUCED, REPRODUCED
from workflow_src.score import evidence, inference, meteor, significance
from workflow_src.score.evidence import Cell

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
REPEATS = 5  # timed repeats of a benchmark, the fewest it allows (workflow_src/plan/benchmark.py, tested there)


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
        matches = [int(np.sum(sentence[n - 1, : length - n + 1] < quality**n)) for n in range(1, 5)]
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
        out.append(
            [2 * words, 2 * words, words, words, (matches + 1) // 2, matches, content, function, content, function]
        )
    return out


# -- each method against an independent computation ---------------------------------------------------------


def test_one_seed_bleu_is_koehns_paired_bootstrap_on_sacrebleus_draw():
    """With one seed a side, p is the share of sacrebleu's resamples on which the claim fails,
    as significance.seed_mean_bleu computes BLEU on them; the shown numbers are corpus BLEU."""
    a_stats, b_stats = bleu_statistics(0.62, 150, 1), bleu_statistics(0.6, 150, 2)
    a = Cell("a", "fr-en", "bleu", (a_stats,), ("seed 1",))
    b = Cell("b", "fr-en", "bleu", (b_stats,), ("seed 1",))
    test = inference.by_bootstrap(Check("table1", "fr-en", "a", than="b"), a, b)
    d, p_claim, p_opposite, method = test.d, test.p_claim, test.p_opposite, test.method
    indices = significance.resample_indices(150)
    a_r = significance.seed_mean_bleu([np.array(a_stats)], indices)
    b_r = significance.seed_mean_bleu([np.array(b_stats)], indices)
    assert p_claim == pytest.approx((1 + np.sum(a_r <= b_r)) / 1001)
    assert p_opposite == pytest.approx((1 + np.sum(a_r >= b_r)) / 1001)
    everything = np.arange(150)[None]
    assert d == pytest.approx(
        significance.seed_mean_bleu([np.array(a_stats)], everything)[0]
        - significance.seed_mean_bleu([np.array(b_stats)], everything)[0]
    )
    assert "150 test sentences" in method and "resampled" not in method
    # one seed: all of d's variance is the test set's, and the seeds' is not measured
    assert test.spread.per_run is None and test.spread.fixed == pytest.approx(np.var(a_r - b_r, ddof=1))


def test_seed_variance_counts_in_the_multi_seed_bootstrap():
    """Row a beats row b slightly on every seed's sentences, while the seeds themselves spread over
    several BLEU: a bootstrap of sentences alone (the seed-mean test of the tables' marks) calls it
    significant; redrawing the seeds as well does not."""
    qualities = (0.55, 0.63, 0.71, 0.6)
    spread_a = [bleu_statistics(q + 0.006, 300, 10 + i) for i, q in enumerate(qualities)]
    spread_b = [bleu_statistics(q, 300, 10 + i) for i, q in enumerate(qualities)]
    sentences_only = significance.paired_bootstrap_p(
        [np.array(s) for s in spread_a], [np.array(s) for s in spread_b], significance.resample_indices(300)
    )
    assert sentences_only < 0.05
    a = Cell("a", "c", "bleu", tuple(spread_a), evidence.seed_labels(range(4)))
    b = Cell("b", "c", "bleu", tuple(spread_b), evidence.seed_labels(range(4)))
    outcome = claims.decide(Check("table1", "c", "a", than="b"), keyed(a, b))
    assert (
        outcome.verdict == INCONCLUSIVE and "seeds resampled too" in outcome.reason and "4 seeds each" in outcome.reason
    )


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
    cells = {
        name: Cell(
            name,
            "De→En",
            "meteor",
            (meteor.binned_meteor(h, references, {"bin": bin_words}, p)["bin"]["sentences"],),
            ("seed 1",),
            0.0,
            dataclasses.asdict(p),
        )
        for name, h in hypotheses.items()
    }
    sentence_stats = {
        name: [meteor.meteor_statistics(h, r, meteor.align(h, r), bin_words, 1) for h, r in zip(hyps, references)]
        for name, hyps in hypotheses.items()
    }

    def corpus(name: str, drawn) -> float:
        total = None
        for i in drawn:
            total = meteor.add_statistics(total, sentence_stats[name][i])
        return 100 * meteor.meteor_score(total, p)["score"]

    indices = significance.resample_indices(30)
    direct = {name: np.array([corpus(name, drawn) for drawn in indices]) for name in cells}
    resampled = {name: inference.seed_scores(cell, inference.draw_counts(30))[:, 0] for name, cell in cells.items()}
    for name in cells:
        assert resampled[name] == pytest.approx(direct[name], rel=1e-12)
        assert inference.observed(cells[name]) == pytest.approx(corpus(name, range(30)), rel=1e-12)
    test = inference.by_bootstrap(Check("figure3", "De→En", "a", than="b", x=0.0), cells["a"], cells["b"])
    d, p_claim, p_opposite, method = test.d, test.p_claim, test.p_opposite, test.method
    assert p_claim == pytest.approx((1 + np.sum(direct["a"] <= direct["b"])) / 1001)
    assert p_opposite == pytest.approx((1 + np.sum(direct["a"] >= direct["b"])) / 1001)
    assert d == pytest.approx(corpus("a", range(30)) - corpus("b", range(30))) and "30 test sentences" in method


def test_perplexity_and_f1_numbers_from_their_units():
    blocks = [[1000 * math.log(80.0), 1000], [500 * math.log(120.0), 500]]
    cell = Cell("r", "PTB test", "perplexity", (blocks,), ("seed 1",))
    assert inference.observed(cell) == pytest.approx(math.exp((1000 * math.log(80) + 500 * math.log(120)) / 1500))
    f1 = Cell("1", "Softmax", "f1", ([[1, 2, 2], [0, 1, 0], [2, 2, 3]],), ("seed 1",))
    assert inference.observed(f1) == pytest.approx(2 * 3 / (5 + 5))


@pytest.mark.parametrize(
    "a, b", [([10.0, 11.0, 12.5, 10.4], [9.0, 9.6, 8.8, 9.9]), ([5.0, 5.2, 4.9], [5.1, 5.0, 5.3, 4.8, 5.2])]
)
def test_values_are_decided_by_welchs_t(a, b):
    result = inference.by_t(Check("table3", "c", "a", than="b"), values("a", "c", a), values("b", "c", b))
    assert result.p_claim == pytest.approx(stats.ttest_ind(a, b, equal_var=False, alternative="greater").pvalue)
    assert result.p_opposite == pytest.approx(stats.ttest_ind(a, b, equal_var=False, alternative="less").pvalue)


def test_a_threshold_a_factor_and_a_parity():
    times = [101.0, 99.0, 100.5, 98.7, 100.2]
    below = inference.by_t(Check("t", "c", "a", threshold=102.0, lower_is_better=True), values("a", "c", times), None)
    assert below.p_claim == pytest.approx(stats.ttest_1samp(times, 102.0, alternative="less").pvalue)
    half = [48.0, 51.0, 49.5, 50.5, 47.9]
    factor = Check("t", "c", "a", than="b", lower_is_better=True, factor=0.6)
    assert claims.decide(factor, keyed(values("a", "c", half), values("b", "c", times))).verdict == REPRODUCED
    assert (
        claims.decide(
            dataclasses.replace(factor, factor=0.4), keyed(values("a", "c", half), values("b", "c", times))
        ).verdict
        == NOT_REPRODUCED
    )
    parity = Check("t", "c", "a", than="b", parity=0.1)
    same = keyed(values("a", "c", [t * 1.01 for t in times]), values("b", "c", times))
    assert claims.decide(parity, same).verdict == REPRODUCED
    assert claims.decide(parity, keyed(values("a", "c", half), values("b", "c", times))).verdict == NOT_REPRODUCED
    noisy = keyed(values("a", "c", [60.0, 140.0, 90.0, 120.0, 80.0]), values("b", "c", times))
    assert claims.decide(parity, noisy).verdict == INCONCLUSIVE


def test_a_ratio_with_a_score_of_0_is_not_decided_and_counts_against_both_sides():
    """A model at 0 BLEU has no ratio to another: the check is not decided and says why (it had
    raised ZeroDivisionError). Cells whose BLEU is 0 on some resamples (one sentence matches
    anything) give NaN log ratios there, counted against the claim and its opposite alike."""
    parity = Check("table3", "De→En", "a", than="b", parity=0.06)
    learned = Cell("a", "De→En", "bleu", (bleu_statistics(0.6, 30, 1),), ("seed 1",))
    nothing = Cell("b", "De→En", "bleu", (bleu_statistics(0.0, 30, 2),), ("seed 1",))
    outcome = claims.decide(parity, keyed(learned, nothing), unit="BLEU")
    assert outcome.verdict == NOT_DECIDABLE and outcome.test is None
    assert outcome.reason == "a ratio needs both numbers above 0, and b scored 0 BLEU"
    assert outcome.ours.endswith("(b, 1 seed): no ratio")

    def one_matching_sentence(row: str, seed: int) -> Cell:
        return Cell(
            row, "De→En", "bleu", (bleu_statistics(0.9, 1, seed) + bleu_statistics(0.0, 29, seed),), ("seed 1",)
        )

    a, b = one_matching_sentence("a", 3), one_matching_sentence("b", 4)
    with np.errstate(all="raise"):
        test = inference.by_bootstrap(dataclasses.replace(parity, parity=0.5), a, b)
    no_ratio = np.isnan(test.resampled)
    assert 0.2 < no_ratio.mean() < 0.5  # the resamples that leave the one sentence out: (29/30)^30
    assert min(test.p_claim, test.p_opposite) >= (1 + no_ratio.sum()) / (1 + len(no_ratio))
    assert test.spread.se() is None
    claim = Claim("C1", "a as b", "a as b", "Table 3", "BLEU ratio", "18.1 and 18.1", (parity,))
    outcome = dataclasses.replace(claims.decide(parity, keyed(a, b)), test=test)
    assert claims.claim_power(claim, [outcome], [0.01], None).startswith("unknown: a ratio with a score of 0")


def test_counts_are_decided_exactly_with_the_papers_own_counts_as_power():
    """A parameter count has no spread: the inequality decides, on its bar nothing does, and
    the power says whether the paper's own counts meet the claim (vMF C12's do not: 1.9%)."""
    check = Check("table4", artefacts.LAYER_PARAMETERS, "a", than="b", lower_is_better=True, factor=0.01)
    verdicts = [
        claims.decide(check, keyed(counted("a", check.column, n), counted("b", check.column, 1e6)), unit="parameters")
        for n in (9_999, 10_001, 10_000)
    ]
    assert [o.verdict for o in verdicts] == [REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE]
    assert verdicts[0].ours == "9,999 parameters (a, counted) against 1,000,000 parameters (b, counted): ratio 0.01"
    assert "exact counts, no spread: the claim holds" in verdicts[0].reason
    below = Check("table4", artefacts.LAYER_PARAMETERS, "a", than="b", lower_is_better=True)
    cells = keyed(counted("a", below.column, 206_679), counted("b", below.column, 214_999))
    assert claims.decide(below, cells, unit="parameters").ours.endswith("(b, counted); d = +8,320")
    claim = next(c for c in claims.paper_claims("vmf") if c.id == "C12")
    assert claims.paper_numbers("vmf", claim.checks[0]) == (460_800, 24_576_000)
    gaps = [claims.paper_gap("vmf", claim.checks[0])]
    assert gaps[0] == pytest.approx(math.log(0.01) - math.log(460_800 / 24_576_000))
    for outcome, verdict in zip(verdicts[:2], (REPRODUCED, NOT_REPRODUCED)):
        decision = claims.decide_claim(claim, [outcome], gaps)
        assert decision.verdict == verdict
        assert decision.power == "exact counts, no spread: the paper's own counts fail it"
    with pytest.raises(ValueError, match="a count has one replicate, not 2"):
        Cell("a", check.column, "count", (1.0, 2.0), ("counted", "counted"))


def test_runs_still_learning_decide_nothing():
    """A cell whose runs had not plateaued (`Cell.unsettled`, written by the table) is not decided
    on, however clear the difference: it ranks by the training budget, not by the method."""
    check = Check("table1", "fr-en", "a", than="b")
    a, b = (
        Cell(row, "fr-en", "bleu", (bleu_statistics(q, 100, i),), ("seed 1",))
        for i, (row, q) in enumerate((("a", 0.8), ("b", 0.5)))
    )
    assert claims.decide(check, keyed(a, b)).verdict == REPRODUCED
    moving = dataclasses.replace(
        b, unsettled="not plateaued when its training stopped (seed 1: development BLEU 60.0 → 67.0 at epoch 6)"
    )
    outcome = claims.decide(check, keyed(a, moving), unit="BLEU")
    assert outcome.verdict == NOT_DECIDABLE and outcome.test is None
    assert "b not plateaued when its training stopped (seed 1" in outcome.reason and "BLEU" in outcome.ours
    assert outcome.learning == ("b " + moving.unsettled,)


def test_a_claims_reasons_name_each_missing_cell_and_each_learning_run_once():
    """The page's "decided by" gathers the cells one artefact lacks for one reason (a gap's parts
    included) into one reason, each name and column once: a row or a column the config left out of
    the run under its own reason, the others under the generic one; and the runs still learning
    into another."""
    a_fr, a_de, c_de = (
        Check("table1", column, row, than="b") for row, column in (("a", "fr-en"), ("a", "de-en"), ("c", "de-en"))
    )
    missing = [claims.decide(check, {}) for check in (a_fr, a_de, c_de)] + [claims.decide(Gap(a_fr, a_de), {})]
    assert missing[-1].verdict == NOT_DECIDABLE and len(missing[-1].undecided) == 2
    learning = [
        claims.Outcome(NOT_DECIDABLE, "", "…", learning=("a not plateaued (seed 1)",)),
        claims.Outcome(NOT_DECIDABLE, "", "…", learning=("a not plateaued (seed 1)", "b not plateaued (seed 2)")),
    ]
    tested = claims.Outcome(REPRODUCED, "", "t-test: p = 0.01 < 0.05")
    left_out = evidence.Evidence(
        left_out_rows={"d": "not run here (config papers.vmf.table1.rows leaves them out)"},
        left_out_columns={"en-fr": "pair en-fr not configured for iwslt16"},
    )
    d_de, e_fr, e_fr_size = (
        claims.decide(Check("table1", column, row, than="b"), left_out)
        for row, column in (("d", "de-en"), ("e", "en-fr"), ("e", "en-fr |Θ|"))
    )
    assert claims_page.grouped([*learning, *missing, d_de, e_fr, e_fr_size, tested, tested]) == [
        f"{claims.STILL_LEARNING}: a not plateaued (seed 1); b not plateaued (seed 2)",
        f"table1 has no evidence for a (fr-en, de-en), c (de-en): {claims.NO_EVIDENCE}",
        "table1 has no evidence for d (de-en): not run here (config papers.vmf.table1.rows leaves them out)",
        "table1 has no evidence for e (en-fr, en-fr |Θ|): pair en-fr not configured for iwslt16",
        "t-test: p = 0.01 < 0.05",
    ]
    assert left_out.why_left_out("e", "en-frx") is None  # a column named alike is another column


def test_one_replicate_is_inconclusive_and_missing_evidence_not_decidable_with_the_reason():
    check = Check("table3", "Emb ours", "fr-en", than_column="Softmax ours", lower_is_better=True)
    one = keyed(
        Cell("fr-en", "Emb ours", "value", (3.0,), ("seed 1",)),
        Cell("fr-en", "Softmax ours", "value", (5.0,), ("seed 1",)),
    )
    outcome = claims.decide(check, one, unit="s of training")
    assert outcome.verdict == INCONCLUSIVE and "only one run of fr-en (seed 1)" in outcome.reason
    assert outcome.ours == "3 s of training (fr-en, Emb ours)"  # a value with its unit and cell, never bare
    outcome = claims.decide(check, keyed(one[("fr-en", "Emb ours", None)]))
    assert outcome.verdict == NOT_DECIDABLE and "no evidence for fr-en in Softmax ours" in outcome.reason
    outcome = claims.decide(check, None, "results/vmf/table3.evidence.json is not built")
    assert outcome == claims.Outcome(NOT_DECIDABLE, "", "results/vmf/table3.evidence.json is not built")


def test_evidence_files_round_trip(tmp_path):
    cells = [
        Cell("r", "fr-en", "bleu", ([[20, 20, 10, 5, 2, 1, 20, 19, 18, 17]],), ("seed 1",)),
        values("r", "ms per batch", [1.0, 2.0]),
        counted("r", artefacts.LAYER_PARAMETERS, 460_900),
        Cell(
            "NMT",
            "De→En",
            "meteor",
            (meteor_sentences(0.6, 3, 1),),
            ("seed 1",),
            2.0,
            {"alpha": 0.85, "beta": 0.2, "gamma": 0.6, "delta": 0.0, "weights": [1.0]},
        ),
    ]
    evidence.write(tmp_path / "t.evidence.json", cells)
    assert evidence.read(tmp_path / "t.evidence.json") == {c.key: c for c in cells}
    written = evidence.read(tmp_path / "t.evidence.json")
    assert written.left_out_rows == written.left_out_columns == {}  # and the file names none
    assert "left_out" not in (tmp_path / "t.evidence.json").read_text()
    evidence.write(tmp_path / "l.evidence.json", cells[:1], {"q": "not run here (config ...)"}, {"c": "why"})
    written = evidence.read(tmp_path / "l.evidence.json")
    assert written.left_out_rows == {"q": "not run here (config ...)"} and written.left_out_columns == {"c": "why"}
    (tmp_path / "f.csv").write_text(
        evidence.figure_csv(
            [
                {"panel": "(a)", "series": "d", "x": 1.0, "y": 0.1, "replicate": "seed 1"},
                {"panel": "(a)", "series": "d", "x": 1.0, "y": 0.2, "replicate": "seed 2"},
            ]
        )
    )
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
        column = next((c for c in artefact.columns if c.name == check.column), None)
        if column is None:  # a row's |Θ|
            return "count", 1
        return "mean" if column.metric == "meteor" else "bleu", len(ctx.dataset_seeds(column.dataset))
    if isinstance(artefact, artefacts.PerplexityTable):
        corpus = next(c for c in artefact.columns if check.column.startswith(f"{c.name} "))
        return "perplexity", len(ctx.dataset_seeds(corpus.base))
    if isinstance(artefact, artefacts.RareWordTable):
        return "f1", len(ctx.dataset_seeds(artefact.column.dataset))
    if isinstance(artefact, artefacts.NextWordTable):
        return "probability", len(ctx.dataset_seeds(artefact.corpus.base))
    if isinstance(artefact, artefacts.ConvergenceTable):
        column = next(c for c in artefact.columns if c.name == check.row)
        return "value", len(ctx.dataset_seeds(column.dataset))
    if isinstance(artefact, artefacts.NeighbourTable):
        return "value", len(ctx.dataset_seeds(artefact.column.dataset))
    if isinstance(artefact, artefacts.ParameterTable) and check.column == artefacts.LAYER_PARAMETERS:
        return "count", 1
    if isinstance(artefact, (artefacts.ParameterTable, artefacts.SamplingTable)):
        return "value", REPEATS
    panel = next(p for p in artefact.panels if p.title == check.column)
    if isinstance(panel, artefacts.Throughput):
        return "value", REPEATS
    if isinstance(panel, artefacts.SubspaceSweep):
        return "value", len(ctx.dataset_seeds(panel.corpus.base))
    if isinstance(panel, artefacts.MeteorByFrequency):
        return "meteor", len(ctx.dataset_seeds(panel.column.dataset))
    if isinstance(panel, artefacts.ScoreAgainst):
        return "bleu", len(ctx.dataset_seeds(panel.column.dataset))
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


def counted(row: str, column: str, number: float) -> Cell:
    return Cell(row, column, "count", (float(number),), evidence.COUNTED)


def count_cells(check: Check, case: str) -> tuple[Cell, Cell | None]:
    """Exact counts: the claimed row a tenth past its boundary (effect), a tenth short of it
    (opposite), or on it (noise)."""
    reference = 1_000_000.0
    better = -1 if check.lower_is_better else 1
    step = {"effect": 1 + better * 0.1, "opposite": 1 - better * 0.1, "noise": 1.0}[case]
    compared = None if check.compared is None else counted(check.compared[0], check.compared[1], reference)
    return counted(check.row, check.column, boundary(check, reference) * step), compared


def meteor_parameters(paper: str, check: Check) -> dict | None:
    """The MeteorParameters (as a dict) of a METEOR panel's target language; None elsewhere."""
    artefact = registry.artefact(paper, check.artefact)
    panel = next((p for p in getattr(artefact, "panels", ()) if p.title == check.column), None)
    if not isinstance(panel, artefacts.MeteorByFrequency):
        return None
    return dataclasses.asdict(meteor.MeteorParameters(*panel.parameters[panel.column.pair.split("-")[1]]))


def unit_cells(
    check: Check, kind: str, replicates: int, case: str, parameters: dict | None = None
) -> tuple[Cell, Cell | None]:
    """Per-seed units (200 sentences, or 60 blocks of 1,000 tokens) of a clear effect, the
    opposite, or none (the claimed row at its boundary); a METEOR cell scores with `parameters`."""
    better = -1 if check.lower_is_better else 1
    seeds = evidence.seed_labels(range(1, replicates + 1))

    def cell(row, column, level, offset, x=check.x):
        if kind == "bleu":
            units = [bleu_statistics(level, 200, offset + s) for s in range(replicates)]
        elif kind == "mean":  # sentence scores in %, around 100 x level
            rng = np.random.default_rng(offset)
            units = [
                [[float(100 * np.clip(level + 0.15 * rng.standard_normal(), 0, 1)), 1] for _ in range(200)]
                for _ in range(replicates)
            ]
        elif kind == "meteor":
            units = [meteor_sentences(level, 200, offset + s) for s in range(replicates)]
        elif kind == "perplexity":
            rng = np.random.default_rng(offset)
            units = [
                [[1000 * (math.log(level) + 0.3 * rng.standard_normal()), 1000] for _ in range(60)]
                for _ in range(replicates)
            ]
        elif kind == "probability":  # a word's probability summed over blocks of 1,000 positions
            rng = np.random.default_rng(offset)
            units = [
                [[1000 * float(np.clip(level + 0.05 * rng.standard_normal(), 0, 1)), 1000] for _ in range(60)]
                for _ in range(replicates)
            ]
        else:
            rng = np.random.default_rng(offset)
            units = []
            for _ in range(replicates):
                references = rng.integers(1, 4, 200)
                units.append([[int(rng.binomial(r, level)), int(r), int(r)] for r in references])
        return Cell(row, column, kind, tuple(units), seeds, x, parameters)

    if kind in ("bleu", "meteor"):  # quality of matching n-grams (or units); BLEU and METEOR rise with it
        effect, opposite = 0.75 if better > 0 else 0.5, 0.5 if better > 0 else 0.75
        levels = {"effect": effect, "opposite": opposite}
        reference = 0.62
    elif kind == "perplexity":
        reference = check.threshold or 100.0
        levels = {
            "effect": reference * (0.8 if better < 0 else 1.25),
            "opposite": reference * (1.25 if better < 0 else 0.8),
        }
    else:  # f1, mean, probability
        reference = 0.4
        levels = {"effect": 0.6 if better > 0 else 0.2, "opposite": 0.2 if better > 0 else 0.6}
    compared = None if check.compared is None else cell(*check.compared[:2], reference, 1000, check.compared[2])
    # the compared row's own units, no difference at all: a parity's clear effect, or no effect of another check
    if compared is not None and not check.margin and case == ("effect" if check.parity is not None else "noise"):
        return Cell(check.row, check.column, kind, compared.replicates, seeds, check.x, parameters), compared
    if case != "noise":
        return cell(check.row, check.column, levels[case], 0), compared
    if check.compared is None:  # a perplexity threshold: the same blocks, exactly at it
        return cell(check.row, check.column, check.threshold, 0), None
    # the quality whose score sits at the boundary: BLEU at a margin, or METEOR above the other's by the parity

    def past_the_boundary(level: float) -> float:  # rises with level
        a, b = inference.observed(cell(check.row, check.column, level, 0)), inference.observed(compared)
        return (
            math.log(a / b) - math.log(1 + check.parity)
            if check.parity is not None
            else inference.difference(check, a, b)
        )

    low, high = (0.3, 0.9) if kind != "perplexity" else (reference / 2, reference * 2)  # a quality, or a perplexity
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (middle, high) if past_the_boundary(middle) < 0 else (low, middle)
    return cell(check.row, check.column, (low + high) / 2, 0), compared


# a gap's parts' cases: its wider difference clear and its narrower none, the reverse, or both none
GAP_CASES = {"effect": ("effect", "noise"), "opposite": ("noise", "effect"), "noise": ("noise", "noise")}


def chain_cells(paper: str, gap: Gap, case: str) -> dict:
    """A gap whose parts share a row (tying C13: VD -> RE, then RE -> REAL): the three rows' test
    blocks with the same noise at perplexities 100, then the middle and last rows' levels giving
    the wider gain clear (effect), the narrower (opposite) or the two equal (noise)."""
    kind, replicates = evidence_shape(paper, gap.wider)
    assert kind == "perplexity" and gap.wider.row == gap.narrower.than, gap
    middle = {"effect": 80.0, "opposite": 98.0, "noise": math.sqrt(100.0 * 78.0)}[case]
    levels = {gap.wider.than: 100.0, gap.wider.row: middle, gap.narrower.row: 78.0}

    def blocks(level: float) -> list:
        rng = np.random.default_rng(5)
        return [[1000 * (math.log(level) + 0.3 * rng.standard_normal()), 1000] for _ in range(60)]

    seeds = evidence.seed_labels(range(1, replicates + 1))
    return keyed(
        *(
            Cell(row, gap.wider.column, kind, tuple(blocks(level) for _ in range(replicates)), seeds)
            for row, level in levels.items()
        )
    )


def made_to_show(paper: str, check: Check | Gap, case: str) -> dict:
    if isinstance(check, Gap) and set.intersection(
        *({(p.artefact, p.row, p.column, p.x), (p.compared_artefact, *p.compared)} for p in check.parts)
    ):
        return chain_cells(paper, check, case)
    if isinstance(check, Gap):
        return {
            key: cell
            for part, part_case in zip(check.parts, GAP_CASES[case])
            for key, cell in made_to_show(paper, part, part_case).items()
        }
    kind, replicates = evidence_shape(paper, check)
    if kind == "count":
        a, b = count_cells(check, case)
    elif kind == "value":
        a, b = value_cells(check, replicates, case)
    else:
        a, b = unit_cells(check, kind, replicates, case, meteor_parameters(paper, check))
    return keyed(a, *([b] if b is not None else []))


EVERY_CLAIM = [(paper, claim) for paper in registry.PAPERS for claim in claims.paper_claims(paper)]


@pytest.mark.parametrize("paper, claim", EVERY_CLAIM, ids=[f"{p}:{c.id}" for p, c in EVERY_CLAIM])
def test_every_claim_can_be_decided_under_config_yaml(paper: str, claim: Claim):
    """Evidence shaped as a full run of config.yaml makes it (its seeds per artefact and column,
    5 timed repeats): the claimed effect shown clearly is reproduced, the opposite is not, and no
    effect (the claimed row at the claim's boundary) is inconclusive; each check alike, and the
    claim by its rule (Holm, or its pooled test)."""
    for case, expected in (("effect", REPRODUCED), ("opposite", NOT_REPRODUCED), ("noise", INCONCLUSIVE)):
        outcomes = [claims.decide(check, made_to_show(paper, check, case)) for check in claim.checks]
        reasons = "; ".join(o.reason for o in outcomes)
        if case != "noise":
            assert all(o.verdict == expected for o in outcomes), f"{case}: {reasons}"
        decision = claims.decide_claim(claim, outcomes)
        assert decision.verdict == expected, f"{case}: {decision.reason}; {reasons}"


# -- the claims of the papers ----------------------------------------------------------------------------


def artefact_keys(paper: str, check: Check) -> tuple[set, set]:
    """(rows, columns) a check may name in its artefact."""
    artefact = registry.artefact(paper, check.artefact)
    if isinstance(artefact, artefacts.Figure):
        panels = {p.title for p in artefact.panels}
        series = {s.name for p in artefact.panels for s in getattr(p, "systems", ()) + getattr(p, "baselines", ())}
        series |= {p.name for p in artefact.panels if isinstance(p, artefacts.ScoreAgainst)} | {"d(Lᵀ, W)"}
        return series, panels
    if isinstance(artefact, artefacts.ConvergenceTable):
        return {c.name for c in artefact.columns}, {
            f"{s.name} {stem}" for s in artefact.systems for stem in ("ours", artefacts.BEST_BLEU_EPOCH)
        }
    if isinstance(artefact, artefacts.RareWordTable):
        labels = {"0 (unseen)"} | {analysis_bin_label(*b) for b in artefact.bins}
        return labels, {s.name for s in artefact.systems}
    if isinstance(artefact, artefacts.NeighbourTable):
        return set(artefact.paper), {s.name for s in artefact.systems}
    if isinstance(artefact, artefacts.ParameterTable):
        return {r.experiment for r in artefact.rows}, {
            "ms per batch",
            artefacts.DECODING_MS,
            artefacts.LAYER_PARAMETERS,
        }
    if isinstance(artefact, artefacts.SamplingTable):
        return {r.experiment for r in artefact.rows}, {f"{share:.0%}" for share in artefact.shares}
    if isinstance(artefact, artefacts.PerplexityTable):
        return {r.experiment for r in artefact.rows}, {
            f"{c.name} {split}" for c in artefact.columns for split in ("valid", "test")
        }
    if isinstance(artefact, artefacts.NextWordTable):
        return {s.experiment for s in artefact.systems}, set(
            map(artefacts.mean_probability_column, artefact.mean_probability_of)
        )
    parameters = {artefacts.parameter_column(c.name) for c in artefact.columns} if artefact.parameters else set()
    return {r.experiment for r in artefact.rows}, {c.name for c in artefact.columns} | parameters


def analysis_bin_label(low, high):
    from workflow_src.score.rare_words import bin_label

    return bin_label(low, high)


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_each_paper_states_seven_claims_on_cells_its_artefacts_have(paper):
    stated = claims.paper_claims(paper)
    assert len(stated) >= 7 and len({c.id for c in stated}) == len(stated)
    for claim in stated:
        assert claim.statement and claim.measure and claim.paper and claim.checks, f"{paper} {claim.id}"
        for check in (part for c in claim.checks for part in c.parts):
            rows, columns = artefact_keys(paper, check)
            assert check.row in rows and check.column in columns, f"{paper} {claim.id}: {check}"
            if check.compared is not None:
                rows, columns = artefact_keys(paper, dataclasses.replace(check, artefact=check.compared_artefact))
                assert check.compared[0] in rows and check.compared[1] in columns, f"{paper} {claim.id}: {check}"


def test_the_tool_writes_every_claim_with_its_data_note(tmp_path):
    out = tmp_path / "results" / "claims"
    claims_page.main(
        [
            "--papers",
            "tying",
            "joint",
            "--evidence",
            "",
            "--data-notes",
            '{"tying": "demo", "joint": "demo"}',
            "--out-prefix",
            str(out),
        ]
    )
    with out.with_suffix(".csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(claims.paper_claims("tying")) + len(claims.paper_claims("joint"))
    assert {r["verdict"] for r in rows} == {NOT_DECIDABLE} and {r["data"] for r in rows} == {"demo"}
    assert "not built in this run" in rows[0]["decided by"]


@pytest.mark.workflow
@pytest.mark.parametrize("configfile", ["config.yaml", "config.demo.yaml"])
def test_claims_and_ledgers_are_in_the_dag_of_all(configfile, tmp_path, full_config_outputs):
    from tests.conftest import planned_outputs

    config = yaml.safe_load((REPO / configfile).read_text())
    planned = full_config_outputs if configfile == "config.yaml" else planned_outputs(tmp_path, REPO / configfile)
    needed = claims.evidence_paths(layout.configured_artefacts(config))
    assert "results/claims.csv" in planned and needed and set(needed) <= planned
    assert {f"results/{paper}/deviations.md" for paper in config["papers"]} <= planned


# -- every claim quotes its paper --------------------------------------------------------------------------
SEEDS = REPO.parent / "shared" / "seeds"


def paper_text(paper: str) -> str:
    """The paper's text in ../shared/seeds (INDEX.md says which file is which), or a skip."""
    index = SEEDS / "INDEX.md"
    if not index.exists():
        pytest.skip(f"the papers' texts ({SEEDS}) are absent (they live beside the project, not in it)")
    found = re.search(rf"^\| `{paper}` \| (\S+) \|", index.read_text(), re.MULTILINE)
    return (SEEDS / found.group(1)).read_text(encoding="utf-8")


def comparable(text: str) -> str:
    """Text with only its layout taken out: words hyphenated across a line break joined, hyphens
    dropped (the extraction keeps "syn-\\nmargin" and "compara-\\nble" alike), whitespace collapsed."""
    return " ".join(re.sub(r"-[ \t]*\n\s*", "", text).replace("-", "").split())


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_every_claim_quotes_its_papers_words(paper):
    text = comparable(paper_text(paper))
    for claim in claims.paper_claims(paper):
        assert comparable(claim.quote) in text, f"{paper} {claim.id}: not the paper's words: {claim.quote}"


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_the_page_shows_each_quotes_maths_as_the_paper_prints_it(paper):
    """The page renders a quote's inline LaTeX (the claim keeps the extracted text, which the test
    above finds in the paper): no dollar or backslash is left for a reader to decode."""
    for claim in claims.paper_claims(paper):
        shown = claims_page.as_read(claim.quote)
        assert "$" not in shown and "\\" not in shown, f"{paper} {claim.id}: {shown}"
    assert claims_page.as_read("$\\ell_2$ loss") == "ℓ₂ loss"
    assert claims_page.as_read("replacing $\\log(C_m(\\kappa))$ with") == "replacing log(Cₘ(κ)) with"
    assert (
        claims_page.as_read("(with $d_j=512$), W to approach $L^T$, $> 1$ BLEU")
        == "(with dⱼ=512), W to approach Lᵀ, > 1 BLEU"
    )
    assert claims_page.as_read("Fi \\rightarrow En with $|\\mathcal{V}| \\approx 64K$") == "Fi → En with |𝒱| ≈ 64K"


def test_the_quote_check_tells_a_paraphrase_from_the_paper():
    text = comparable(
        "Syn-margin is found to be\nfaster than other margin-based methods, and compara-\nble in speed to vMF."
    )
    assert (
        comparable("Syn-margin is found to be faster than other margin-based methods, and comparable in speed") in text
    )
    assert comparable("Syn-margin is faster than the other margin-based methods") not in text


# -- the decision rule ----------------------------------------------------------------------------------
def outcome_with(p_claim: float, p_opposite: float, d: float = 0.1, runs: int = 4) -> claims.Outcome:
    """A check's outcome with a test of the given p (a t-test's spread: 1 per run)."""
    verdict = REPRODUCED if p_claim < 0.05 else NOT_REPRODUCED if p_opposite < 0.05 else INCONCLUSIVE
    return claims.Outcome(
        verdict, "", "", inference.Test(d, p_claim, p_opposite, "t", inference.Spread(0.0, 1.0, runs, "seed"))
    )


def test_holm_on_a_constructed_case():
    """Step down: 0.005 < 0.05/4, 0.011 < 0.05/3, 0.02 < 0.05/2, then 0.3 >= 0.05 stops; Bonferroni
    (0.0125 each) would keep 0.02, and an uncorrected union would also reject 0.04 in a second case."""
    assert inference.holm([0.02, 0.005, 0.3, 0.011]) == [True, True, False, True]
    assert inference.holm([0.04, 0.03, 0.3]) == [False, False, False]  # 0.03 >= 0.05/3 stops at once
    assert inference.holm([0.01, 0.04]) == [True, True]  # 0.01 < 0.025, then 0.04 < 0.05


def test_a_check_names_its_pair():
    assert (
        claims.pair_name(Check("table5", "Emb w/ NLL-vMF", "5-9", than_column="Softmax"))
        == "Emb w/ NLL-vMF against Softmax (5-9)"
    )
    assert claims.pair_name(Check("figure1", "(a)", "d", x=1.0, than_x=0.0)) == "d at x = 1 against x = 0 ((a))"
    assert claims.pair_name(Check("table3", "PTB test", "r", threshold=68.7)) == "r against 68.7 (PTB test)"


def test_a_gap_against_a_direct_computation_on_one_draw_of_the_shared_test_set():
    """d(a, b) - d(c, e) in one column: on each of sacrebleu's resamples of the one test set, the
    four systems scored on the same sentences (significance.seed_mean_bleu); p is the share of
    resamples on which the difference is not positive. Independent draws would not match it."""
    sentences = 150
    a, b = one_seed_bleu_cells("a", "b", "x", 0.68, 1, sentences)
    c, e = one_seed_bleu_cells("c", "e", "x", 0.64, 1, sentences)
    gap = Gap(Check("table2", "x", "a", than="b"), Check("table2", "x", "c", than="e"))
    outcome = claims.decide(gap, keyed(a, b, c, e), unit="BLEU")
    indices = significance.resample_indices(sentences)

    def bleu(cell: Cell) -> np.ndarray:
        return significance.seed_mean_bleu([np.array(cell.replicates[0])], indices)

    direct = bleu(a) - bleu(b) - (bleu(c) - bleu(e))
    assert outcome.test.resampled == pytest.approx(direct)
    assert outcome.test.p_claim == pytest.approx((1 + np.sum(direct <= 0)) / 1001)
    assert outcome.test.p_opposite == pytest.approx((1 + np.sum(direct >= 0)) / 1001)
    assert outcome.verdict == REPRODUCED and "difference +" in outcome.ours and "BLEU" in outcome.ours
    reversed_ = claims.decide(Gap(gap.narrower, gap.wider), keyed(a, b, c, e))
    assert reversed_.verdict == NOT_REPRODUCED and reversed_.test.d == pytest.approx(-outcome.test.d)
    assert claims.decide(Gap(gap.wider, gap.wider), keyed(a, b)).verdict == INCONCLUSIVE  # d_r = 0 on every resample


def test_a_gap_needs_both_parts_and_evidence_of_one_sort():
    gap = Gap(Check("table1", "x", "a", than="b"), Check("table1", "x", "c", than="e"))
    a, b = one_seed_bleu_cells("a", "b", "x", 0.68, 1, 100)
    missing = claims.decide(gap, keyed(a, b))
    assert missing.verdict == NOT_DECIDABLE and "no evidence for c in x" in missing.reason
    mixed = keyed(a, b, *(values(row, "x", (1.0, 1.1, 0.9)) for row in "ce"))
    with pytest.raises(ValueError, match="a gap needs unit evidence .* or values .* in both"):
        claims.decide(gap, mixed)
    once = claims.decide(gap, keyed(*(values(row, "x", (1.0,)) for row in "abce")))
    assert once.verdict == INCONCLUSIVE and "only one run of a (repeat 1): no spread" in once.reason
    with pytest.raises(ValueError, match="compares two cells"):
        Gap(Check("table1", "x", "a", than="b"), Check("table1", "x", "c", threshold=1.0))
    assert claims.pair_name(gap) == "the gap of a against b (x) beyond that of c against e (x)"


def test_a_gap_of_timings_is_welchs_t_of_the_difference_of_differences():
    """vMF C14's gap on timed repeats: d = (a - b) - (c - e) with variance the sum of the four
    means' variances and Welch-Satterthwaite's degrees of freedom, against a direct computation."""
    claim = next(c for c in claims.paper_claims("vmf") if c.id == "C14")
    gap = claim.checks[0]
    repeats = {
        (gap.wider.row, gap.wider.column, gap.wider.x): (410.0, 395.0, 402.0, 420.0, 399.0),
        gap.wider.compared: (120.0, 131.0, 118.0, 125.0, 122.0),
        (gap.narrower.row, gap.narrower.column, gap.narrower.x): (90.0, 84.0, 95.0, 88.0, 91.0),
        gap.narrower.compared: (60.0, 57.0, 66.0, 61.0, 58.0, 63.0),
    }
    cells = keyed(*(values(row, column, numbers, x) for (row, column, x), numbers in repeats.items()))
    outcome = claims.decide(gap, cells, unit=claims.unit_of("vmf", gap))
    a, b, c, e = (np.array(v) for v in repeats.values())
    d = (a.mean() - b.mean()) - (c.mean() - e.mean())
    parts = [x.var(ddof=1) / len(x) for x in (a, b, c, e)]
    df = sum(parts) ** 2 / sum(p**2 / (len(x) - 1) for p, x in zip(parts, (a, b, c, e)))
    assert outcome.test.d == pytest.approx(d)
    assert outcome.test.p_claim == pytest.approx(stats.t.sf(d / math.sqrt(sum(parts)), df))
    assert outcome.verdict == REPRODUCED and "Welch's" in outcome.reason and "instances/s" in outcome.ours
    swapped = [*repeats.values()][2:] + [*repeats.values()][:2]  # the lead at the small batch instead
    shrinking = keyed(*(values(row, column, numbers, x) for (row, column, x), numbers in zip(repeats, swapped)))
    assert claims.decide(gap, shrinking).verdict == NOT_REPRODUCED


def test_a_gap_across_two_tables_reads_each_parts_evidence_file():
    """Tying C12 compares AL's deficit on the whole of WikiText-2 (Table 1) with that on each half
    (Table 2): decided on both files, not decidable, naming the file, when one is not built."""
    claim = next(c for c in claims.paper_claims("tying") if c.id == "C12")
    found: dict[str, dict] = {}
    for gap in claim.checks:
        for part, case in zip(gap.parts, GAP_CASES["effect"]):
            found.setdefault(claims.evidence_path("tying", part.artefact), {}).update(made_to_show("tying", part, case))
    assert len(found) == 2

    def row(found: dict) -> dict:
        return next(r for r in claims_page.claim_rows(["tying"], found, {}) if r["id"] == "tying:C12")

    assert claims_page.base_verdict(row(found)["verdict"]) == REPRODUCED
    del found["results/tying/table2.evidence.json"]
    assert row(found)["verdict"] == NOT_DECIDABLE
    assert "results/tying/table2.evidence.json is not built" in row(found)["decided by"]


def test_a_row_compared_with_another_tables_row_reads_that_tables_evidence():
    """Joint C23 compares Table 3's Eq. 15 (2048) with Table 5's rows: its compared cell is Table 5's
    even where Table 3 has a row of that name (the 2-layer NMT is in both); not decidable, naming
    Table 5's file or cell, where that is missing; the paper's numbers are Table 5's."""
    claim = next(c for c in claims.paper_claims("joint") if c.id == "C23")
    check = next(c for c in claim.checks if c.than == "bpe32k-nmt")
    table3, table5 = (claims.evidence_path("joint", t) for t in ("table3", "table5"))
    joint, nmt_of_table5 = one_seed_bleu_cells(check.row, check.than, check.column, 0.68, 1, 150)
    nmt_of_table3 = dataclasses.replace(joint, row=check.than, replicates=(bleu_statistics(0.75, 150, 9),))
    found = {table3: keyed(joint, nmt_of_table3), table5: keyed(nmt_of_table5)}
    outcome = claims.decide_in_run("joint", check, found)
    expected = inference.observed(joint) - inference.observed(nmt_of_table5)
    assert inference.observed(nmt_of_table3) > inference.observed(joint)  # read from Table 3, it would fail
    assert outcome.verdict == REPRODUCED and outcome.test.d == pytest.approx(expected)
    assert "bpe32k-nmt of table5" in outcome.ours
    assert claims.pair_name(check) == "bpe32k-joint2048 of table3 against bpe32k-nmt of table5 (De→En)"
    found[table5] = {}
    missing = claims.decide_in_run("joint", check, found)
    assert missing.verdict == NOT_DECIDABLE and missing.absent == ("table5", "bpe32k-nmt", "De→En", claims.NO_EVIDENCE)
    found[table5] = evidence.Evidence(
        left_out_rows={"bpe32k-nmt": "not run here (config papers.joint.table5.rows ...)"}
    )
    left_out = claims.decide_in_run("joint", check, found)  # the row Table 5's config left out, and why
    assert left_out.absent[3] == "not run here (config papers.joint.table5.rows ...)"
    assert left_out.reason.endswith(": not run here (config papers.joint.table5.rows ...)")
    del found[table5]
    assert f"{table5} is not built" in claims.decide_in_run("joint", check, found).reason
    assert claims.evidence_paths([("joint", "table3"), ("joint", "table5")]) == [table3, table5]
    assert [claims.paper_numbers("joint", c) for c in claim.checks if c.than.startswith("bpe32k-nmt")] == [
        (18.11, 16.49),
        (18.11, 15.85),
        (18.11, 17.71),
        (18.11, 17.74),
    ]
    with pytest.raises(ValueError, match="than_artefact"):
        Check("table3", "De→En", "a", threshold=17.0, than_artefact="table5")


def test_a_gaps_paper_number_is_the_difference_of_its_parts():
    """Tying C11, small: AL's relative gain on PTB (87.3 -> 82.9) less that on WikiText-2 (105.9 -> 103.8)."""
    claim = next(c for c in claims.paper_claims("tying") if c.id == "C11")
    expected = math.log(87.3 / 82.9) - math.log(105.9 / 103.8)
    assert claims.paper_gap("tying", claim.checks[0]) == pytest.approx(expected)
    assert claims.unit_of("tying", claim.checks[0]) == ("perplexity", "perplexity")


def test_one_reversed_check_among_many_is_not_enough_after_holm():
    """Joint C2's 12 checks: one cell reversed at p = 0.02 is within chance over 12 (Holm needs
    0.05 / 12); the old rule (any check reversed) called the claim not reproduced."""
    claim = next(c for c in claims.paper_claims("joint") if c.id == "C2")
    claim = dataclasses.replace(claim, pooled=False)
    outcomes = [outcome_with(0.3, 0.6) for _ in claim.checks[:-1]] + [outcome_with(0.98, 0.02, d=-0.1)]
    assert claims.decide_claim(claim, outcomes).verdict == INCONCLUSIVE
    outcomes[0] = outcome_with(0.999, 0.001, d=-0.3)  # now one below 0.05/12: reversed
    decision = claims.decide_claim(claim, outcomes)
    assert decision.verdict == NOT_REPRODUCED and "Holm" in decision.reason


def one_seed_bleu_cells(
    row: str, than: str, column: str, quality: float, offset: int, sentences: int
) -> tuple[Cell, Cell]:
    return (
        Cell(row, column, "bleu", (bleu_statistics(quality, sentences, offset),), ("seed 1",)),
        Cell(than, column, "bleu", (bleu_statistics(0.6, sentences, offset + 500),), ("seed 1",)),
    )


def test_the_pooled_test_against_a_direct_computation():
    """Three cells of one seed each (different test sets): on each of sacrebleu's resamples the mean
    over the cells of BLEU(a) - BLEU(b), as significance.seed_mean_bleu scores them; p is the share
    of resamples on which that mean is not positive."""
    claim = Claim(
        "C", "s", "q", "w", "m", "p", tuple(Check("table2", c, "a", than="b") for c in ("x", "y", "z")), pooled=True
    )
    sizes, qualities = (120, 150, 90), (0.61, 0.6, 0.605)
    cells = {
        c: one_seed_bleu_cells("a", "b", c, q, 10 * i, n) for i, (c, q, n) in enumerate(zip("xyz", qualities, sizes))
    }
    outcomes = [claims.decide(check, keyed(*cells[check.column])) for check in claim.checks]
    pooled = claims.pooled_test(claim, outcomes)
    direct = np.mean(
        [
            significance.seed_mean_bleu([np.array(a.replicates[0])], significance.resample_indices(n))
            - significance.seed_mean_bleu([np.array(b.replicates[0])], significance.resample_indices(n))
            for (a, b), n in zip(cells.values(), sizes)
        ],
        axis=0,
    )
    assert pooled.resampled == pytest.approx(direct)
    assert pooled.p_claim == pytest.approx((1 + np.sum(direct <= 0)) / 1001)
    assert pooled.p_opposite == pytest.approx((1 + np.sum(direct >= 0)) / 1001)
    assert pooled.d == pytest.approx(np.mean([o.test.d for o in outcomes]))


def test_a_pooled_claim_settles_many_small_gaps_each_check_cannot():
    """Twelve cells, each a small gain: no cell is significant on its own, the mean over them is;
    the pooled claim is reproduced where checking each cell would leave it inconclusive."""
    claim = Claim(
        "C", "s", "q", "w", "m", "p", tuple(Check("table2", f"c{i}", "a", than="b") for i in range(12)), pooled=True
    )
    outcomes = [
        claims.decide(check, keyed(*one_seed_bleu_cells("a", "b", check.column, 0.607, 30 * i, 150)))
        for i, check in enumerate(claim.checks)
    ]
    assert sum(o.verdict == REPRODUCED for o in outcomes) < 12
    decision = claims.decide_claim(claim, outcomes)
    assert decision.verdict == REPRODUCED and "pooled paired bootstrap" in decision.reason
    assert claims.decide_claim(dataclasses.replace(claim, pooled=False), outcomes).verdict == INCONCLUSIVE
    assert ONE_SEED_NOTE in decision.shown


ONE_SEED_NOTE = claims.ONE_SEED


def test_power_and_the_seeds_it_needs_against_the_formula():
    """A t-test's se(S) = sqrt(v / S): power = Φ(g / se - z_0.95), and the seeds for 80% the least S
    with Φ(g / sqrt(v / S) - z_0.95) >= 0.8, i.e. S >= v (z_0.95 + z_0.8)^2 / g^2."""
    a, b = (
        Cell(row, "c", "value", numbers, evidence.seed_labels((1, 2, 3)))
        for row, numbers in (("a", (10.0, 10.4, 9.7)), ("b", (9.9, 10.2, 9.5)))
    )
    check = Check("table3", "c", "a", than="b")
    outcome = claims.decide(check, keyed(a, b))
    v = np.var(a.replicates, ddof=1) + np.var(b.replicates, ddof=1)
    gap = 0.3
    assert outcome.test.spread.se() == pytest.approx(math.sqrt(v / 3))
    expected = stats.norm.cdf(gap / math.sqrt(v / 3) - stats.norm.ppf(0.95))
    needed = math.ceil(v * (stats.norm.ppf(0.95) + stats.norm.ppf(0.8)) ** 2 / gap**2)
    claim = Claim("C", "s", "q", "w", "m", "p", (check,))
    text = claims.decide_claim(claim, [outcome], [gap]).power
    assert text.startswith(f"{expected:.2f} at 3 seeds") and f"80% needs {needed} seeds" in text
    assert claims.decide_claim(claim, [outcome], [None]).power == "unknown: the paper prints no number for it"


def test_one_seed_says_so_and_leaves_the_seed_spread_unmeasured():
    a, b = one_seed_bleu_cells("a", "b", "fr-en", 0.7, 1, 150)
    check = Check("table1", "fr-en", "a", than="b")
    decision = claims.decide_claim(
        Claim("C", "s", "q", "w", "m", "p", (check,)), [claims.decide(check, keyed(a, b))], [1.0]
    )
    assert decision.verdict == REPRODUCED and decision.shown == f"reproduced ({claims.ONE_SEED})"
    assert "test-set variance only" in decision.power and "run 2 or more" in decision.power


def test_a_printed_constant_is_not_compared_on_synthetic_data():
    claim = next(c for c in claims.paper_claims("tying") if c.id == "C9")  # VD-LSTM+REAL < 68.7
    check = claim.checks[0]
    outcomes = [claims.decide(check, made_to_show("tying", check, "effect"))]
    assert claims.decide_claim(claim, outcomes).verdict == REPRODUCED
    decision = claims.decide_claim(claim, outcomes, synthetic=True)
    assert (
        decision.verdict == NOT_COMPARABLE
        and "synthetic data" in decision.reason
        and decision.power == "not comparable"
    )


def test_a_figures_cells_are_named_by_their_place_on_its_x_axis():
    """A figure check's "ours" and its reason say where its two cells lie, in the panel's own terms;
    a table's cells need no such name."""
    joint, vmf = claims.paper_claims("joint"), claims.paper_claims("vmf")
    by_id = {c.id: c for c in joint}
    assert claims.point_names("joint", by_id["C13"].checks[0]) == ("d_j = 2048", "d_j = 512")
    assert claims.point_names("joint", by_id["C21"].checks[0].narrower) == ("medium frequency", "medium frequency")
    assert claims.point_names("vmf", next(c for c in vmf if c.id == "C13").checks[0]) == ("batch 128", "batch 128")
    assert claims.point_names("joint", by_id["C1"].checks[0]) == ("", "")
    tying_c5 = next(c for c in claims.paper_claims("tying") if c.id == "C5").checks[0]
    assert claims.point_names("tying", tying_c5) == ("β = 1", "")  # against a printed number
    assert claims.pair_name(by_id["C21"].checks[0], "joint") == (
        "the gap of NMT-joint against NMT at high frequency (De→En) beyond that of NMT-joint against NMT at medium "
        "frequency (De→En)"
    )
    assert claims.pair_name(by_id["C13"].checks[0], "joint") == "NMT-joint at d_j = 2048 against d_j = 512 (De→En)"


def test_the_page_tallies_five_verdicts_and_its_markdown_keeps_its_columns(tmp_path, monkeypatch):
    """tying on demo-like evidence: Figure 1's points decide C6; C4 ("almost 1") and C5 ("around
    0.06") compare with numbers the paper prints, which synthetic data is not held to; the tables
    are not built (not decidable); every Markdown table row has as many cells as its header once
    escaped pipes are taken as text."""
    points = [
        {"panel": panel, "series": "d(Lᵀ, W)", "x": x, "y": y, "replicate": f"seed {s}"}
        for panel, curve in (
            (claims.paper_claims("tying")[3].checks[0].column, ((0.0, 0.95), (0.5, 0.5), (1.0, 0.1))),
            (
                claims.paper_claims("tying")[5].checks[0].column,
                ((2.0, 0.9), (3.0, 0.6), (5.0, 0.4), (10.0, 0.1), (20.0, 0.05)),
            ),
        )
        for x, base in curve
        for s, y in enumerate((base, base * 1.05, base * 0.95), start=1)
    ]
    monkeypatch.chdir(tmp_path)
    figure = Path("results/tying/figure1.csv")
    figure.parent.mkdir(parents=True)
    figure.write_text(evidence.figure_csv(points))
    out = tmp_path / "claims"
    claims_page.main(
        [
            "--papers",
            "tying",
            "--evidence",
            str(figure),
            "--data-notes",
            '{"tying": "demo"}',
            "--synthetic-data",
            "--out-prefix",
            str(out),
        ]
    )
    rows = {r["id"]: r for r in csv.DictReader(out.with_suffix(".csv").open())}
    assert rows["tying:C6"]["verdict"] == REPRODUCED and rows["tying:C1"]["verdict"] == NOT_DECIDABLE
    assert rows["tying:C4"]["verdict"] == NOT_COMPARABLE and rows["tying:C5"]["verdict"] == NOT_COMPARABLE
    assert (
        "0.1 (subspace distance) (d(Lᵀ, W), 3 seeds, β = 1) against 0.5 (subspace distance) (d(Lᵀ, W), 3 seeds, "
        "β = 0.5)" in rows["tying:C4"]["ours"]
    )
    markdown = out.with_suffix(".md").read_text()
    assert (
        "| paper | reproduced | not reproduced | inconclusive: too little evidence | not decidable in this run: "
        "evidence missing | not comparable: synthetic data | claims |" in markdown
    )
    assert "d(Lᵀ, W) at τ = 10 against τ = 2 ((b) against τ, at β = 1): t-test" in rows["tying:C6"]["decided by"]
    # C15 compares two panels' points, each named on its own panel's axis (τ = 2 in (b), β = 0 in (a))
    assert rows["tying:C15"]["verdict"] == NOT_REPRODUCED
    assert rows["tying:C15"]["ours"].endswith(
        "against 0.95 (subspace distance) (d(Lᵀ, W), 3 seeds, β = 0): ratio 0.947"
    )
    assert (
        "d(Lᵀ, W) at τ = 2 [(b) against τ, at β = 1] against β = 0 [(a) against β, at τ = 10]: t-test"
        in rows["tying:C15"]["decided by"]
    )
    assert "| tying | 1 | 1 | 0 | 13 | 3 | 18 |" in markdown
    for table in re.findall(r"((?:^\|.*\|\n)+)", markdown, re.MULTILINE):
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in table.splitlines()}
        assert len(widths) == 1, table.splitlines()[0]


# -- one significance answer --------------------------------------------------------------------------------
def test_a_tables_gain_marks_and_the_claims_give_one_answer(tmp_path, monkeypatch):
    """Syn-margin Table 1's kind of marks (`ScoreTable.significance`): a system whose two seeds score
    60.0 and 15.1 BLEU against its baseline's 31.5 and 29.8 beats it on every resample of the test
    sentences with the seeds held (the old marks' test: p = 0.001), but not once its seeds are
    redrawn too (p = 0.27). The table's mark and the claim on the same pair now give one answer:
    no mark, inconclusive; the footer names the test."""
    from sacrebleu.metrics import BLEU

    from workflow_src.report import render

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    references = [" ".join(rng.choice(words, 12)) for _ in range(80)]

    def hypotheses(wrong: int, seed: int) -> list[str]:  # `wrong` of each sentence's 12 words replaced
        draw = np.random.default_rng(seed)
        out = []
        for reference in references:
            tokens = reference.split()
            for i in draw.choice(12, wrong, replace=False):
                tokens[i] = "x"
            out.append(" ".join(tokens))
        return out

    column = artefacts.Column("iwslt16", "fr-en", "bleu_tok", "Fr→En")
    (tmp_path / layout.data_dir("iwslt16", "fr-en") / "tok").mkdir(parents=True)
    (tmp_path / layout.data_dir("iwslt16", "fr-en") / "tok" / "test.en").write_text("\n".join(references) + "\n")
    for name, runs in (("base", ((4, 1), (4, 2))), ("good", ((2, 3), (6, 4)))):
        for seed, (wrong, draw) in enumerate(runs, start=1):
            folder = tmp_path / layout.model_dir("iwslt16", "fr-en", name, seed)
            folder.mkdir(parents=True)
            lines = hypotheses(wrong, draw)
            (folder / "test.greedy.hyp.tok").write_text("\n".join(lines) + "\n")
            (folder / "metrics.jsonl").write_text(
                json.dumps({"epoch": 1, "dev_bleu": 1.0, "best": True, "early_stop": True}) + "\n"
            )
            result = BLEU(tokenize="none").corpus_score(lines, [references])
            (folder / "test.greedy.bleu_tok.json").write_text(
                json.dumps({"metric": "bleu", "score": round(result.score, 2), "signature": "s"})
            )
    table = artefacts.ScoreTable(
        "t",
        (column,),
        tuple(artefacts.Row(name, {}, {}) for name in ("base", "good")),
        (),
        spread=True,
        significance=(("*", "base"),),
    )
    _, rows, footer, cells = render.score_table(table, artefacts.Context(seeds=(1, 2), pairs={"iwslt16": ("fr-en",)}))
    mark = next(row for row in rows if row["experiment"] == "good")["Fr→En significance"]
    outcome = claims.decide(Check("table1", "Fr→En", "good", than="base"), keyed(*cells))
    held = significance.paired_bootstrap_p(
        *([np.array(s) for s in c.replicates] for c in reversed(cells)), significance.resample_indices(80)
    )
    assert held < 0.05 and outcome.test.p_claim > 0.2  # the two tests differ on this pair
    assert (mark == "*") == (outcome.verdict == REPRODUCED) and mark == ""
    assert any("the test of results/claims.md" in line and "seeds resampled too" in line for line in footer)


def test_a_joint_tables_mark_and_a_claim_that_differ_name_each_other():
    """One seed: the one-sided claim (p < 0.05) and the table's two-sided test (sacrebleu's,
    p >= 0.05) answer the pair differently; the claim's reasons give the table's p and mark."""
    claim = next(c for c in claims.paper_claims("joint") if c.id == "C6")
    check = next(c for c in claim.checks if c.row == "bpe32k-joint512")  # Eq. 15 (512) > NMT, Table 3
    a = Cell(check.row, check.column, "bleu", (bleu_statistics(0.608, 300, 7),), ("seed 1",))
    b = Cell(check.than, check.column, "bleu", (bleu_statistics(0.6, 300, 8),), ("seed 1",))
    outcome = claims.decide(check, keyed(a, b))
    two_sided = significance.difference_p(
        [np.array(a.replicates[0])], [np.array(b.replicates[0])], significance.resample_indices(300)
    )
    note = claims.table_mark_note("joint", check, keyed(a, b), outcome)
    if (two_sided < 0.05) == (outcome.test.p_claim < 0.05):
        assert note == ""
        pytest.fail(f"the constructed pair no longer differs: one-sided {outcome.test.p_claim}, two-sided {two_sided}")
    assert "table3 answers differently" in note and f"p = {two_sided:.3g}" in note
