"""Analysis tables: rare-word F1 by a hand computation, convergence time from training logs."""

import pytest

from workflow_src.report.analysis import epoch_of_best_bleu, time_to_convergence
from workflow_src.score.rare_words import bin_label, binned_f1, frequency_bin

BINS = ((1, 1), (2, 2), (3, 4), (5, None))


def test_rare_word_f1_by_hand():
    train = {"the": 50, "cat": 1, "sat": 2, "mat": 3, "dog": 1}
    references = ["the cat sat on the mat", "the dog sat"]
    hypotheses = ["the cat sat on a mat", "a dog dog sat"]
    bins = binned_f1(references, hypotheses, train, BINS)
    # unseen (bin 0): ref {on}, hyp {on, a, a}: 1 match, P = 1/3, R = 1/1
    assert bins[0]["precision"] == pytest.approx(1 / 3) and bins[0]["recall"] == 1
    assert bins[0]["f1"] == pytest.approx(2 * (1 / 3) / (1 / 3 + 1))
    # frequency 1: ref {cat, dog}, hyp {cat, dog, dog}: matches clipped per sentence = 2
    assert (bins[1]["precision"], bins[1]["recall"]) == pytest.approx((2 / 3, 1.0))
    # frequency 2: sat twice in both: P = R = 1
    assert bins[2]["f1"] == 1.0
    # 3-4: mat; 5+: the (ref 3, hyp 1 -> P 1, R 1/3)
    assert bins[3]["f1"] == 1.0
    assert (bins[4]["precision"], bins[4]["recall"]) == pytest.approx((1.0, 1 / 3))
    assert bins[4]["reference_words"] == 3


def test_bins_and_labels():
    assert [frequency_bin(n, BINS) for n in (1, 2, 3, 4, 5, 1000)] == [0, 1, 2, 2, 3, 3]
    assert frequency_bin(0, BINS) is None
    assert [bin_label(*b) for b in BINS] == ["1", "2", "3-4", "5+"]


def test_convergence_is_the_lowest_development_loss_not_the_best_bleu():
    """vMF Table 3's criterion (§4.1): the epoch of the lowest validation loss (perplexity), here
    epoch 2, although development BLEU (`best`, what training selects on) kept rising to epoch 3."""
    history = [
        {"epoch": 1, "train_seconds_total": 10.0, "dev_loss": 3.0, "dev_bleu": 5.0, "best": True},
        {"epoch": 2, "train_seconds_total": 21.0, "dev_loss": 2.5, "dev_bleu": 6.0, "best": True},
        {"epoch": 3, "train_seconds_total": 30.0, "dev_loss": 2.6, "dev_bleu": 7.0, "best": True},
    ]
    assert time_to_convergence(history) == (21.0, 2, True)
    assert epoch_of_best_bleu(history) == 3  # Figure 1 (right)'s convergence, by development BLEU
    assert epoch_of_best_bleu([*history, {**history[2], "epoch": 4}]) == 3  # the first of equals


def test_a_loss_still_falling_at_the_last_epoch_is_not_converged():
    history = [
        {"epoch": 1, "train_seconds_total": 10.0, "dev_loss": -20.0},
        {"epoch": 2, "train_seconds_total": 21.0, "dev_loss": -23.5},
    ]
    assert time_to_convergence(history) == (21.0, 2, False)


def write_example_world(root, sources: list[str], references: list[str]):
    """A fr-en test set and, for every system of vMF Table 10, one hypothesis per line naming its line."""
    from pathlib import Path

    from workflow_src import layout
    from workflow_src.papers import vmf

    data = Path(root, layout.data_dir("iwslt16", "fr-en"))
    for folder, side, lines in (("raw", "fr", sources), ("raw", "en", references), ("tok", "fr", sources)):
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / f"test.{side}").write_text("".join(f"{line}\n" for line in lines))
    for system in vmf.ARTEFACTS["table10"].systems:
        path = Path(root, layout.hypothesis_path("iwslt16", "fr-en", system.experiment, 1))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{system.name} line {i + 1}\n" for i in range(len(sources))))


def example_table(root, monkeypatch):
    from workflow_src.report.analysis import examples
    from workflow_src.papers import vmf
    from workflow_src.artefacts import Context

    monkeypatch.chdir(root)
    return examples(vmf.ARTEFACTS["table10"], Context(seeds=(1,), pairs={"iwslt16": ("fr-en",)}), "vmf", "table10")


def test_table10_shows_the_papers_own_sentence_when_the_test_set_holds_it(tmp_path, monkeypatch):
    # the real test set has the accents the paper's text extraction lost, and Moses-style quotes
    paper_source = (
        "Une éducation est critique, mais régler ce problème va nécessiter que chacun d'entre nous "
        "s'engage et soit un meilleur exemple pour les femmes et filles dans nos vies."
    )
    filler = "Une phrase de plus de dix mots qui vient en premier dans ce test ."
    write_example_world(tmp_path, [filler, paper_source, filler], ["a", "An education is critical ...", "c"])
    _, rows, footer = example_table(tmp_path, monkeypatch)
    assert rows[0]["text"] == paper_source and rows[0]["paper"].startswith("Une ducation")
    assert rows[2]["text"] == "BPE line 2" and rows[2]["paper"].startswith("Education is critical")
    assert "the paper's own example" in footer[0]


def test_table10_falls_back_to_the_first_long_sentence_and_says_why(tmp_path, monkeypatch):
    write_example_world(tmp_path, ["court .", "une phrase de onze mots qui ne vient pas du papier ."], ["a", "b"])
    _, rows, footer = example_table(tmp_path, monkeypatch)
    assert rows[0]["text"].startswith("une phrase") and rows[2]["text"] == "BPE line 2"
    assert "does not hold the paper's example" in footer[0]


def test_table3_reads_convergence_from_each_seeds_metrics_and_marks_lower_bounds(tmp_path, monkeypatch):
    import json
    from pathlib import Path

    from workflow_src import layout
    from workflow_src.report.analysis import convergence
    from workflow_src.papers import vmf
    from workflow_src.artefacts import Context, Job

    monkeypatch.chdir(tmp_path)
    losses = {1: [3.0, 2.0, 2.5], 2: [3.0, 2.8, 2.6]}  # seed 1 converges at epoch 2; seed 2 still falls
    for system in vmf.ARTEFACTS["table3"].systems:
        for seed, dev in losses.items():
            path = Path(layout.metrics_path(Job("iwslt16", "fr-en", system.experiment, seed)))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                "".join(
                    json.dumps(
                        {"epoch": e + 1, "dev_loss": loss, "dev_bleu": 10 - loss, "train_seconds_total": 10.0 * (e + 1)}
                    )
                    + "\n"
                    for e, loss in enumerate(dev)
                )
            )
    ctx = Context(seeds=(1, 2), pairs={"iwslt16": ("fr-en",)})
    columns, rows, footer = convergence(vmf.ARTEFACTS["table3"], ctx, "vmf", "table3")
    fr_en = rows[0]
    assert fr_en["Softmax ours (s)"] == 25.0 and fr_en["Softmax converged epoch"] == "2 3+"
    assert "still falling" in fr_en["note"] and "seed 2" in fr_en["note"]
    assert fr_en["Emb w/ NLL-vMF ours ratio"] == 1.0
    # the evidence vMF C4 (seconds) and C15 (epoch of the best development BLEU) are decided by, per seed
    from workflow_src.artefacts import BEST_BLEU_EPOCH
    from workflow_src.report import table_evidence

    cells = {c.key: c for c in table_evidence.cells(vmf.ARTEFACTS["table3"], ctx, "vmf", "table3")}
    assert cells["fr-en", "Softmax ours", None].replicates == (20.0, 30.0)
    assert cells["fr-en", f"Softmax {BEST_BLEU_EPOCH}", None].replicates == (2.0, 3.0)
    assert cells["fr-en", f"Softmax {BEST_BLEU_EPOCH}", None].labels == ("seed 1", "seed 2")


def test_table4_counts_the_layers_of_the_models_trained_on_fr_en(tmp_path, monkeypatch):
    """vMF Table 4's counts are read from the fr-en models' metrics (their own vocabularies), not
    from the benchmark's models at the paper's sizes; a model trained before the counts were
    recorded says so."""
    import json

    from workflow_src import artefacts, layout, registry
    from workflow_src.report import analysis, table_evidence

    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("vmf", "table4")
    rows = artefact.rows
    benchmark = {
        "settings": {"repeats": 5},
        "rows": {r.experiment: {"input": 1, "output": 1, "ms": 10.0 + i, "ms_sd": 0.5} for i, r in enumerate(rows)},
    }
    path = tmp_path / layout.benchmark_path("vmf", "table4")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(benchmark))
    for i, row in enumerate(rows):
        metrics = tmp_path / layout.metrics_path(artefacts.Job("iwslt16", "fr-en", row.experiment, 1))
        metrics.parent.mkdir(parents=True)
        counts = {"layer_parameters": {"input": 1000 + i, "output": 2000 + i}} if row != rows[-1] else {}
        metrics.write_text(json.dumps({"epoch": 1, **counts}) + "\n")
    ctx = artefacts.Context(seeds=(1,), pairs={"iwslt16": ("fr-en",)})
    assert layout.metrics_path(artefacts.Job("iwslt16", "fr-en", rows[0].experiment, 1)) in layout.inputs(
        artefact, ctx, "vmf", "table4"
    )
    _, out, footer = analysis.table(artefact, ctx, "vmf", "table4")
    assert [r["input layer parameters ours"] for r in out[:-1]] == [1000 + i for i in range(len(rows) - 1)]
    assert out[1]["output layer parameters ours ratio"] == pytest.approx(2001 / 2000)
    assert out[-1]["input layer parameters ours"] is None and "predates per-layer counts" in out[-1]["note"]
    assert out[2]["ms per batch ours"] == 12.0 and "trained on iwslt16 fr-en" in footer[0]
    assert out[2][f"{artefacts.DECODING_MS} ours"] is None and "empty where the benchmark predates it" in footer[0]
    unconfigured = analysis.table(artefact, artefacts.Context(seeds=(1,), pairs={}), "vmf", "table4")[1]
    assert unconfigured[0]["input layer parameters ours"] is None and "not configured" in unconfigured[0]["note"]
    # the evidence vMF C12 is decided by: each counted row's two layers together, exact; none where uncounted
    counted = {c.row: c for c in table_evidence.cells(artefact, ctx, "vmf", "table4") if c.kind == "count"}
    assert {row: c.replicates for row, c in counted.items()} == {
        r["experiment"]: (r["input layer parameters ours"] + r["output layer parameters ours"],) for r in out[:-1]
    }
    assert {c.column for c in counted.values()} == {artefacts.LAYER_PARAMETERS}
