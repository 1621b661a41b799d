"""The evidence tables and figures write for the claims (`workflow_src/score/evidence.py`): each cell's
replicates give back the number the artefact shows. Small and fast: fake result files, tiny models."""

import dataclasses
import json
import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import LM_SPEC, hand_set_model
from workflow_src import artefacts, layout, registry
from workflow_src.artefacts import Context
from workflow_src.plan import benchmark
from workflow_src.report import analysis, claims, figures, table_evidence
from workflow_src.score import evidence, inference, meteor, rare_words
from workflow_src.train import train_lm

TINY = {
    "device": "cpu",
    "encoder_layers": 1,
    "decoder_layers": 1,
    "hidden": 8,
    "src_embedding": 8,
    "tgt_embedding": 8,
    "dim": 8,
    "vocab": 40,
    "bpe_vocab": 30,
    "batch_size": 2,
    "length": 3,
    "warmup": 0,
    "steps": 2,
    "batch_sizes": [2],
    "max_batch": 2,
    "sampling_vocab": 30,
    "precision": "fp32",
}


def test_token_nll_is_in_the_order_of_the_text(tmp_path):
    """The hand-set model of test_train_lm: each token's NLL depends on its position in its column only."""
    text = tmp_path / "text.txt"
    text.write_text("a b c\nb a\nc c a b\na\n")
    itos = train_lm.build_vocabulary(text)
    w, b = {"a": 1.0, "b": -1.0, "c": 2.0, train_lm.EOS: 0.5}, {"a": 0.0, "b": 0.5, "c": 0.0, train_lm.EOS: -0.3}
    model = hand_set_model([w[word] for word in itos], [b[word] for word in itos])
    stream = [word for line in text.read_text().splitlines() for word in line.split() + [train_lm.EOS]]
    columns, length = 3, len(stream) // 3
    expected = []
    for column in range(columns):
        c = 0.0
        for target in stream[column * length + 1 : (column + 1) * length]:
            c = (c + math.tanh(1.0)) / 2
            h = math.tanh(c) / (1 + math.exp(-0.5))
            expected.append(math.log(sum(math.exp(w[v] * h + b[v]) for v in w)) - (w[target] * h + b[target]))
    data = train_lm.batchify(train_lm.encode(text, {word: i for i, word in enumerate(itos)}), columns)
    assert train_lm.token_nll(model, data, bptt=2).tolist() == pytest.approx(expected, rel=1e-12)


def test_perplexity_blocks_reproduce_the_reported_perplexity(tmp_path):
    words = "the cat dog sees likes a ball mouse tree my friend".split()
    rng = random.Random(0)
    for split, n in (("train", 200), ("valid", 300), ("test", 400)):
        (tmp_path / f"{split}.txt").write_text("".join(" ".join(rng.choices(words, k=5)) + "\n" for _ in range(n)))
    spec = {
        **LM_SPEC,
        "size": 8,
        "layers": 1,
        "dropout": 0.0,
        "loss": "ce",
        "loss_params": {},
        "lr_decay": 1.0,
        "decay_after": 1,
        "batch_size": 4,
        "max_epochs": 1,
        "seed": 1,
    }
    train_lm.main(
        [
            "--spec",
            json.dumps(spec),
            *(f"--{s}={tmp_path / f'{s}.txt'}" for s in ("train", "valid", "test")),
            "--out-dir",
            str(tmp_path / "out"),
        ]
    )
    result = json.loads((tmp_path / "out" / "perplexity.json").read_text())
    for split in ("valid", "test"):
        blocks = result[f"{split}_blocks"]
        assert len(blocks) > 1 and {tokens for _, tokens in blocks[:-1]} == {evidence.BLOCK_TOKENS}
        assert sum(tokens for _, tokens in blocks) == result["evaluation"][f"{split}_tokens"]  # every token scored
        assert math.exp(sum(nll for nll, _ in blocks) / sum(t for _, t in blocks)) == pytest.approx(
            result[f"{split}_perplexity"], rel=1e-12
        )


def test_the_perplexity_table_evidence_gives_the_tables_means(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("tying", "table1")
    ctx = Context(seeds=(1, 2), pairs={}, grid={"gamma": {"ptb": (0.5, 0.8), "wikitext2": (1.0,)}}, corpora=("ptb",))
    rng = random.Random(1)
    for _, _, jobs in layout.computed_cells(artefact, ctx):
        for job in jobs:
            result = {"parameters": 10, "units": 8}
            for split in ("valid", "test"):
                blocks = [[rng.uniform(4000, 5000), 1000], [rng.uniform(1000, 2000), 300]]
                result |= {
                    f"{split}_blocks": blocks,
                    f"{split}_perplexity": math.exp(sum(n for n, _ in blocks) / sum(t for _, t in blocks)),
                }
            path = Path(layout.lm_dir(job)) / "perplexity.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result))
            (path.parent / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "valid_perplexity": 99.0}) + "\n")
    _, rows, _ = analysis.table(artefact, ctx, "tying", "table1")
    cells = table_evidence.cells(artefact, ctx, "tying", "table1")
    evidence.write(tmp_path / "table1.evidence.json", cells)
    read = evidence.read(tmp_path / "table1.evidence.json")
    computed = [row for row in rows if row.get("PTB test ours") is not None]
    assert computed and len(read) == 2 * len(computed)
    for row in computed:
        for split in ("valid", "test"):
            cell = read[row["experiment"], f"PTB {split}", None]
            assert cell.kind == "perplexity" and cell.labels == ("seed 1", "seed 2")
            per_seed = [math.exp(sum(n for n, _ in r) / sum(t for _, t in r)) for r in cell.replicates]
            assert statistics.fmean(per_seed) == pytest.approx(row[f"PTB {split} ours"])


def test_rare_word_counts_give_binned_f1():
    train = {"the": 50, "cat": 1, "sat": 2, "mat": 3, "dog": 1}
    references = ["the cat sat on the mat", "the dog sat", "a mat"]
    hypotheses = ["the cat sat on a mat", "a dog dog sat", "the the"]
    bins = ((1, 1), (2, 2), (3, 4), (5, None))
    per_sentence = rare_words.sentence_bin_counts(references, hypotheses, train, bins)
    assert len(per_sentence) == 3 and all(len(s) == len(bins) + 1 for s in per_sentence)
    for b, scores in enumerate(rare_words.binned_f1(references, hypotheses, train, bins)):
        matched, hyp, ref = (sum(s[b][i] for s in per_sentence) for i in range(3))
        assert scores["f1"] == pytest.approx(2 * matched / (hyp + ref) if hyp + ref else 0.0)


def test_the_rare_word_table_evidence_gives_the_tables_f1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("vmf", "table5")
    column = artefact.column
    data = Path(layout.data_dir(column.dataset, column.pair))
    rng = random.Random(2)
    vocabulary = [f"w{i}" for i in range(60)]
    (data / "vocab").mkdir(parents=True)
    (data / "vocab/en.tsv").write_text("".join(f"{w}\t{3 ** (i % 8)}\n" for i, w in enumerate(vocabulary)))
    (data / "tok").mkdir()
    references = [" ".join(rng.choices(vocabulary + ["new"], k=8)) for _ in range(30)]
    (data / "tok/test.en").write_text("".join(f"{r}\n" for r in references))
    ctx = Context(seeds=(1, 2), pairs={column.dataset: (column.pair,)})
    for system in artefact.systems:
        for job in ctx.system_jobs(column, system):
            path = Path(layout.hypothesis_path(job.dataset, job.pair, job.experiment, job.seed, tokenized=True))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                "".join(
                    " ".join(w if rng.random() < 0.6 else rng.choice(vocabulary) for w in r.split()) + "\n"
                    for r in references
                )
            )
            Path(layout.metrics_path(job)).write_text(
                json.dumps({"epoch": 1, "dev_bleu": 9.0, "early_stop": True}) + "\n"
            )
    _, rows, _ = analysis.table(artefact, ctx, "vmf", "table5")
    cells = {c.key: c for c in table_evidence.cells(artefact, ctx, "vmf", "table5")}
    assert len(cells) == len(rows) * len(artefact.systems)
    for row in rows:
        for system in artefact.systems:
            cell = cells[row["training frequency"], system.name, None]
            assert cell.kind == "f1" and cell.labels == ("seed 1", "seed 2")
            assert all(len(replicate) == len(references) for replicate in cell.replicates) and cell.unsettled == ""
            f1 = [2 * sum(m for m, _, _ in r) / (sum(h + t for _, h, t in r) or 1) for r in cell.replicates]
            assert statistics.fmean(f1) == pytest.approx(row[f"{system.name} ours"])


def test_a_throughput_figures_csv_round_trips_with_its_repeats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("synmargin", "figure2")
    panel = artefact.panels[0]
    repeats = {
        s.experiment: {"64": [100.0 + i + k for i in range(5)], "128": [150.0 + i for i in range(5)]}
        for k, s in enumerate(panel.systems)
    }
    result = {
        "systems": {e: {b: statistics.fmean(r) for b, r in points.items()} for e, points in repeats.items()},
        "repeats": repeats,
        "batch_sizes": [64, 128],
        "note": "fake",
    }
    path = Path(layout.benchmark_path("synmargin", "figure2"))
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result))
    prefix = tmp_path / "results/synmargin/figure2"
    figures.draw(artefact, Context(seeds=(1,), pairs={}), "synmargin", "figure2", "title", "data", prefix)
    cells = evidence.read_figure(prefix.with_suffix(".csv"))
    assert len(cells) == 2 * len(panel.systems)
    for k, system in enumerate(panel.systems):
        cell = cells[system.name, panel.title, 64.0]
        assert cell.labels == evidence.repeat_labels(5) and cell.replicates == tuple(100.0 + i + k for i in range(5))


def test_a_subspace_sweeps_csv_has_every_seeds_distance(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("tying", "figure1")
    ctx = Context(seeds=(1, 2), pairs={}, corpora=("ptb",), sweeps={"beta": (0.0, 1.0), "tau": (10.0,)})
    distance = {}
    for panel in artefact.panels:  # β = 1, τ = 10 is one model, in both panels
        for _, name in ctx.sweep(panel):
            for job in ctx.lm_jobs(panel.corpus, name):
                distance[name, job.seed] = 0.1 * len(distance) + job.seed / 100
                path = Path(layout.lm_dir(job)) / "perplexity.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(
                    json.dumps({"subspace_distance": distance[name, job.seed], "units": 8, "train_tokens": 100})
                )
    prefix = tmp_path / "results/tying/figure1"
    figures.draw(artefact, ctx, "tying", "figure1", "title", "data", prefix)
    cells = evidence.read_figure(prefix.with_suffix(".csv"))
    first, second = artefact.panels
    assert set(cells) == {
        (figures.SUBSPACE_SERIES, first.title, 0.0),
        (figures.SUBSPACE_SERIES, first.title, 1.0),
        (figures.SUBSPACE_SERIES, second.title, 10.0),
    }
    cell = cells[figures.SUBSPACE_SERIES, first.title, 1.0]  # the point tying's claim C4 reads
    name = dict(ctx.sweep(first))[1.0]
    assert cell.labels == ("seed 1", "seed 2") and cell.replicates == pytest.approx(
        (distance[name, 1], distance[name, 2])
    )


def test_figure3_writes_each_seeds_sentence_statistics_as_its_evidence(tmp_path, monkeypatch):
    """Figure 3's evidence.json has a `meteor` cell at each point of its CSV (system, panel, bin):
    each seed's per-sentence statistics, which the claims score (with the bin's parameters) to
    the METEOR the figure plots; the claims read this file for it."""
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("joint", "figure3")
    ctx = Context(seeds=(1, 2), pairs={"wmt17": ("en-de", "de-en")})
    rng = random.Random(2)
    references = [rng.choices("the a of zebra okapi runs dog cat".split(), k=rng.randint(2, 8)) for _ in range(12)]
    bins = meteor.frequency_bins(
        [(w, 10 - k) for k, w in enumerate("the a of dog cat runs zebra okapi".split())], ("high", "medium", "low")
    )
    for panel in artefact.panels:
        parameters = meteor.MeteorParameters(*panel.parameters[panel.column.pair[-2:]])
        for system in panel.systems:
            for job in ctx.system_jobs(panel.column, system):
                Path(layout.metrics_path(job)).parent.mkdir(parents=True, exist_ok=True)
                Path(layout.metrics_path(job)).write_text(json.dumps({"dev_bleu": rng.random(), "best": True}) + "\n")
                hypotheses = [[w if rng.random() < 0.7 else "xx" for w in r] for r in references]
                Path(layout.meteor_bins_path(job, "joint", "figure3", panel.search)).write_text(
                    json.dumps(
                        {
                            "signature": "ours",
                            "parameters": dataclasses.asdict(parameters),
                            "bins": meteor.binned_meteor(hypotheses, references, bins, parameters),
                        }
                    )
                )
    prefix = tmp_path / "results/joint/figure3"
    figures.draw(artefact, ctx, "joint", "figure3", "title", "data", prefix)
    points = evidence.read_figure(prefix.with_suffix(".csv"))
    cells = claims.read_evidence(str(prefix.with_suffix(".evidence.json")))
    assert claims.evidence_path("joint", "figure3") == "results/joint/figure3.evidence.json"
    assert set(cells) == set(points) and len(cells) == 2 * 3 * 3
    for key, cell in cells.items():
        assert cell.kind == "meteor" and cell.labels == points[key].labels == ("seed 1", "seed 2")
        assert inference.seed_scores(cell, np.ones((1, len(references))))[0] == pytest.approx(
            points[key].replicates, rel=1e-12
        )


def test_figure2_writes_each_points_sentence_statistics_as_its_evidence(tmp_path, monkeypatch):
    """Figure 2's evidence.json has a `bleu` cell at each point of its CSV (NMT-joint at each d_j, the
    baselines' lines at no x): each seed's BLEU statistics per test sentence, whose corpus BLEU is the
    score the figure plots (sacrebleu's, on tokenized text); the claims read this file for it. The
    rule lists the files they come from."""
    import sacrebleu

    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("joint", "figure2")
    ctx = Context(seeds=(1, 2), pairs={"wmt17": ("de-en",)})
    panel = next(p for p in artefact.panels if not ctx.status(p.column))
    rng = random.Random(3)
    words = "the a of zebra okapi runs dog cat green tea".split()
    references = [" ".join(rng.choices(words, k=rng.randint(4, 9))) for _ in range(15)]
    Path(layout.references_path(panel.column)).parent.mkdir(parents=True)
    Path(layout.references_path(panel.column)).write_text("\n".join(references) + "\n")
    for experiment in [e for _, e in panel.points] + [b.experiment for b in panel.baselines]:
        for job in ctx.jobs(panel.column, experiment):
            hypotheses = [" ".join(w if rng.random() < 0.7 else "xx" for w in r.split()) for r in references]
            hypothesis = Path(layout.hypothesis_path(*dataclasses.astuple(job), panel.search, tokenized=True))
            hypothesis.parent.mkdir(parents=True, exist_ok=True)
            hypothesis.write_text("\n".join(hypotheses) + "\n")
            bleu = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score
            Path(layout.score_path(*dataclasses.astuple(job), panel.search, "bleu_tok")).write_text(
                json.dumps({"score": bleu})
            )
            Path(layout.metrics_path(job)).write_text(json.dumps({"epoch": 1, "dev_bleu": 20.0, "best": True}) + "\n")
    assert set(layout.inputs(artefact, ctx, "joint", "figure2")) == {
        str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file()
    }
    prefix = tmp_path / "results/joint/figure2"
    figures.draw(artefact, ctx, "joint", "figure2", "title", "data", prefix)
    points = evidence.read_figure(prefix.with_suffix(".csv"))
    cells = claims.read_evidence(str(prefix.with_suffix(".evidence.json")))
    assert claims.evidence_path("joint", "figure2") == "results/joint/figure2.evidence.json"
    assert set(cells) == set(points) and len(cells) == len(panel.points) + len(panel.baselines)
    for key, cell in cells.items():
        assert cell.kind == "bleu" and cell.labels == points[key].labels == ("seed 1", "seed 2")
        assert inference.seed_scores(cell, np.ones((1, len(references))))[0] == pytest.approx(
            points[key].replicates, rel=1e-9
        )


def test_meteor_bins_without_sentence_statistics_say_how_to_rerun():
    panel = registry.artefact("joint", "figure3").panels[0]
    stale = {"parameters": {}, "bins": {b: {"score": 0.5} for b in panel.bins}}  # written before they were kept
    with pytest.raises(ValueError, match="old.json has no per-sentence statistics.*--forcerun meteor_by_frequency"):
        figures.meteor_cells(panel, "NMT", [artefacts.Job("wmt17", "en-de", "e", 1)], [stale], ["old.json"])


def test_an_empty_panel_writes_no_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    prefix = tmp_path / "figure1"
    figures.draw(
        registry.artefact("tying", "figure1"), Context(seeds=(1,), pairs={}), "tying", "figure1", "t", "d", prefix
    )
    assert prefix.with_suffix(".csv").read_text() == ",".join(evidence.FIGURE_COLUMNS) + "\n"
    assert evidence.read(prefix.with_suffix(".evidence.json")) == {}  # a figure of values: no per-unit evidence


def run_benchmark(kind: str, experiments: list[str], settings: dict, out: Path) -> dict:
    benchmark.main([kind, "--settings", json.dumps(settings), "--experiments", *experiments, "--out", str(out)])
    return json.loads(out.read_text())


def test_table4_times_five_repeats_and_shows_their_sd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("vmf", "table4")
    result = run_benchmark(
        "output-layers", [row.experiment for row in artefact.rows], TINY, Path(layout.benchmark_path("vmf", "table4"))
    )
    assert result["settings"]["repeats"] == benchmark.REPEATS >= 5 and result["settings"]["steps_per_repeat"] == 1
    columns, rows, _ = analysis.table(artefact, Context(seeds=(1,), pairs={}), "vmf", "table4")
    cells = {c.key: c for c in table_evidence.cells(artefact, Context(seeds=(1,), pairs={}), "vmf", "table4")}
    for name, key in (("ms per batch", "ms_repeats"), (artefacts.DECODING_MS, "decode_ms_repeats")):
        assert columns.index(f"{name} ours sd") == columns.index(f"{name} ours") + 1
        for row in rows:
            repeats = result["rows"][row["experiment"]][key]
            assert len(repeats) >= 5 and row[f"{name} ours"] == pytest.approx(statistics.fmean(repeats), abs=0.01)
            assert row[f"{name} ours sd"] == pytest.approx(statistics.stdev(repeats), abs=0.01)
            cell = cells[row["experiment"], name, None]
            assert cell.kind == "value" and cell.replicates == tuple(repeats)
            assert cell.labels == evidence.repeat_labels(5)


def test_joint_table4_times_five_repeats_per_share_and_shows_their_sd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    artefact = registry.artefact("joint", "table4")
    settings = {**TINY, "sample_shares": list(artefact.shares), "repeats": 6}
    result = run_benchmark(
        "sampling", [row.experiment for row in artefact.rows], settings, Path(layout.benchmark_path("joint", "table4"))
    )
    columns, rows, _ = analysis.table(artefact, Context(seeds=(1,), pairs={}), "joint", "table4")
    cells = {c.key: c for c in table_evidence.cells(artefact, Context(seeds=(1,), pairs={}), "joint", "table4")}
    for share in artefact.shares:
        assert f"{share:.0%} ours sd" in columns
        for row in rows:
            repeats = result["repeats"][row["experiment"]][f"{share:g}"]
            assert len(repeats) == 6 and row[f"{share:.0%} ours"] == pytest.approx(statistics.fmean(repeats), abs=0.1)
            assert row[f"{share:.0%} ours sd"] == pytest.approx(statistics.stdev(repeats), abs=0.1)
            assert cells[row["experiment"], f"{share:.0%}", None].replicates == tuple(repeats)


def test_fewer_than_five_repeats_are_refused():
    with pytest.raises(ValueError, match="at least 5"):
        benchmark.repeat_plan({"steps": 10, "repeats": 4})
    assert benchmark.repeat_plan({"steps": 10}) == (5, 2) and benchmark.repeat_plan({"steps": 3}) == (5, 1)


def test_a_meteor_columns_evidence_is_its_sentence_scores(tmp_path, monkeypatch):
    """vMF Table 2's METEOR (nltk's, the mean of sentence scores) has per-sentence evidence of kind
    `mean` whose number is the table's, not BLEU statistics; a score file without sentence scores
    (the jar's) gives none; a run still learning when it stopped says so on its cell."""
    from workflow_src.report import render

    monkeypatch.chdir(tmp_path)
    references = ["the cat sat on the mat", "a dog runs in the park", "we like green tea"]
    hypotheses = ["the cat sat on a mat", "a dog ran in the park", "we like tea"]
    result = meteor.meteor_nltk(hypotheses, references, "en", None)
    column = artefacts.Column("wmt16", "de-en", "meteor", "METEOR")
    jobs = [artefacts.Job("wmt16", "de-en", "e", 1)]
    metrics = Path(layout.metrics_path(jobs[0]))
    metrics.parent.mkdir(parents=True)
    metrics.write_text(
        "".join(json.dumps({"epoch": e, "dev_bleu": b, "best": True}) + "\n" for e, b in ((1, 20.0), (2, 30.0)))
    )
    cells = render.mean_evidence({("e", column): [result["sentence_scores"]]}, {("e", column): jobs})
    assert [(c.row, c.column, c.kind, c.labels) for c in cells] == [("e", "METEOR", "mean", ("seed 1",))]
    assert (
        cells[0].unsettled
        == "not plateaued when its training stopped (seed 1: development BLEU 20.0 → 30.0 at epoch 2)"
    )
    assert inference.observed(cells[0]) == pytest.approx(result["score"], abs=0.005)
    assert render.mean_evidence({("e", column): [None]}, {("e", column): jobs}) == []
