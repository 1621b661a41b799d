"""A row whose training had not plateaued says so in its table, so a ranking by what
each method learns is told apart from one by how far a toy budget let each get."""

import json

from sacrebleu.metrics import BLEU

from tests.conftest import REPO
from workflow_src import artefacts, layout
from workflow_src.report import analysis, plateau, render
from workflow_src.report.plateau import learning_note, unsettled
from workflow_src.train.divergence import diverged


def nmt(*bleu, early_stop=False):
    return [
        {"epoch": e, "dev_bleu": b, "best": b == max(bleu[:e]), "early_stop": early_stop and e == len(bleu)}
        for e, b in enumerate(bleu, start=1)
    ]


def lm(*perplexity, converged=False):
    return [
        {"epoch": e, "valid_perplexity": p, "best": p == min(perplexity[:e])}
        | ({"converged": True} if converged and e == len(perplexity) else {})
        for e, p in enumerate(perplexity, start=1)
    ]


def test_a_run_has_plateaued_when_its_early_stop_fired_or_its_last_epoch_moved_little():
    assert unsettled(nmt(10.0, 40.0, 39.5, early_stop=True)) == ""
    assert unsettled(nmt(10.0, 40.0, 40.9)) == ""  # within 1 BLEU
    assert unsettled(nmt(10.0, 40.0, 38.9)) == "development BLEU 40.0 → 38.9 at epoch 3"
    assert unsettled(nmt(10.0, 29.1, 40.2)) == "development BLEU 29.1 → 40.2 at epoch 3"
    assert unsettled(nmt(10.0)) == "development BLEU 10.0 at epoch 1"  # one epoch shows no plateau
    assert unsettled(lm(300.0, 100.0, 99.2)) == ""  # within 1% of the perplexity
    assert unsettled(lm(300.0, 100.0, 98.9)) == "validation perplexity 100.0 → 98.9 at epoch 3"
    assert unsettled(lm(300.0, 100.0, 90.0, converged=True)) == ""
    assert unsettled(lm(300.0, 100.0, 140.0, 145.0)) == ""  # two epochs past its best: the kept epoch is the best
    assert unsettled([]) == "no epoch recorded"


def test_a_language_model_whose_perplexity_ran_away_has_diverged_not_plateaued():
    """Two epochs past its best would count as settled; above 1.5 times the best it has diverged."""
    assert diverged(lm(300.0, 100.0, 140.0, 150.0)) == ""
    assert diverged(lm(196.0, 93.0, 56.0, 123.4)) == "validation perplexity 56.0 at epoch 3 → 123.4 at epoch 4"
    assert (
        unsettled(lm(196.0, 93.0, 56.0, 123.4)) == "diverged: validation perplexity 56.0 at epoch 3 → 123.4 at epoch 4"
    )
    assert diverged(nmt(10.0, 40.0, 5.0)) == ""  # translation models are judged by development BLEU only
    note = learning_note([(1, lm(196.0, 93.0, 56.0, 123.4)), (2, lm(300.0, 100.0, 90.0))])
    assert note.startswith("not plateaued when its training stopped (seed 2: validation perplexity 100.0 → 90.0")
    assert "; diverged (seed 1: validation perplexity 56.0 at epoch 3 → 123.4 at epoch 4): the row holds" in note
    assert plateau.footer([{"note": note}]) == [plateau.SETTINGS, plateau.DIVERGENCE]  # where the docs say more, once


def test_a_row_names_its_seeds_that_had_not_plateaued():
    assert learning_note([(1, nmt(5.0, 6.0)), (2, nmt(5.0, 8.0, early_stop=True))]) == ""
    note = learning_note([(1, nmt(5.0, 6.0)), (2, nmt(5.0, 8.0))])
    assert note.startswith("not plateaued when its training stopped (seed 2: development BLEU 5.0 → 8.0 at epoch 2)")


def score_table_of_two_rows(tmp_path) -> artefacts.ScoreTable:
    """A De→En table of a row whose training had settled and one still rising, their files under
    `tmp_path` (the current directory)."""
    column = artefacts.Column("wmt17", "de-en", "bleu_tok", "De→En")
    references = [f"the house number {i} is small" for i in range(20)]
    (tmp_path / layout.data_dir("wmt17", "de-en") / "tok").mkdir(parents=True)
    (tmp_path / layout.data_dir("wmt17", "de-en") / "tok" / "test.en").write_text("\n".join(references) + "\n")
    for name, history in (("settled", nmt(10.0, 50.0, 50.5)), ("rising", nmt(10.0, 30.0, 45.0))):
        folder = tmp_path / layout.model_dir("wmt17", "de-en", name, 1)
        folder.mkdir(parents=True)
        (folder / "test.greedy.hyp.tok").write_text("\n".join(references) + "\n")
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
        score = BLEU(tokenize="none").corpus_score(references, [references])
        (folder / "test.greedy.bleu_tok.json").write_text(
            json.dumps({"score": score.score, "metric": "bleu_tok", "signature": "tok:none"})
        )
    return artefacts.ScoreTable(
        "t", (column,), tuple(artefacts.Row(name, {"De→En": 10.0}, {}) for name in ("settled", "rising")), ()
    )


def test_a_score_table_notes_the_rows_still_learning_and_points_to_the_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _, rows, _, _ = render.score_table(
        score_table_of_two_rows(tmp_path), artefacts.Context(seeds=(1,), pairs={"wmt17": ("de-en",)})
    )
    notes = {row["experiment"]: row["note"] for row in rows}
    assert notes["settled"] == ""
    assert notes["rising"] == (
        "not plateaued when its training stopped (seed 1: development BLEU 30.0 → 45.0 at epoch 3), "
        "so its rank may change with more epochs"
    )  # the settings: once, under the table
    assert plateau.footer(rows) == [plateau.SETTINGS] and plateau.footer(rows[:1]) == []
    heading = plateau.SETTINGS.split('"')[3]
    assert f"## {heading}" in (REPO / "docs" / "demo.md").read_text()


def test_on_synthetic_data_no_diff_is_shown_and_the_table_says_why_once(tmp_path, monkeypatch):
    """The demo's numbers and the paper's measure different data: a difference would read as a match."""
    monkeypatch.chdir(tmp_path)
    table = score_table_of_two_rows(tmp_path)
    for synthetic in (False, True):
        columns, rows, footer, _ = render.score_table(
            table, artefacts.Context(seeds=(1,), pairs={"wmt17": ("de-en",)}, synthetic=synthetic)
        )
        assert ("De→En diff" in columns) != synthetic and footer.count(analysis.NO_DIFF) == synthetic
        assert any("diff = ours - paper" in line for line in footer) != synthetic


def test_rows_of_a_block_that_trained_other_lengths_say_so():
    """Tying's large block in the demo: AL after 4 epochs, the other rows after 10."""
    assert plateau.unequal_epochs({"vd": 10, "re": 10, "al": 4, "real": 10}, "Large") == {
        "al": "trained 4 epochs, the other Large rows 10"
    }
    assert plateau.unequal_epochs({"vd": 10, "re": 10}, "Large") == {}
    assert plateau.unequal_epochs({"vd": 4, "al": 10}, "Small") == {"vd": "trained 4 epochs, the other Small rows 10"}
