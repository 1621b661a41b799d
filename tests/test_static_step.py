"""The graph-safe training step of `train.compile: graphs`, piece by piece against
today's eager computation on the CPU: the unpacked encoder against the packed one, the fixed-size
sampled vocabulary against today's sampler (the same draws; the same distribution by a
chi-square test), the masked loss and the whole step (loss, gradients, Adam, clipping) against
`Seq2Seq.loss` and train.py's step, the language models' padded segment against
train_lm.train_epoch, static batches and their padding; the capture logic (once per shape,
static inputs refilled, outputs reused) with a CPU stand-in for CUDA graphs; and train.py's
loop with the static step, which a CPU runs uncaptured."""

from __future__ import annotations

import itertools
import json
import random

import pytest
import torch
from scipy import stats

from tests import fixed_step
from tests.conftest import LM_SPEC, TRANSLATION_SPEC, random_corpus_arguments, translation_spec
from workflow_src.data.vocab import Vocab
from workflow_src.model import joint
from workflow_src.model.graphs import Captured
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.seq2seq import Encoder, Seq2Seq
from workflow_src.model.static_batches import bucket, padding_record, static_batch, target_positions
from workflow_src.specs import TrainSpec, load
from workflow_src.train import static_step

PAD = 0


def close(a: torch.Tensor, b: torch.Tensor, name: str = "") -> None:
    """Equal within fp32 rounding: relative 1e-5 of the entry, or of the tensor's largest entry
    (a summed gradient near zero keeps the absolute error of its large terms)."""
    torch.testing.assert_close(
        a, b, rtol=1e-5, atol=1e-5 * max(b.abs().max().item(), 1e-6), msg=lambda message: f"{name}: {message}"
    )


# -- the encoder without packing ----------------------------------------------------------------
@pytest.mark.parametrize("bidirectional, layers", [(False, 1), (False, 2), (True, 1), (True, 2)])
def test_the_unpacked_encoder_is_the_packed_one(bidirectional, layers):
    """Outputs (zero at padding), the final h and c of the last layer (c recomputed in closed
    form), and every gradient through them, within fp32 rounding; eval mode (dropout draws differ)."""
    torch.manual_seed(0)
    encoder = Encoder(20, 6, 8, layers, 0.3, PAD, bidirectional).eval()
    lengths = torch.tensor([9, 3, 5, 1, 7])
    src = torch.randint(1, 20, (5, 11)) * (torch.arange(11)[None] < lengths[:, None])
    results = []
    for packed in (True, False):
        encoder.packed = packed
        encoder.zero_grad()
        memory, (h, c) = encoder(src, lengths)
        (memory.sin().sum() + (1.3 * h).cos().sum() + (0.7 * c).sin().sum()).backward()
        results.append({"memory": memory, "h": h, "c": c, **{n: p.grad.clone() for n, p in encoder.named_parameters()}})
    packed, unpacked = results
    for name in packed:
        close(unpacked[name], packed[name], name)
    assert (unpacked["memory"][3, 1:] == 0).all()


# -- the sampled vocabulary ------------------------------------------------------------------------
def test_the_static_sampler_draws_the_topk_samplers_words_at_a_fixed_size():
    """With every position real, the words of `sample_vocabulary_topk` (the same generator draws);
    with padding, its targets (here the banned <pad>) join nothing; k words whatever the batch,
    every real target among them at the index returned."""
    target = torch.tensor([5, 9, 5, 30, 12])
    for seed in range(5):
        torch.manual_seed(seed)
        ids_topk, positions_topk = joint.sample_vocabulary_topk(target, 40, 0.25, (0, 2))
        torch.manual_seed(seed)
        ids, positions = joint.sample_vocabulary_static(target, torch.ones(5, dtype=torch.bool), 40, 0.25, (0, 2))
        assert torch.equal(ids, ids_topk) and torch.equal(positions, positions_topk)
    padded = torch.tensor([5, 9, 0, 0, 12, 0])
    real = padded != 0
    for seed in range(20):
        torch.manual_seed(seed)
        ids, positions = joint.sample_vocabulary_static(padded, real, 40, 0.25, (0, 2))
        assert len(ids) == 10 and 0 not in ids.tolist() and 2 not in ids.tolist()
        assert torch.equal(ids[positions[real]], padded[real])
        assert ((positions >= 0) & (positions < 10)).all()


def test_the_static_sampler_has_todays_distribution_by_a_chi_square_test():
    """V = 10, <pad> and <s> banned, targets {3, 5} in a batch padded with <pad>: V' is the two
    targets and 3 of the 6 other words, each of the C(6, 3) = 20 subsets equally likely. The static
    sampler's subsets fit that uniform law, and today's CPU sampler's (`sample_vocabulary`) do too,
    and the two samples' frequencies agree (chi-square, p > 0.001 each); a sampler that favours
    low ids fails the same test."""
    target = torch.tensor([3, 5, 0, 3, 0])
    real = target != 0
    others = [1, 4, 6, 7, 8, 9]
    subsets = {s: i for i, s in enumerate(itertools.combinations(others, 3))}
    draws = 1000

    def counts(sample) -> list[int]:
        found = [0] * len(subsets)
        for _ in range(draws):
            ids = set(sample().tolist())
            assert {3, 5} <= ids and not ids & {0, 2}
            found[subsets[tuple(sorted(ids - {3, 5}))]] += 1
        return found

    torch.manual_seed(0)
    static = counts(lambda: joint.sample_vocabulary_static(target, real, 10, 0.5, (0, 2))[0])
    today = counts(lambda: joint.sample_vocabulary(target[real], 10, 0.5, (0, 2))[0])
    low_first = torch.tensor(others)
    biased = counts(lambda: torch.cat([torch.tensor([3, 5]), low_first[torch.randperm(6)[:4].sort().values[:3]]]))
    assert stats.chisquare(static).pvalue > 1e-3
    assert stats.chisquare(today).pvalue > 1e-3
    assert stats.chi2_contingency([static, today]).pvalue > 1e-3
    assert stats.chisquare(biased).pvalue < 1e-6


# -- the translation step --------------------------------------------------------------------------
def vocabulary(size: int = fixed_step.VOCAB) -> Vocab:
    from workflow_src.data.vocab import SPECIALS

    return Vocab(list(SPECIALS) + [f"w{i}" for i in range(size - len(SPECIALS))])


def as_lists(batch) -> tuple[list[list[int]], list[list[int]]]:
    """fixed_step's padded (src, lengths, tgt_in, tgt_out) as id lists (targets without padding)."""
    src, lengths, _, tgt_out = batch
    return ([row[:n].tolist() for row, n in zip(src, lengths)], [row[row != PAD].tolist() for row in tgt_out])


def tiny_model(kind: str, dropout: float = 0.0) -> Seq2Seq:
    torch.manual_seed(11)
    table = torch.nn.functional.normalize(torch.randn(fixed_step.VOCAB, fixed_step.DIM), dim=-1)
    table[0] = 0
    spec = {**fixed_step.BASE, **fixed_step.KINDS[kind]}
    spec["model"] = {**spec["model"], "dropout": dropout}
    return Seq2Seq(translation_spec(spec), fixed_step.VOCAB, fixed_step.VOCAB, PAD, table).train()


BUCKETS = [4, 8]


@pytest.mark.parametrize("kind", list(fixed_step.KINDS))
def test_the_static_step_is_todays_step(kind, monkeypatch):
    """fixed_step's tiny models of every kind: the masked loss over a static batch (5 rows, one
    of them padding; S and T bucketed to 8, the encoder unpacked) and its gradients equal
    `Seq2Seq.loss`'s, and three whole steps (backward, clipping, Adam with its rate a tensor) give
    today's losses and parameters, within fp32 rounding. The sampled softmax draws with today's
    CUDA sampler (`sample_vocabulary_topk`; its law is the CPU sampler's, tested above)."""
    monkeypatch.setattr(joint, "sample_vocabulary", joint.sample_vocabulary_topk)
    vocab = vocabulary()
    batches = fixed_step.batches(5, 3)
    cpu = torch.device("cpu")
    eager, static = tiny_model(kind), tiny_model(kind)
    static.encoder.packed = False
    static_batches = []
    for batch in batches:
        src, tgt = as_lists(batch)
        static_batches.append(static_batch(src, tgt, list(range(len(src))), vocab, vocab, cpu, 5, BUCKETS))
    assert static_batches[0].src.shape == (5, 8) and static_batches[0].tgt_out.shape == (5, 8)

    torch.manual_seed(1)
    loss, n = eager.loss(*batches[0], PAD)
    (loss / n).backward()
    torch.manual_seed(1)
    first = static_batches[0]
    static_loss = static_step.position_losses(static, *first.tensors()[:5]).sum()
    (static_loss / first.token_count).backward()
    close(static_loss, loss, "loss")
    assert first.tokens == n
    for (name, p), q in zip(eager.named_parameters(), static.parameters()):
        if p.grad is not None:
            close(q.grad, p.grad, name)

    eager_losses, static_losses = [], []
    optimiser = torch.optim.Adam([p for p in eager.parameters() if p.requires_grad], lr=0.01, fused=True)
    torch.manual_seed(2)
    for batch in batches:
        loss, n = eager.loss(*batch, PAD)
        optimiser.zero_grad(set_to_none=True)
        (loss / n).backward()
        torch.nn.utils.clip_grad_norm_(eager.parameters(), 1.0)
        optimiser.step()
        eager_losses.append(loss.detach())
    graph_optimiser = static_step.adam([p for p in static.parameters() if p.requires_grad], 0.01, cpu)
    torch.manual_seed(2)
    for batch in static_batches:
        static_losses.append(
            static_step.nmt_training_step(static, graph_optimiser, 1.0, "token", "fp32", *batch.tensors())
        )
    close(torch.stack(static_losses), torch.stack(eager_losses), "losses")
    for (name, p), q in zip(eager.named_parameters(), static.parameters()):
        # Adam divides by the gradient's own scale: a rounding difference in a near-zero gradient
        # moves its entry by a share of the rate (0.01), so parameters agree to 1e-5, not to 1e-7
        torch.testing.assert_close(q.detach(), p.detach(), rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")


def test_the_static_language_model_segment_is_todays(monkeypatch):
    """train_lm.train_epoch with the static segment (every segment bptt steps, the last one padded
    with weight 0; fused SGD, its rate a tensor) against today's, from one initialisation: the
    epoch's sums of the objective and CE, and the parameters, within fp32 rounding, with dropout
    (its masks are drawn per row, the same draws) and AL's objective."""
    from workflow_src.train import train_lm

    spec = train_lm.resolve(
        {
            **LM_SPEC,
            "experiment": "t",
            "size": 10,
            "layers": 2,
            "dropout": 0.3,
            "reuse_embedding": True,
            "loss": "augmented",
            "loss_params": {"gamma": 0.5, "tau": 20.0},
            "lr": 1.0,
            "lr_decay": 0.5,
            "decay_after": 1,
            "clip": 0.5,
            "bptt": 10,
            "batch_size": 4,
            "max_epochs": 1,
            "seed": 1,
            "device": "cpu",
            "unit_norm_embeddings": True,
        }
    )
    data = torch.randint(0, fixed_step.VOCAB, (28, 4), generator=torch.Generator().manual_seed(2))  # segments 10, 10, 7
    objective = train_lm.build_objective(spec)
    results = []
    for graphs in (False, True):
        torch.manual_seed(3)
        model = LSTMLanguageModel(fixed_step.VOCAB, 10, 2, 0.3, True)
        cpu = torch.device("cpu")
        optimiser = (
            static_step.sgd(model.parameters(), 1.0, cpu) if graphs else torch.optim.SGD(model.parameters(), lr=1.0)
        )
        static = static_step.LanguageModelSteps(model, optimiser, objective, spec, cpu, "fp32") if graphs else None
        torch.manual_seed(4)
        sums = train_lm.train_epoch(model, data, spec, optimiser, objective, "fp32", static)
        results.append((sums, [p.detach().clone() for p in model.parameters()]))
    (eager_sums, eager_parameters), (static_sums, static_parameters) = results
    assert static_sums[2] == eager_sums[2] == 27 * 4
    assert static_sums[:2] == pytest.approx(eager_sums[:2], rel=1e-6)
    for p, q in zip(eager_parameters, static_parameters):
        close(q, p)


# -- static batches --------------------------------------------------------------------------------
def test_a_static_batch_has_b_rows_bucketed_lengths_weights_and_counts():
    vocab = vocabulary()
    src, tgt = [[5, 6, 7], [8], []], [[9, 10, vocab.eos], [vocab.eos], [11, 12, 13, 14, 15, vocab.eos]]
    batch = static_batch(src, tgt, [0, 1, 2], vocab, vocab, torch.device("cpu"), 4, [2, 4, 8])
    assert batch.src.shape == (4, 4) and batch.tgt_out.shape == (4, 8)
    assert batch.lengths.tolist() == [3, 1, 1, 1]  # an empty source reads <unk>; the padding row one <pad>
    assert batch.src[3].tolist() == [PAD] * 4 and batch.src[2, 0] == vocab.unk
    assert batch.weights.sum(1).tolist() == [3, 1, 6, 0]
    assert batch.tgt_in[0, :4].tolist() == [vocab.bos, 9, 10, PAD] and (batch.tgt_out[3] == PAD).all()
    assert (batch.tokens, batch.sentences) == (10, 3)
    assert (batch.token_count.item(), batch.sentence_count.item()) == (10.0, 3.0)
    assert [bucket(n, [2, 4, 8]) for n in (1, 2, 3, 8, 9, 17)] == [2, 2, 4, 8, 16, 24]
    with pytest.raises(ValueError, match="train.batch_size 2"):
        static_batch(src, tgt, [0, 1, 2], vocab, vocab, torch.device("cpu"), 2, [8])


def test_padding_is_counted_per_real_target_token():
    """Static: B x bucketed T per batch; eager: rows x the longest target."""
    lengths = [3, 5, 2, 9]
    batches = [[0, 1], [2], [3]]
    assert target_positions(lengths, batches, 2, [4, 8]) == 2 * 8 + 2 * 4 + 2 * 16
    assert target_positions(lengths, batches, 2, None) == 2 * 5 + 1 * 2 + 1 * 9
    record = padding_record(lengths, batches, 2, [4, 8])
    assert record == {
        "static_target_positions_per_token": round(56 / 19, 4),
        "eager_target_positions_per_token": round(21 / 19, 4),
    }


# -- capture and replay, with a CPU stand-in for CUDA graphs ----------------------------------------
class StandIn:
    """A captured graph on the CPU: replay runs the function on its static inputs and writes the
    results into the same output tensors, as a CUDA graph's replay does."""

    def __init__(self, function, inputs):
        self.function, self.inputs, self.outputs = function, inputs, None

    def replay(self) -> None:
        from torch.utils._pytree import tree_flatten

        results = self.function(*self.inputs)
        if self.outputs is None:
            self.outputs = results
            return
        with torch.no_grad():
            for destination, source in zip(tree_flatten(self.outputs)[0], tree_flatten(results)[0]):
                if isinstance(destination, torch.Tensor):
                    destination.copy_(source)


class ReplayOnCpu:
    """`graphs.CudaGraphs`'s part, on the CPU: warm-up calls run as they are; a capture keeps the
    function and its static inputs."""

    def eager(self, function, args):
        return function(*args)

    def capture(self, function, inputs) -> StandIn:
        return StandIn(function, inputs)


def test_the_training_step_is_captured_once_per_bucket_and_replays_the_uncaptured_steps():
    """TranslationSteps over batches of two (S, T) buckets, five each, interleaved: two eager
    calls and one capture per bucket, then replays on refilled static inputs; the losses and the
    parameters are those of the same steps uncaptured, and a replay's output is the graph's one
    static tensor."""
    cpu, vocab = torch.device("cpu"), vocabulary()
    spec = translation_spec(
        {
            **fixed_step.BASE,
            "length_buckets": [4, 8],
            "train": {"batch_size": 4, "clip": 1.0, "loss_normalisation": "sentence"},
        }
    )
    rng = random.Random(3)
    pairs = [
        ([rng.randrange(4, 40) for _ in range(n - 1)], [rng.randrange(4, 40) for _ in range(n - 2)] + [vocab.eos])
        for n in (4, 8) * 5
    ]  # sources of 3 and 7 words, targets of 3 and 7 units: buckets 4 and 8
    src, tgt = [s for s, _ in pairs], [t for _, t in pairs]
    results, outputs = [], []
    for captured in (False, True):
        model = tiny_model("softmax")
        model.encoder.packed = False
        optimiser = static_step.adam(model.parameters(), 0.01, cpu)
        steps = static_step.TranslationSteps(model, optimiser, spec, cpu, "fp32", vocab, vocab)
        if captured:
            steps.training = Captured(steps.training.function, cpu, module=model, graphs=ReplayOnCpu())
        losses = []
        for i in range(len(pairs)):
            loss, _ = steps.step(steps.batch(src, tgt, [i]))
            losses.append(loss.clone())
            outputs.append(loss)
        results.append((torch.stack(losses), [p.detach().clone() for p in model.parameters()]))
    assert steps.training.captures == 2 and len(steps.training.entries) == 2
    close(results[1][0], results[0][0], "losses")
    for p, q in zip(results[0][1], results[1][1]):
        close(q, p)
    replayed = outputs[len(pairs) :][-4:]  # the last two of each bucket: replays
    assert replayed[0] is replayed[2] and replayed[1] is replayed[3] and replayed[0] is not replayed[1]


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_the_decoding_step_replayed_decodes_the_eager_words(search):
    """`train.compile: graphs` on a translation model (compilation.apply's part, with the stand-in):
    the encoder unpacked and the decoder's one step captured per shape; two sentence batches of
    one shape (the attention keys, copied once per batch, change between them) decode the words and
    attention of the eager model."""
    model = tiny_model("softmax", dropout=0.2).eval()
    eager = tiny_model("softmax", dropout=0.2).eval()
    model.encoder.packed = False
    model.decoder.graphed_step = Captured(
        model.decoder._step, torch.device("cpu"), module=model.decoder, constant=(2,), graphs=ReplayOnCpu()
    )
    for seed in (1, 2):
        src, lengths, _, _ = fixed_step.batches(seed, 1)[0]
        run = {
            "greedy": lambda m: m.greedy(src, lengths, 2, 3, [PAD, 2], 9),
            "beam": lambda m: m.beam_search(src, lengths, 2, 3, [PAD, 2], 9, 3),
        }[search]
        for got, expected in zip(run(model), run(eager)):
            assert torch.equal(got, expected)
    assert model.decoder.graphed_step.captures == 1


def test_validation_on_static_batches_is_todays_mean_loss():
    from workflow_src.train import train

    cpu, vocab = torch.device("cpu"), vocabulary()
    model = tiny_model("joint_sampled", dropout=0.3)
    spec = translation_spec({**fixed_step.BASE, "length_buckets": [4, 8], "train": {"batch_size": 3, "clip": 1.0}})
    steps = static_step.TranslationSteps(model, None, spec, cpu, "fp32", vocab, vocab)
    steps.evaluation = Captured(steps.evaluation.function, cpu, module=model, graphs=ReplayOnCpu())
    src, tgt = [], []
    for batch in fixed_step.batches(7, 4):
        s, t = as_lists(batch)
        src, tgt = src + s, tgt + [row + [vocab.eos] for row in t]
    expected = train.mean_loss(model, src, tgt, vocab, vocab, 3, cpu)
    model.encoder.packed = False
    assert steps.mean_loss(src, tgt) == pytest.approx(expected, rel=1e-6)
    assert steps.evaluation.captures >= 1  # a shape met three times or more: replayed


# -- train.py's loop with the static step ------------------------------------------------------------
def test_train_py_trains_with_the_static_step_and_reports_its_padding(tmp_path, monkeypatch):
    """train.train with `compile: graphs` (the CPU refuses it; here allowed, and then nothing is
    captured: the static step runs as it is): two epochs learn, and every metrics line reports
    the target positions computed per real target token, static (bucketed) and eager."""
    from workflow_src.model import compilation
    from workflow_src.train import train

    monkeypatch.setattr(compilation, "mode", lambda setting, device: setting)
    args = random_corpus_arguments(tmp_path, {"train": 40, "dev": 6}, longest=9, words=12)
    spec = {
        **TRANSLATION_SPEC,
        **fixed_step.BASE,
        "model": {**TRANSLATION_SPEC["model"], **fixed_step.BASE["model"]},
        "compile": "graphs",
        "length_buckets": [4, 8, 12],
        "vocab": {"src_size": 50, "tgt_size": 50},
        "train": {
            **TRANSLATION_SPEC["train"],
            "seed": 1,
            "lr": 0.02,
            "batch_size": 6,
            "max_epochs": 2,
            "selection": "loss",
        },
    }
    train.train(load(TrainSpec, spec, "spec"), args, torch.device("cpu"))
    history = [json.loads(line) for line in (tmp_path / "model" / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in history] == [1, 2]
    assert history[1]["train_loss"] < history[0]["train_loss"]
    for record in history:
        assert record["static_target_positions_per_token"] > record["eager_target_positions_per_token"] >= 1
    saved = torch.load(tmp_path / "model" / "checkpoint.pt", weights_only=False)
    assert "model" not in saved  # finished: the record without weights
