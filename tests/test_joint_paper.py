"""The joint paper wired into the pipeline: its experiments in the registry, the output forms in
the seq2seq model sharing the decoder's input embedding, sampled training, and Table 2's
difference and significance against each block's NMT."""

import json

import pytest
import torch

from tests.test_train import SPEC, data, metrics, run  # noqa: F401  (data: the training fixture)
from workflow_src import layout, registry, render
from workflow_src.model import joint as joint_layer
from workflow_src.model.joint import JointOutput
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.nmt_data import load_model
from workflow_src.score import bleu
from workflow_src.papers import joint


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
    ctx = registry.Context(seeds=(1,), pairs={"wmt17": ("de-en",)})
    assert ctx.candidates(chosen.experiment, chosen.tune) == list(chosen.tune)


def test_spec_takes_the_architecture_depth_and_the_bpe_vocabulary():
    config = {"model": {"encoder_layers": 1, "decoder_layers": 1, "hidden": 8, "src_embedding": 4, "tgt_embedding": 4,
                        "dropout": 0.0, "input_feed": False},
              "architectures": {"joint": {"hidden": 16, "tgt_embedding": 16, "dropout": 0.3}},
              "datasets": {"wmt17": {"src_vocab_size": 50, "tgt_vocab_size": 50, "emb_vocab_size": 50,
                                     "bpe_merges": {"src": 10, "tgt": 10}, "bpe_sizes": {"32k": 300}}},
              "train": {"device": "cpu", "lr": {"joint": 1e-3}, "batch_size": 4, "max_epochs": 1, "patience": 1,
                        "selection": "bleu", "clip": 5.0, "init_scale": 0.1}}
    spec = layout.resolve_spec(config, "wmt17", "de-en", joint.name("32k", "joint", 512, layers=3), 1)
    assert spec["model"] == {"encoder_layers": 3, "decoder_layers": 3, "hidden": 16, "src_embedding": 4,
                             "tgt_embedding": 16, "dropout": 0.3, "input_feed": False}
    assert spec["vocab"] == {"src_size": None, "tgt_size": None} and spec["train"]["lr"] == 1e-3
    assert layout.unit_files("wmt17", "de-en", "bpe", "tgt", config, "32k")["train"].endswith("/bpe300/train.en")
    with pytest.raises(ValueError, match="bpe_sizes: no BPE vocabulary '64k'"):
        layout.unit_files("wmt17", "de-en", "bpe", "tgt", config, "64k")
    with pytest.raises(ValueError, match="architectures: no 'joint' configured"):
        layout.resolve_spec({**config, "architectures": {}}, "wmt17", "de-en", joint.name("32k", "nmt"), 1)


@pytest.mark.parametrize("form", ["nmt", "tied", "bilinear", "output", "context", "joint"])
def test_each_form_shares_the_decoders_input_embedding(form):
    spec = {**SPEC, "output_form": form, "joint_dim": 24 if form == "joint" else None, "sample_share": None,
            "model": {**SPEC["model"], "hidden": 16, "tgt_embedding": 16}}
    model = Seq2Seq(spec, 30, 40, pad=1)
    assert isinstance(model.output, JointOutput) and model.output.variant == form
    assert (model.output.word_vectors is model.decoder.embed.weight) == (form != "nmt")
    trainable = sum(p.numel() for p in model.parameters())
    untied = sum(p.numel() for p in Seq2Seq({**spec, "output_form": "nmt", "joint_dim": None}, 30, 40, pad=1).parameters())
    # a shared E counts once: the form replaces NMT's V x d_h + V output layer by its own parameters
    own = model.output.own_parameter_count()
    assert untied - trainable == 40 * 16 + 40 - own
    assert own == joint_layer.parameter_count(form, 40, 16, 16, spec["joint_dim"])


def test_a_joint_model_with_sampled_training_learns(data, tmp_path):
    spec = {**SPEC, "output_form": "joint", "joint_dim": 48, "sample_share": 0.5,
            "model": {**SPEC["model"], "hidden": 64, "tgt_embedding": 32, "input_feed": False}}
    result = run(data, tmp_path, {**spec, "train": {**SPEC["train"], "max_epochs": 6, "lr": 0.01}})
    assert result.returncode == 0, result.stderr
    history = metrics(tmp_path)
    assert history[-1]["dev_loss"] < history[0]["dev_loss"]  # the full softmax, though training sampled
    assert max(m["dev_bleu"] for m in history) > 2.0
    model, *_ = load_model(tmp_path / "model.pt", torch.device("cpu"))
    assert model.output.word_vectors is model.decoder.embed.weight  # still shared after saving and loading
    assert history[0]["parameters"] == sum(p.numel() for p in model.parameters())


def test_differences_and_significance_levels_against_each_rows_baseline(tmp_path, monkeypatch):
    """A system equal to the reference beats a poor baseline at p < .001 (‡); the baseline's twin
    gets no mark; Δ is against the baseline row; BLEU and |Θ| come from the bleu_tok scores and the
    training metrics."""
    monkeypatch.chdir(tmp_path)
    column = registry.Column("wmt17", "de-en", "bleu_tok", "De→En")
    references = [f"the house number {i} is small and the garden is green" for i in range(60)]
    outputs = {"base": [f"a dog {i} runs" for i in range(60)], "twin": [f"a dog {i} runs" for i in range(60)],
               "good": references}
    data = tmp_path / layout.data_dir("wmt17", "de-en") / "tok"
    data.mkdir(parents=True)
    (data / "test.en").write_text("\n".join(references) + "\n")
    for parameters, (name, lines) in enumerate(outputs.items(), start=100):
        folder = tmp_path / layout.model_dir("wmt17", "de-en", name, 1)
        folder.mkdir(parents=True)
        (folder / "test.greedy.hyp.tok").write_text("\n".join(lines) + "\n")
        (folder / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "dev_bleu": 1.0, "best": True, "parameters": parameters}) + "\n")
        (folder / "test.greedy.bleu_tok.json").write_text(json.dumps(bleu(lines, references, tokenize="none")))
    table = registry.ScoreTable("t", (column,), tuple(registry.Row(name, {"De→En": 10.0, "De→En |Θ|": 1e6}, {}, baseline="base")
                                                       for name in outputs), (), significance_levels=joint.LEVELS, parameters=True)
    ctx = registry.Context(seeds=(1,), pairs={"wmt17": ("de-en",)})
    _, rows, footer = render.score_table(table, ctx)
    by_name = {row["experiment"]: row for row in rows}
    assert by_name["good"]["De→En significance"] == "‡" and by_name["good"]["De→En Δ"] > 50
    assert by_name["twin"]["De→En significance"] == "" and by_name["twin"]["De→En Δ"] == 0
    assert "De→En Δ" not in by_name["base"]
    assert [by_name[n]["De→En |Θ| ours"] for n in outputs] == [100, 101, 102]
    assert "tok:none" in by_name["good"]["signature"] and any("p < 0.001" in line for line in footer)


def test_nearest_representations_by_cosine_leave_out_the_query_and_specials():
    from workflow_src.representations import nearest, representations
    vectors = torch.tensor([[1.0, 0.0], [0.9, 0.1], [1.0, 0.05], [0.0, 1.0], [-1.0, 0.0]])
    assert [i for i, _ in nearest(vectors, 0, 3, excluded=[1])] == [2, 3, 4]
    spec = {**SPEC, "output_form": "joint", "joint_dim": 7, "sample_share": None,
            "model": {**SPEC["model"], "hidden": 16, "tgt_embedding": 16}}
    torch.manual_seed(0)
    model = Seq2Seq(spec, 30, 12, pad=0)
    itos = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(8)]
    result = representations(model, itos, ["w0", "w5", "zebra"], top=3)
    assert result["missing"] == ["zebra"]
    E = model.decoder.embed.weight.detach()
    g_out = torch.tanh(E @ model.output.g_out[0].weight.detach().T + model.output.g_out[0].bias.detach())
    for query in ("w0", "w5"):
        for side, vectors in (("input", E), ("output", g_out)):
            cosine = torch.nn.functional.cosine_similarity(vectors[itos.index(query)][None].double(), vectors.double())
            ranked = [itos[i] for i in cosine.argsort(descending=True).tolist() if i >= 4 and itos[i] != query]
            assert [piece for piece, _ in result["queries"][query][side]] == ranked[:3]
