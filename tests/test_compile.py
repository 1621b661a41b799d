"""config `train.compile` (workflow_src/model/compilation.py): the compiled decoder step and LM segment
compute what the eager ones do, on the CPU with inductor; a whole fused epoch compiles a bounded
number of times; `graphs` needs CUDA; eager specs are unchanged and compiled models save the eager
model's state_dict."""

import copy

import pytest
import torch
import yaml

from tests import fixed_step
from tests.conftest import LM_SPEC, REPO, TRANSLATION_SPEC, random_corpus_arguments, translation_spec
from workflow_src.layout import resolve_spec
from workflow_src.lm_specs import resolve_lm_spec
from workflow_src.model import compilation
from workflow_src.model.lm import LSTMLanguageModel, unrolled_lstm
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.specs import TrainSpec, load
from workflow_src.train import train_lm

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
# fixed_step's tiny softmax model without dropout, fused (translation_spec fills in the rest)
SPEC = {"experiment": "t", "compile": "fuse", "model": {**fixed_step.BASE["model"], "dropout": 0.0}}
PAD, BOS, EOS = 0, 2, 3
CPU = torch.device("cpu")


def eager_and_compiled(entries: dict) -> tuple[Seq2Seq, Seq2Seq]:
    spec = translation_spec(entries)
    torch.manual_seed(0)
    eager = Seq2Seq(spec, 20, 30, PAD)
    compiled = copy.deepcopy(eager)
    compilation.apply(compiled, spec, CPU)
    return eager, compiled


def batch():
    generator = torch.Generator().manual_seed(1)
    lengths = torch.tensor([6, 5, 3, 2])
    src = torch.randint(4, 20, (4, 6), generator=generator) * (torch.arange(6)[None] < lengths[:, None])
    tgt = torch.randint(4, 30, (4, 5), generator=generator)
    return src, lengths, tgt


def assert_close_to_eager(compiled: torch.Tensor, eager: torch.Tensor, name: str = "") -> None:
    """Within 1e-5 relative, element-wise or to the tensor's largest entry (a summed gradient
    entry near zero keeps the absolute error of its large terms, reassociated by the compiler)."""
    torch.testing.assert_close(
        compiled, eager, rtol=1e-5, atol=1e-5 * eager.abs().max().item(), msg=lambda message: f"{name}: {message}"
    )


def test_fused_decoder_step_gives_eager_loss_gradients_greedy_words_and_state_dict():
    eager, compiled = eager_and_compiled(SPEC)
    src, lengths, tgt = batch()
    losses = []
    for model in (eager, compiled):
        loss, _ = model.loss(src, lengths, tgt, tgt, PAD)
        loss.backward()
        losses.append(loss)
    torch.testing.assert_close(losses[1], losses[0], rtol=1e-5, atol=0)
    for (name, p), q in zip(eager.named_parameters(), compiled.parameters()):
        assert_close_to_eager(q.grad, p.grad, name)
    words = [model.eval().greedy(src, lengths, BOS, EOS, [PAD, BOS], max_len=8)[0] for model in (eager, compiled)]
    assert torch.equal(words[0], words[1])
    assert compiled.decoder.compiled_step is not None
    assert list(compiled.state_dict()) == list(eager.state_dict())  # checkpoints as eager's


def test_compiled_step_without_input_feeding_decodes_the_eager_words():
    """That step runs nn.LSTM, which dynamo traces only with `allow_rnn` (`compilation.compiled`)."""
    eager, compiled = eager_and_compiled({**SPEC, "model": {**SPEC["model"], "input_feed": False}})
    src, lengths, _ = batch()
    words = [model.eval().greedy(src, lengths, BOS, EOS, [PAD, BOS], max_len=8)[0] for model in (eager, compiled)]
    assert torch.equal(words[0], words[1])


def test_fused_unrolled_lstm_gives_eager_outputs_and_gradients():
    torch.manual_seed(2)
    model = LSTMLanguageModel(13, 8, dropout=0.5)
    compilation.apply(model, train_lm.resolve({**LM_SPEC, "compile": "fuse"}), CPU)
    x = torch.randn(35, 4, 8)
    state = tuple(torch.randn(2, 4, 8) for _ in range(2))
    masks = model.sample_masks(4, x)[1:]
    results = []
    for run in (unrolled_lstm, model.unrolled):
        inputs = x.clone().requires_grad_()
        out, (h, c) = run(model.rnn, inputs, state, masks)
        model.rnn.zero_grad()
        (out.sin().sum() + h.sum() + c.cos().sum()).backward()
        results.append([out, h, c, inputs.grad, *(p.grad.clone() for p in model.rnn.parameters())])
    assert model.unrolled is not unrolled_lstm
    assert list(model.state_dict()) == list(LSTMLanguageModel(13, 8).state_dict())
    for eager, compiled in zip(*results):
        assert_close_to_eager(compiled, eager)


@pytest.mark.parametrize(
    "setting, message",
    [
        ("graphs", "train.compile: graphs captures CUDA graphs and needs a CUDA device, not cpu"),
        ("fused", "train.compile: 'fused' is not one of off, fuse, graphs"),
    ],
)
def test_graphs_off_cuda_and_unknown_settings_name_the_key(setting, message):
    with pytest.raises(ValueError, match=message):
        compilation.apply(
            Seq2Seq(translation_spec(SPEC), 20, 30, PAD), translation_spec({**SPEC, "compile": setting}), CPU
        )


def test_off_is_the_default_and_fuse_joins_the_specs():
    """`off` is what an unset train.compile means; `fuse` is in the spec, and the language-model
    spec accepts it; `graphs` also brings the translation spec its length buckets (config
    train.length_buckets, required then, rising), which the other settings leave null."""

    def specs(setting, **train):
        config = copy.deepcopy(CONFIG)
        if setting is None:
            config["train"].pop("compile")
        else:
            config["train"]["compile"] = setting
        config["train"].update(train)
        return (
            resolve_spec(config, "iwslt16", "fr-en", "word2word-ce", seed=1),
            resolve_lm_spec(config, "ptb", "lm-small-vd", seed=1),
        )

    assert specs("off") == specs(None)
    assert all(spec["compile"] == "off" for spec in specs("off"))
    assert all(spec.get("length_buckets") is None for spec in specs("off") + specs("fuse"))
    translation, language_model = specs("fuse")
    assert translation["compile"] == language_model["compile"] == "fuse"
    assert train_lm.resolve(language_model).compile == "fuse"
    translation, language_model = specs("graphs")
    assert translation["length_buckets"] == CONFIG["train"]["length_buckets"] and "length_buckets" not in language_model
    assert train_lm.resolve(language_model).compile == "graphs"
    with pytest.raises(ValueError, match=r"train.length_buckets: \[8, 4\] is not a rising list"):
        specs("graphs", length_buckets=[8, 4])


def test_a_fused_epoch_with_validation_and_decoding_compiles_the_step_a_bounded_number_of_times(tmp_path, monkeypatch):
    """`fuse` compiles the decoder step a bounded number of times, not once per change of grad mode,
    batch size, source length (a multiple of 8) and argument aliasing, which hits dynamo's limit of 8
    (docs/gpu_check/2026-11-26-h200-partial.md). One epoch of train.train under `fuse` with
    torch.compile's "eager" backend (dynamo's tracing and guards; inductor would take minutes
    here): sources of 1 to 30 words (S of 8 to 32), batches of 5 and a last one of 3, validation
    without gradients and greedy decoding of the development set. The step compiles at least
    once for training and once without gradients, and at most 4 times."""
    from torch._dynamo.utils import counters

    from workflow_src.train import train

    monkeypatch.setattr(compilation, "BACKEND", "eager")
    torch._dynamo.reset()
    counters.clear()
    args = random_corpus_arguments(tmp_path, {"train": 23, "dev": 7}, longest=30, words=30)
    spec = load(
        TrainSpec,
        {
            **TRANSLATION_SPEC,
            "experiment": "t",
            "compile": "fuse",
            "model": {**SPEC["model"], "encoder_bidirectional": True, "input_feed": True},
            "vocab": {"src_size": 100, "tgt_size": 100},
            "train": {**TRANSLATION_SPEC["train"], "seed": 1, "batch_size": 5, "max_epochs": 1},
        },
        "spec",
    )
    try:
        train.train(spec, args, CPU)
    finally:
        torch._dynamo.reset()
    assert 2 <= counters["stats"]["unique_graphs"] <= 4, dict(counters["stats"])
