"""The joint paper wired into the pipeline: its experiments in the registry, the output forms in
the seq2seq model sharing the decoder's input embedding, sampled training, and Table 2's
difference and significance against each block's NMT."""

import json

import pytest
import torch
import yaml

from tests.conftest import (
    REPO,
    TRANSLATION_SPEC,
    read_csv,
    run_training,
    snakemake,
    training_metrics,
    translation_spec,
    unpinned,
)
from workflow_src import artefacts, layout, registry
from workflow_src.data import demo_language, demo_world
from workflow_src.data.sources import local_path
from workflow_src.model import joint as joint_layer
from workflow_src.model.joint import JointOutput
from workflow_src.model.nmt_data import load_model
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.papers import joint, joint_claims
from workflow_src.report import claims, render
from workflow_src.score import evidence
from workflow_src.score.score import bleu


def test_sampling_follows_section_4_2():
    """25% sampling for every model at 128K, and for joint models with d_j >= 2048 below it."""
    for name, e in joint.EXPERIMENTS.items():
        expected = 0.25 if e.bpe == "128k" or (e.joint_dim or 0) >= 2048 else None
        assert e.sample_share == expected, name
        assert e.architecture == "joint" and e.lr_group == "joint" and e.source_unit == e.target_unit == "bpe"


def test_table2_has_three_models_per_vocabulary_against_its_nmt():
    table = registry.artefact("joint", "table2")
    assert [row.label["Model"] for row in table.rows] == ["NMT", "NMT-tied", "NMT-joint"] * 3
    for row in table.rows:
        bpe = registry.experiment(row.experiment).bpe
        assert row.baseline == joint.name(bpe, "nmt")
        assert set(row.paper) == {c.name for c in joint.DIRECTIONS} | {f"{c.name} |Θ|" for c in joint.DIRECTIONS}
    chosen = table.rows[2]
    assert chosen.tune == tuple(joint.name("32k", "joint", d) for d in (512, 2048, 4096))
    assert chosen.paper["De→En |Θ|"] == pytest.approx(48.8e6) and chosen.paper["De→En"] == 18.11
    ctx = artefacts.Context(seeds=(1,), pairs={"wmt17": ("de-en",)})
    assert ctx.candidates(chosen.experiment, chosen.tune) == list(chosen.tune)


def test_the_highest_score_claim_compares_each_columns_best_cell_with_every_other_vocabulary():
    """§4.3's "highest scores ... namely 128K, 64K, 128K and 64k" (C22): in the paper's own Table 2, the
    row each direction's checks take is that column's maximum, every check holds, and it is compared with
    all six cells of the other two vocabularies, none of its own."""
    table = registry.artefact("joint", "table2")
    claim = next(c for c in joint_claims.CLAIMS if c.id == "C22")
    for column in joint.DIRECTIONS:
        best = max(table.rows, key=lambda row: row.paper[column.name])
        checks = [c for c in claim.checks if c.column == column.name]
        assert {c.row for c in checks} == {best.experiment}
        assert registry.experiment(best.experiment).bpe == joint_claims.HIGHEST_AT[column]
        compared = {registry.experiment(c.than).bpe for c in checks}
        assert len(checks) == 6 and compared == set(joint.BPE_SIZES) - {joint_claims.HIGHEST_AT[column]}
        assert all(claims.paper_gap("joint", c) > 0 for c in checks)


def test_the_footnote_claim_tests_the_one_cell_c1_leaves_out():
    """Footnote 5's "Except in the case of Fi → En with |V| ≈ 64K" (C24) is the cell C1's claim over NMT
    skips: C24 checks NMT above both other rows there, which the paper's own Table 2 bears out, and C1
    compares nothing there."""
    by_id = {c.id: c for c in joint_claims.CLAIMS}
    bpe, column = joint_claims.NOT_CLAIMED_OVER_NMT
    nmt = joint.name(bpe, "nmt")
    assert {(c.row, c.column) for c in by_id["C24"].checks} == {(nmt, column)}
    assert {c.than for c in by_id["C24"].checks} == {joint.name(bpe, "tied"), joint.name(bpe, "joint", 512)}
    assert all(claims.paper_gap("joint", c) > 0 for c in by_id["C24"].checks)
    assert not [c for c in by_id["C1"].checks if (c.column, c.than) == (column, nmt)]


def test_spec_takes_the_architecture_depth_and_the_bpe_vocabulary():
    config = {
        "model": {
            "encoder_layers": 1,
            "decoder_layers": 1,
            "hidden": 8,
            "src_embedding": 4,
            "tgt_embedding": 4,
            "dropout": 0.0,
            "input_feed": False,
        },
        "architectures": {"joint": {"hidden": 16, "tgt_embedding": 16, "dropout": 0.3}},
        "datasets": {
            "wmt17": {
                "src_vocab_size": 50,
                "tgt_vocab_size": 50,
                "emb_vocab_size": 50,
                "bpe_merges": {"src": 10, "tgt": 10},
                "bpe_sizes": {"32k": 300},
                "max_len": 50,
                "max_len_unit": "piece",
            }
        },
        "train": {
            "device": "cpu",
            "lr": {"joint": 1e-3},
            "batch_size": 4,
            "max_epochs": 1,
            "patience": 1,
            "selection": "bleu",
            "clip": 5.0,
            "init_scale": 0.1,
        },
    }
    spec = layout.resolve_spec(config, "wmt17", "de-en", joint.name("32k", "joint", 512, layers=3), 1)
    assert spec["model"] == {
        "encoder_layers": 3,
        "decoder_layers": 3,
        "hidden": 16,
        "src_embedding": 4,
        "tgt_embedding": 16,
        "dropout": 0.3,
        "input_feed": False,
        "encoder_bidirectional": True,
    }
    assert spec["vocab"] == {"src_size": None, "tgt_size": None} and spec["train"]["lr"] == 1e-3
    assert layout.unit_files("wmt17", "de-en", "bpe", "tgt", config, "32k")["train"].endswith("/bpe300/train.en")
    with pytest.raises(ValueError, match="bpe_sizes: no BPE vocabulary '64k'"):
        layout.unit_files("wmt17", "de-en", "bpe", "tgt", config, "64k")
    with pytest.raises(ValueError, match="architectures: no 'joint' configured"):
        layout.resolve_spec({**config, "architectures": {}}, "wmt17", "de-en", joint.name("32k", "nmt"), 1)


@pytest.mark.parametrize("form", ["nmt", "tied", "bilinear", "output", "context", "joint"])
def test_each_form_shares_the_decoders_input_embedding(form):
    spec = {
        **TRANSLATION_SPEC,
        "output_form": form,
        "joint_dim": 24 if form == "joint" else None,
        "sample_share": None,
        "model": {**TRANSLATION_SPEC["model"], "hidden": 16, "tgt_embedding": 16},
    }
    model = Seq2Seq(translation_spec(spec), 30, 40, pad=1)
    assert isinstance(model.output, JointOutput) and model.output.variant == form
    assert (model.output.word_vectors is model.decoder.embed.weight) == (form != "nmt")
    trainable = sum(p.numel() for p in model.parameters())
    untied = sum(
        p.numel()
        for p in Seq2Seq(
            translation_spec({**spec, "output_form": "nmt", "joint_dim": None}), 30, 40, pad=1
        ).parameters()
    )
    # a shared E counts once: the form replaces NMT's V x d_h + V output layer by its own parameters
    own = model.output.own_parameter_count()
    assert untied - trainable == 40 * 16 + 40 - own
    assert own == joint_layer.parameter_count(form, 40, 16, 16, spec["joint_dim"])


def test_a_joint_model_with_sampled_training_learns(data, tmp_path):
    spec = {
        **TRANSLATION_SPEC,
        "output_form": "joint",
        "joint_dim": 48,
        "sample_share": 0.5,
        "model": {**TRANSLATION_SPEC["model"], "hidden": 64, "tgt_embedding": 32, "input_feed": False},
    }
    result = run_training(
        data, tmp_path, {**spec, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 10, "lr": 0.01}}
    )
    assert result.returncode == 0, result.stderr
    history = training_metrics(tmp_path)
    assert history[-1]["dev_loss"] < history[0]["dev_loss"]  # the full softmax, though training sampled
    assert (
        max(m["dev_bleu"] for m in history) > 10.0
    )  # 20 after 10 epochs; 6 epochs left it at about 2, too close to call
    model, *_ = load_model(tmp_path / "model.pt", torch.device("cpu"))
    assert model.output.word_vectors is model.decoder.embed.weight  # still shared after saving and loading
    assert history[0]["parameters"] == sum(p.numel() for p in model.parameters())


def test_differences_and_significance_levels_against_each_rows_baseline(tmp_path, monkeypatch):
    """A system equal to the reference beats a poor baseline at p < .001 (‡); the baseline's twin
    gets no mark; Δ is against the baseline row; BLEU and |Θ| come from the bleu_tok scores and the
    training metrics."""
    monkeypatch.chdir(tmp_path)
    column = artefacts.Column("wmt17", "de-en", "bleu_tok", "De→En")
    references = [f"the house number {i} is small and the garden is green" for i in range(60)]
    outputs = {
        "base": [f"a dog {i} runs" for i in range(60)],
        "twin": [f"a dog {i} runs" for i in range(60)],
        "good": references,
    }
    data = tmp_path / layout.data_dir("wmt17", "de-en") / "tok"
    data.mkdir(parents=True)
    (data / "test.en").write_text("\n".join(references) + "\n")
    for parameters, (name, lines) in enumerate(outputs.items(), start=100):
        folder = tmp_path / layout.model_dir("wmt17", "de-en", name, 1)
        folder.mkdir(parents=True)
        (folder / "test.greedy.hyp.tok").write_text("\n".join(lines) + "\n")
        (folder / "metrics.jsonl").write_text(
            json.dumps({"epoch": 1, "dev_bleu": 1.0, "best": True, "parameters": parameters}) + "\n"
        )
        (folder / "test.greedy.bleu_tok.json").write_text(json.dumps(bleu(lines, references, tokenize="none")))
    table = artefacts.ScoreTable(
        "t",
        (column,),
        tuple(artefacts.Row(name, {"De→En": 10.0, "De→En |Θ|": 1e6}, {}, baseline="base") for name in outputs),
        (),
        significance_levels=joint.LEVELS,
        parameters=True,
    )
    ctx = artefacts.Context(seeds=(1,), pairs={"wmt17": ("de-en",)})
    _, rows, footer, _ = render.score_table(table, ctx)
    by_name = {row["experiment"]: row for row in rows}
    assert by_name["good"]["De→En significance"] == "‡" and by_name["good"]["De→En Δ"] > 50
    assert by_name["twin"]["De→En significance"] == "" and by_name["twin"]["De→En Δ"] == 0
    assert "De→En Δ" not in by_name["base"]
    assert [by_name[n]["De→En |Θ| ours (M)"] for n in outputs] == [
        "0.0001",
        "0.000101",
        "0.000102",
    ]  # millions, as the paper
    assert by_name["base"]["De→En |Θ| paper (M)"] == "1"
    assert "tok:none" in by_name["good"]["signature"] and any("p < 0.001" in line for line in footer)


def test_nearest_representations_by_cosine_leave_out_the_query_and_specials():
    from workflow_src.score.representations import nearest, representations

    vectors = torch.tensor([[1.0, 0.0], [0.9, 0.1], [1.0, 0.05], [0.0, 1.0], [-1.0, 0.0]])
    assert [i for i, _ in nearest(vectors, 0, 3, excluded=[1])] == [2, 3, 4]
    spec = {
        **TRANSLATION_SPEC,
        "output_form": "joint",
        "joint_dim": 7,
        "sample_share": None,
        "model": {**TRANSLATION_SPEC["model"], "hidden": 16, "tgt_embedding": 16},
    }
    torch.manual_seed(0)
    model = Seq2Seq(translation_spec(spec), 30, 12, pad=0)
    itos = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(7)] + ["▁w7"]
    result = representations(model, itos, ["w0", "w5", "w7", "zebra"], top=3)
    assert result["missing"] == ["zebra"] and len(result["queries"]["w7"]["input"]) == 3  # w7 is the word-initial ▁w7
    E = model.decoder.embed.weight.detach()
    g_out = torch.tanh(E @ model.output.g_out[0].weight.detach().T + model.output.g_out[0].bias.detach())
    for query in ("w0", "w5"):
        for side, vectors in (("input", E), ("output", g_out)):
            cosine = torch.nn.functional.cosine_similarity(vectors[itos.index(query)][None].double(), vectors.double())
            ranked = [itos[i] for i in cosine.argsort(descending=True).tolist() if i >= 4 and itos[i] != query]
            assert [piece for piece, _ in result["queries"][query][side]] == ranked[:3]


@pytest.fixture(scope="module")
def joint_run(tmp_path_factory):
    """The joint paper's artefacts end to end at toy size: WMT17 de-en and en-de generated in the
    real archive layout (config.yaml's member names) and fetched through a local mirror; Table 2
    restricted to its 32K block, Table 5 to depths 1 and 2."""
    workdir = tmp_path_factory.mktemp("joint")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    demo = yaml.safe_load((REPO / "config.demo.yaml").read_text())
    wmt17 = config["datasets"]["wmt17"]
    pairs = ["de-en", "en-de"]
    config["mirrors"] |= {name: str(workdir / "mirror" / name) for name in ("statmt", "statmt-www")}
    unpinned(config)  # the archives are generated, not the real ones
    sources = {
        pair: {
            split: [{**e, "archive": local_path(config, e["archive"])} for e in entries]
            for split, entries in wmt17["sources"][pair].items()
        }
        for pair in pairs
    }
    world = demo_language.World(
        ["de", "en"],
        demo_language.WorldSize(nouns=60, verbs=15, adjectives=10, names=10, two_clause_rate=0, pp_rate=0.1),
        seed=3,
    )
    demo_world.write_wmt_mirror(world, sources, n_train=1200, n_per_set=60)
    config["datasets"] = {
        "wmt17": {
            **wmt17,
            "pairs": pairs,
            "sources": {p: wmt17["sources"][p] for p in pairs},
            "src_vocab_size": 500,
            "tgt_vocab_size": 500,
            "emb_vocab_size": 500,
            "bpe_merges": {"src": 100, "tgt": 100},
            "bpe_sizes": {"32k": 100, "64k": 150, "128k": 200},
        }
    }
    config["monolingual"] = {}
    config["threads"] = {"preprocess": 1, "embeddings": 1, "train": 1}
    config["model"] = {**demo["model"], "hidden": 32, "src_embedding": 16, "tgt_embedding": 16}
    config["architectures"] = {
        "joint": {
            "encoder_layers": 2,
            "decoder_layers": 2,
            "hidden": 32,
            "src_embedding": 16,
            "tgt_embedding": 16,
            "dropout": 0.3,
        }
    }
    config["train"] = {
        **demo["train"],
        "lr": {**demo["train"]["lr"], "joint": 0.01},
        "max_epochs": 2,
        "batch_size": 32,
        "max_epochs_by_group": {},
        "overrides": {},
    }
    config["benchmarks"] = {
        **demo["benchmarks"],
        "sampling_vocab": 2000,
        "sample_shares": [0.5, 0.25, 0.05],
        "steps": 2,
    }
    config["papers"] = {
        "joint": {
            "table1": {"queries": ["wan", "pec", "zebra"]},  # two frequent words of the generated English
            "table2": {"rows": [joint.name("32k", f, d) for f, d in (("nmt", None), ("tied", None), ("joint", 512))]},
            "table3": {},
            "table4": {},
            "table5": {
                "rows": [
                    joint.name("32k", f, d, layers)
                    for f, d in (("nmt", None), ("tied", None), ("joint", 512))
                    for layers in (1, 2)
                ]
            },
            "figure2": {},
            "figure3": {},
        }
    }
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    snakemake(workdir, "--configfile", str(workdir / "config.yaml"), "--cores", "2", "all")
    return workdir


@pytest.mark.workflow
def test_joint_tables_have_bleu_on_tokenized_text_differences_and_parameters(joint_run):
    table2 = read_csv(joint_run / "results/joint/table2.csv")
    assert [r["Model"] for r in table2] == ["NMT", "NMT-tied", "NMT-joint"]
    for row in table2:
        for column in joint.DIRECTIONS:
            if column.pair in ("en-fi", "fi-en"):  # not configured here: empty, and says why
                assert (
                    row[f"{column.name} ours"] == ""
                    and f"{column.name}: pair {column.pair} not configured" in row["note"]
                )
                continue
            # toy models of two epochs translate barely (that they learn: the sampled-training test above)
            assert 0 <= float(row[f"{column.name} ours"]) <= 100 and float(row[f"{column.name} |Θ| ours (M)"]) > 0
            assert set(row[f"{column.name} significance"]) <= {"*", "†", "‡"}
            if row["Model"] != "NMT":
                nmt = float(table2[0][f"{column.name} ours"])
                assert float(row[f"{column.name} Δ"]) == pytest.approx(
                    float(row[f"{column.name} ours"]) - nmt, abs=0.011
                )
        assert "tok:none" in row["signature"]
    assert "De→En: bpe32k-joint" in table2[2]["note"] and "chosen on development BLEU" in table2[2]["note"]
    # tying drops NMT's output matrix: |Θ| of NMT-tied is smaller, by |V| x d_h less what P adds
    assert float(table2[1]["De→En |Θ| ours (M)"]) < float(table2[0]["De→En |Θ| ours (M)"])
    table3 = read_csv(joint_run / "results/joint/table3.csv")
    assert [r["Model"] for r in table3] == [
        "NMT",
        "NMT-tied",
        "Eq. 6",
        "Eq. 7a",
        "Eq. 7b",
        "Eq. 15 (512)",
        "Eq. 15 (2048)",
    ]
    assert all(0 <= float(r["De→En ours"]) <= 100 for r in table3)
    table5 = read_csv(joint_run / "results/joint/table5.csv")
    assert [(r["Model"], r["Layers"]) for r in table5] == [
        (m, d) for m in ("NMT", "NMT-tied", "NMT-joint") for d in ("1", "2")
    ]
    one_layer, two_layers = (float(r["De→En |Θ| ours (M)"]) for r in table5[:2])
    assert one_layer < two_layers
    spec = json.loads(
        (joint_run / "results/models/wmt17/de-en/bpe32k-nmt-layers1/seed1/metrics.jsonl").read_text().splitlines()[0]
    )
    assert f"{spec['parameters'] / 1e6:.4g}" == table5[0]["De→En |Θ| ours (M)"]  # in millions, as the paper
    # the claims' |Θ| (C25, C26): each row's count in the evidence, exact, the number the table rounds
    counts = evidence.read(joint_run / "results/joint/table5.evidence.json")
    for row in table5:
        cell = counts[row["experiment"], artefacts.parameter_column("De→En"), None]
        assert cell.kind == "count" and f"{cell.replicates[0] / 1e6:.4g}" == row["De→En |Θ| ours (M)"]


@pytest.mark.workflow
def test_joint_table1_table4_and_figure2(joint_run):
    rows = read_csv(joint_run / "results/joint/table1.csv")
    assert [r["query"] for r in rows][::5] == ["wan", "pec", "zebra"] and len(rows) == 15
    assert all(r["NMT-joint Output ours"] for r in rows[:10]) and "not one piece" in rows[10]["note"]
    assert rows[0]["NMT-tied Input/Output paper"] == ""  # the paper's queries were replaced by configured ones
    speed = read_csv(joint_run / "results/joint/table4.csv")
    assert [r["experiment"] for r in speed][0] == joint.name("128k", "nmt")
    for row in speed:
        assert all(float(row[f"{share} ours"]) > 0 for share in ("50%", "25%", "5%"))
    assert float(speed[0]["50% ours ratio"]) == 1.0 and float(speed[0]["50% paper ratio"]) == 1.0
    assert (joint_run / "results/joint/figure2.png").stat().st_size > 10000
    hypotheses = (joint_run / "results/models/wmt17/de-en/bpe32k-joint512/seed1/test.beam5.hyp.tok").read_text()
    assert "▁" not in hypotheses and "@@" not in hypotheses  # de-BPE'd


@pytest.mark.workflow
def test_joint_figure3_scores_every_bin_of_both_directions(joint_run):
    assert (joint_run / "results/joint/figure3.png").stat().st_size > 10000
    for pair in ("en-de", "de-en"):
        result = json.loads(
            (
                joint_run / f"results/models/wmt17/{pair}/bpe32k-nmt/seed1/joint-figure3.beam5.meteor_bins.json"
            ).read_text()
        )
        bins = result["bins"]
        assert list(bins) == ["high", "medium", "low"]
        assert all(0 <= b["score"] <= 1 for b in bins.values())
        # the thirds of the output vocabulary: sizes within one of each other, frequent words in the test set
        sizes = [b["units"] for b in bins.values()]
        assert (
            max(sizes) - min(sizes) <= 1
            and bins["high"]["reference_function_words"] > bins["low"]["reference_function_words"]
        )
        assert bins["high"]["score"] > 0
        assert (
            result["parameters"]["delta"] == 0
            and result["parameters"]["alpha"] == joint.METEOR_PARAMETERS[pair[-2:]][0]
        )


@pytest.mark.workflow
def test_joint_run_renders_its_ledger_and_decides_its_claims(joint_run):
    """`all` builds the joint ledger and the claims; Table 2's footer cites the ledger's entries for it."""
    from workflow_src.report import claims_page

    ledger = read_csv(joint_run / "results/joint/deviations.csv")
    assert [r["id"] for r in ledger] == [f"D{i}" for i in range(1, len(joint.DEVIATIONS) + 1)]
    cited = [d.id for d in joint.DEVIATIONS if "table2" in d.artefacts]
    assert (
        f"Deviations: see deviations.md, entries {', '.join(cited)}."
        in (joint_run / "results/joint/table2.md").read_text()
    )
    rows = {r["id"]: r for r in read_csv(joint_run / "results/claims.csv")}
    assert set(rows) == {f"joint:{c.id}" for c in joint_claims.CLAIMS}
    assert all(claims_page.base_verdict(r["verdict"]) in claims.VERDICTS and r["data"] for r in rows.values())
    # En→Fi, Fi→En, 64K and 128K are not configured here: C1 cannot be reproduced, and says why (the
    # two toy cells it can check may still make it "not reproduced")
    assert rows["joint:C1"]["verdict"] != "reproduced" and "not configured" in rows["joint:C1"]["decided by"]
    assert "De→En ours" not in rows["joint:C1"]["ours"] and "against" in rows["joint:C1"]["ours"]
    # Figure 3's claim resamples the test sentences of the figure's evidence file
    assert (joint_run / "results/joint/figure3.evidence.json").exists() and "test sentences" in rows["joint:C9"][
        "decided by"
    ]
