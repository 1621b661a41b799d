"""Training: both output layers learn, a killed run resumes to exactly the uninterrupted result, a
finished run keeps no optimiser state and does not train again, the length limit on units."""

import json
import os
import shutil

import pytest
import torch

from tests.conftest import (
    REPO,
    TRANSLATION_SPEC,
    assert_same_weights,
    kill_in_second_epoch,
    run_training,
    training_command,
    training_metrics,
    translation_spec,
)


def test_killed_training_resumes_to_the_uninterrupted_result(data, tmp_path):
    whole = tmp_path / "whole"
    result = run_training(data, whole, TRANSLATION_SPEC)
    assert result.returncode == 0, result.stderr
    interrupted = tmp_path / "interrupted"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kill_in_second_epoch(training_command(data, interrupted, TRANSLATION_SPEC), interrupted, env)
    result = run_training(data, interrupted, TRANSLATION_SPEC)
    assert result.returncode == 0, result.stderr
    assert "resuming after epoch" in result.stderr
    assert training_metrics(interrupted) == training_metrics(whole)
    assert_same_weights(interrupted, whole)
    embed, output = (
        sum(
            v.numel()
            for k, v in torch.load(whole / "model.pt", weights_only=False)["state_dict"].items()
            if k.startswith(prefix)
        )
        for prefix in ("decoder.embed.", "output.")
    )
    assert training_metrics(whole)[-1]["layer_parameters"] == {"input": embed, "output": output}  # vMF Table 4's counts
    stale = 0  # epochs since the best development score: `patience` of them fire the early stop
    for record in training_metrics(whole):
        stale = 0 if record["best"] else stale + 1
        assert record["early_stop"] == (stale >= TRANSLATION_SPEC["train"]["patience"])
    assert (
        len(training_metrics(whole)) == TRANSLATION_SPEC["train"]["max_epochs"]
        or training_metrics(whole)[-1]["early_stop"]
    )
    assert not any(record["early_stop"] for record in training_metrics(whole)[:-1])


def test_a_changed_spec_starts_over(data, tmp_path):
    out = tmp_path / "m"
    assert (
        run_training(
            data, out, {**TRANSLATION_SPEC, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 1}}
        ).returncode
        == 0
    )
    result = run_training(data, out, {**TRANSLATION_SPEC, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 2}})
    assert result.returncode == 0 and "belongs to another spec; starting over" in result.stderr
    assert [m["epoch"] for m in training_metrics(out)] == [1, 2]


def test_a_finished_run_keeps_no_optimiser_state_and_a_rerun_does_not_train(data, tmp_path):
    out = tmp_path / "m"
    spec = {**TRANSLATION_SPEC, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 2}}
    assert run_training(data, out, spec).returncode == 0
    checkpoint = torch.load(out / "checkpoint.pt", weights_only=False)
    assert checkpoint["finished"] and "optimiser" not in checkpoint and "model" not in checkpoint
    assert [r["epoch"] for r in checkpoint["history"]] == [1, 2]
    assert (out / "model.pt").stat().st_size > 10 * (out / "checkpoint.pt").stat().st_size
    before, weights = training_metrics(out), torch.load(out / "model.pt", weights_only=False)["state_dict"]
    for output in ("model.pt", "metrics.jsonl"):  # as Snakemake removes a job's outputs before it reruns it
        (out / output).unlink()
    result = run_training(data, out, spec)
    assert result.returncode == 0, result.stderr
    assert "training finished after epoch 2; not training again" in result.stderr
    assert '"train_loss"' not in result.stderr and "resuming" not in result.stderr
    assert training_metrics(out) == before
    again = torch.load(out / "model.pt", weights_only=False)["state_dict"]
    assert all(torch.equal(again[key], weights[key]) for key in weights)
    (out / "best.pt").unlink()  # nothing to write model.pt from: train again
    result = run_training(data, out, spec)
    assert result.returncode == 0 and "best.pt is gone; starting over" in result.stderr
    assert training_metrics(out) == before


def test_a_resume_in_another_precision_stops_naming_train_precision(data, tmp_path, capsys):
    """The precision the job resolved goes into its checkpoint and model files; a resume where the
    spec resolves to another stops in one line, and a checkpoint that never recorded it resumes,
    saying so (model.precision.pin)."""
    from workflow_src.train import train

    out = tmp_path / "m"
    args = training_command(data, out, {**TRANSLATION_SPEC, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 1}})[
        3:
    ]
    train.main(args)
    checkpoint = out / "checkpoint.pt"
    saved = torch.load(checkpoint, weights_only=False)
    assert saved["precision"] == "fp32" and torch.load(out / "model.pt", weights_only=False)["precision"] == "fp32"
    torch.save({**saved, "precision": "bf16"}, checkpoint)  # as a job started on a GPU left it
    with pytest.raises(SystemExit) as stopped:
        train.main(args)
    assert str(stopped.value).startswith(
        f"train.precision: {checkpoint} was trained in bf16, but 'auto' resolves to fp32 on cpu"
    )
    torch.save({key: value for key, value in saved.items() if key != "precision"}, checkpoint)
    capsys.readouterr()
    train.main(args)
    err = capsys.readouterr().err
    assert "the precision it was trained in was not recorded" in err and "not training again" in err


def test_a_piece_length_limit_drops_the_longer_training_pairs(data, tmp_path):
    """max_len_unit piece: OpenNMT's -src/-tgt_seq_length on the units the model reads (here words),
    counted without </s>; the count dropped is logged and in every metrics line."""
    max_len = 6
    pairs = list(zip((data / "train.fr").read_text().splitlines(), (data / "train.en").read_text().splitlines()))
    too_long = sum(1 for s, t in pairs if max(len(s.split()), len(t.split())) > max_len)
    assert 0 < too_long < len(pairs)
    out = tmp_path / "m"
    result = run_training(
        data,
        out,
        {
            **TRANSLATION_SPEC,
            "data": {"max_len": max_len, "max_len_unit": "piece"},
            "train": {**TRANSLATION_SPEC["train"], "max_epochs": 1},
        },
    )
    assert result.returncode == 0, result.stderr
    assert (
        f"{len(pairs) - too_long} training pairs ({too_long} dropped: a side over 6 units, max_len_unit piece)"
        in result.stderr
    )
    [line] = training_metrics(out)
    assert (line["train_pairs"], line["train_pairs_too_long"]) == (len(pairs) - too_long, too_long)


@pytest.mark.parametrize("output_layer", ["softmax", "continuous"])
def test_both_output_layers_learn(data, tmp_path, output_layer):
    spec = dict(TRANSLATION_SPEC)
    if output_layer == "continuous":
        spec.update(
            target_unit="emb",
            output_layer="continuous",
            loss="nllvmf",
            loss_params={"lambda1": 0.02, "lambda2": 0.1},
            embeddings="fasttext",
            tied=True,
        )
    spec["model"] = {**TRANSLATION_SPEC["model"], "hidden": 64, "input_feed": False}
    out = tmp_path / output_layer
    result = run_training(data, out, {**spec, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 6, "lr": 0.01}})
    assert result.returncode == 0, result.stderr
    history = training_metrics(out)
    assert history[-1]["train_loss"] < history[0]["train_loss"]
    assert history[-1]["dev_loss"] < history[0]["dev_loss"]
    assert max(m["dev_bleu"] for m in history) > 2.0  # it translates a little after seconds on 400 sentences


@pytest.mark.parametrize("tied", [False, True])
def test_softmax_over_pretrained_vectors_starts_from_them_and_trains_them(tied):
    """Syn-margin §4's baselines: the softmax's word vectors start as the pretrained table, survive
    `initialise`, and (tied) are the decoder's input vectors too, trained through both uses."""
    from workflow_src.model.seq2seq import Seq2Seq
    from workflow_src.train.train import initialise

    table = torch.nn.functional.normalize(torch.randn(30, 12), dim=-1)
    model = Seq2Seq(translation_spec({"embeddings": "fasttext", "tied": tied}), 40, 30, 0, table)
    initialise(model, 0.1)
    assert torch.equal(model.output.word_vectors.detach(), table)
    assert model.output.word_vectors is model.word_vectors
    assert (getattr(model.decoder.embed, "word_vectors", None) is model.word_vectors) == tied
    assert isinstance(model.decoder.embed, torch.nn.Embedding) != tied
    src, lengths = torch.randint(4, 40, (3, 5)), torch.tensor([5, 4, 2])
    tgt = torch.randint(4, 30, (3, 6))
    outputs, _ = model(src, lengths, tgt)
    assert model.output.scores(outputs).shape == (3, 6, 30)
    loss, _ = model.loss(src, lengths, tgt, tgt, 0)
    loss.backward()
    gradient = model.word_vectors.grad
    input_rows = torch.zeros(30, dtype=torch.bool)
    input_rows[tgt.unique()] = True
    # the output layer trains every row; the decoder input only the rows it read, when tied
    assert gradient.abs().sum() > 0
    if tied:
        model.zero_grad()
        model.decoder.embed(tgt).sum().backward()
        assert (model.word_vectors.grad[~input_rows] == 0).all() and model.word_vectors.grad[input_rows].abs().sum() > 0


def test_fp32_cpu_training_steps_are_bit_for_bit_the_recorded_ones():
    """The speed work (host-side token positions, no per-step syncs, shared tables) changes no fp32
    CPU number: tests/fixed_step_reference.json was recorded before it (tests/fixed_step.py), on two
    threads with ATen's AVX2 kernels. ATen picks its vector kernels by the CPU, and under its AVX512
    ones (or on one thread) the most informative negative's reductions round differently in the last
    bit of its third step; so the steps run in a process of their own under ATEN_CPU_CAPABILITY=avx2,
    the switch ATen's dispatch reads (aten/src/ATen/native/DispatchStub.cpp)."""
    import subprocess
    import sys

    recorded = json.loads((REPO / "tests" / "fixed_step_reference.json").read_text())
    script = (
        "import json, torch; torch.set_num_threads(2); from tests import fixed_step; "
        "print(torch.backends.cpu.get_cpu_capability()); print(json.dumps(fixed_step.reference()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        env={**os.environ, "ATEN_CPU_CAPABILITY": "avx2"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    capability, values = result.stdout.splitlines()[-2:]
    if capability != "AVX2":
        pytest.skip(f"ATen has no AVX2 kernels on this CPU ({capability}), the ones the reference was recorded with")
    assert json.loads(values) == recorded


@pytest.mark.parametrize("kind", ["softmax", "tied_nllvmf"])
def test_bf16_autocast_on_the_cpu_learns_as_fp32_does(kind):
    """train.precision bf16 (autocast, here on the CPU) reaches the same order of loss as fp32 on
    a tiny task, and the loss itself comes out in fp32."""
    from tests import fixed_step
    from workflow_src.model import precision

    def bf16_step(model, batch):
        with precision.autocast("bf16", torch.device("cpu")):
            loss, n = model.loss(*batch, 0)
        assert loss.dtype == torch.float32
        return loss, n

    fp32 = [float.fromhex(x) for x in fixed_step.seq2seq_losses(kind, steps=4, repeat=25)]
    bf16 = [float.fromhex(x) for x in fixed_step.seq2seq_losses(kind, bf16_step, steps=4, repeat=25)]
    assert bf16 != fp32  # autocast did change the arithmetic
    assert sum(bf16[-4:]) < 0.8 * sum(bf16[:4])  # it learns
    assert 0.7 < sum(bf16[-4:]) / sum(fp32[-4:]) < 1.4


def test_log_cm_is_float64_and_unchanged_under_bf16_autocast():
    from workflow_src.model.vmf import log_cm
    from workflow_src.model.precision import autocast

    kappa = torch.tensor([0.5, 3.0, 40.0, 200.0])
    expected = log_cm(300, kappa.double())
    with autocast("bf16", torch.device("cpu")):
        assert torch.equal(log_cm(300, kappa.double()), expected)
        assert torch.equal(log_cm(300, kappa), expected.float())


def test_precision_resolves_to_fp32_on_the_cpu_unless_asked():
    from workflow_src.model.precision import resolve

    assert resolve("auto", torch.device("cpu")) == "fp32"
    assert resolve("auto", torch.device("cuda")) == "bf16"
    assert resolve("bf16", torch.device("cpu")) == "bf16"
    with pytest.raises(ValueError, match="train.precision"):
        resolve("fp16", torch.device("cpu"))


@pytest.mark.parametrize("kind", ["softmax", "most_informative"])
def test_the_split_input_projection_is_the_fused_cell(kind):
    """The decoder's first layer with its embedding half computed for every step at once (used
    on CUDA) gives the fused LSTMCell's losses and gradients, with the same parameters."""
    from tests import fixed_step
    from workflow_src.model.seq2seq import Seq2Seq

    torch.manual_seed(0)
    model = Seq2Seq(
        translation_spec({**fixed_step.BASE, **fixed_step.KINDS[kind]}),
        40,
        40,
        0,
        torch.nn.functional.normalize(torch.randn(40, 6), dim=-1),
    ).eval()
    batch = fixed_step.batches(1, 1)[0]
    results = []
    for split in (False, True):
        model.decoder.split_input_projection = split
        model.zero_grad()
        loss, _ = model.loss(*batch, 0)
        loss.backward()
        results.append((loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (fused, fused_grads), (split, split_grads) = results
    torch.testing.assert_close(split, fused, rtol=1e-5, atol=1e-5)
    for a, b in zip(split_grads, fused_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert "decoder.cells.0.weight_ih" in model.state_dict()
    src, lengths = batch[0], batch[1]
    words = []
    for split in (False, True):  # greedy decoding: every cell as CUDA runs it, or nn.LSTMCell
        model.decoder.split_input_projection = split
        words.append(model.greedy(src, lengths, 2, 3, [0, 2], 6)[0])
    torch.testing.assert_close(words[0], words[1])
    with torch.autocast("cpu", dtype=torch.bfloat16):  # as it runs on CUDA by default
        bf16, _ = model.loss(*batch, 0)
    torch.testing.assert_close(bf16, fused, rtol=0.05, atol=0)


def test_a_tied_model_keeps_one_target_table_after_to_and_in_its_checkpoint(tmp_path):
    """The tied embedding and the continuous output layer share the frozen table: still one
    storage after a conversion (`.to()`), and a saved model file holds it once."""
    from tests import fixed_step
    from workflow_src.model.seq2seq import Seq2Seq
    from workflow_src.model.nmt_data import load_model, save_model
    from workflow_src.data.vocab import Vocab

    vocab = Vocab([f"w{i}" for i in range(3000)])
    table = torch.nn.functional.normalize(torch.randn(len(vocab), 64), dim=-1)
    spec = translation_spec({**fixed_step.BASE, **fixed_step.KINDS["tied_nllvmf"]})
    model = Seq2Seq(spec, len(vocab), len(vocab), 0, table)
    assert model.decoder.embed.table is model.output.table
    model.to(torch.float64)  # a conversion makes new tensors, as a move to the GPU does
    assert model.output.table.dtype == torch.float64
    assert model.decoder.embed.table.untyped_storage().data_ptr() == model.output.table.untyped_storage().data_ptr()
    model.to(torch.float32)
    save_model(tmp_path / "model.pt", model, spec, vocab, vocab)
    table_bytes = table.numel() * 4
    others = sum(p.numel() * 4 for p in model.parameters())
    assert (tmp_path / "model.pt").stat().st_size < table_bytes * 1.5 + others
    loaded, *_ = load_model(tmp_path / "model.pt", torch.device("cpu"))
    assert loaded.decoder.embed.table.untyped_storage().data_ptr() == loaded.output.table.untyped_storage().data_ptr()


def test_batches_are_bucketed_on_both_lengths_at_the_same_size():
    """Bucketing on source then target length keeps every batch (but the last) at batch_size and
    pads the targets less than bucketing on the source alone."""
    import random

    from workflow_src.model.nmt_data import batch_indices

    rng = random.Random(0)
    src = [rng.randint(1, 30) for _ in range(5000)]
    tgt = [max(1, s + rng.randint(-8, 8)) for s in src]

    def target_padding(batches):
        return sum(max(tgt[i] for i in b) * len(b) - sum(tgt[i] for i in b) for b in batches)

    both = batch_indices(src, 64, random.Random(1), tgt)
    source_only = batch_indices(src, 64, random.Random(1))
    assert sorted(len(b) for b in both) == sorted(len(b) for b in source_only)
    assert sorted(i for b in both for i in b) == list(range(5000))
    assert target_padding(both) < 0.5 * target_padding(source_only)
    assert both == batch_indices(src, 64, random.Random(1), tgt)  # the seed decides the order


def test_a_training_batch_locates_its_tokens_on_the_host():
    from workflow_src.model.nmt_data import pad, prefetched, training_batch, TrainingBatch
    from workflow_src.data.vocab import Vocab

    vocab = Vocab([f"w{i}" for i in range(20)])
    src = [[5, 6, 7], [8], []]
    tgt = [[9, 10, vocab.eos], [vocab.eos], [11, 12, 13, 14, vocab.eos]]
    batch = training_batch(src, tgt, [0, 1, 2], vocab, vocab, torch.device("cpu"))
    assert batch.lengths.device.type == "cpu" and batch.lengths.tolist() == [3, 1, 1]
    assert torch.equal(batch.positions, (batch.tgt_out != vocab.pad).flatten().nonzero().squeeze(1))
    assert batch.tokens == 9 and batch.sentences == 3
    assert pad([[1, 2, 3]], 0, multiple=8).tolist() == [[1, 2, 3, 0, 0, 0, 0, 0]]
    # the background thread (CUDA's) hands over the same batches in order, and a failure
    made = [training_batch(src, tgt, idx, vocab, vocab, torch.device("cpu")) for idx in ([0], [1, 2])]
    handed = list(prefetched(iter(made), torch.device("cpu"), background=True))
    assert [b.positions.tolist() for b in handed] == [b.positions.tolist() for b in made]

    def failing():
        yield made[0]
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        list(prefetched(failing(), torch.device("cpu"), background=True))
    assert isinstance(handed[0], TrainingBatch)


def test_the_batch_thread_ends_when_its_consumer_stops(tmp_path):
    """nmt_data.prefetched's background thread (CUDA's) ends once its consumer has: the generator
    closed early, or the main thread ended by an error in the consumer's step; it is not left
    building or holding batches while the interpreter exits (pytorch/pytorch#38228)."""
    import subprocess
    import sys
    import threading

    from workflow_src.model.nmt_data import PRODUCER, prefetched, training_batch
    from workflow_src.data.vocab import Vocab

    vocab = Vocab([f"w{i}" for i in range(20)])
    built = []

    def make():
        for i in range(1000):
            built.append(i)
            yield training_batch([[5, 6]], [[7, vocab.eos]], [0], vocab, vocab, torch.device("cpu"))

    before = set(threading.enumerate())
    batches = prefetched(make(), torch.device("cpu"), depth=2, background=True)
    next(batches)
    assert [t.name for t in set(threading.enumerate()) - before] == [PRODUCER]
    batches.close()
    assert set(threading.enumerate()) <= before
    assert len(built) <= 1 + 2 + 2  # the batch taken, a full queue, and the one it was building

    script = tmp_path / "failing_step.py"
    script.write_text(
        "import atexit, itertools, threading, torch\n"
        "from workflow_src.model.nmt_data import prefetched\n"
        "atexit.register(lambda: print('threads at exit:', [t.name for t in threading.enumerate() if t.is_alive()]))\n"
        "for batch in prefetched((torch.ones(3) for _ in itertools.count()), torch.device('cpu'), background=True):\n"
        "    raise ValueError('the step failed')\n"
    )
    ended = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert ended.returncode == 1 and "ValueError: the step failed" in ended.stderr
    assert "threads at exit: []" in ended.stdout, ended.stdout


def test_padding_to_multiples_only_where_the_step_is_compiled():
    """Eager, a batch is as long as its longest sentence on every device (padding to 8 costs
    decoder steps for nothing); compiled, S and T round up to multiples of 8 (fewer shapes)."""
    from workflow_src.model.nmt_data import length_multiple, training_batch
    from workflow_src.data.vocab import Vocab

    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "b"])
    src, tgt = [[4, 5, 4], [5]], [[4, 3], [5, 4, 5, 3]]
    assert length_multiple("fuse") == length_multiple("graphs") == 8
    eager = length_multiple("off")
    assert eager == 1
    batch = training_batch(src, tgt, [0, 1], vocab, vocab, torch.device("cpu"), eager)
    assert batch.src.shape == (2, 3) and batch.tgt_out.shape == (2, 4)
    padded = training_batch(src, tgt, [0, 1], vocab, vocab, torch.device("cpu"), 8)
    assert padded.src.shape == (2, 8) and padded.tgt_out.shape == (2, 8) and padded.tokens == batch.tokens == 6


def test_the_first_epoch_is_checked_against_the_target_bigram(data, tmp_path):
    """A softmax model records the target-side bigram's development loss (workflow_src/train/bigram.py)
    in every epoch; one that ends its first epoch above it (here: a rate too small to move it) is
    named in a warning, one that learned is not. The toy world's grammar makes its bigram strong:
    the model that learns gets its 400 pairs three times over in its first epoch."""
    longer = tmp_path / "data"
    shutil.copytree(data, longer)
    for side in ("fr", "en"):
        (longer / f"train.{side}").write_text((data / f"train.{side}").read_text() * 3)
    one_epoch = {**TRANSLATION_SPEC["train"], "max_epochs": 1, "lr": 0.02}
    learned = run_training(longer, tmp_path / "learned", {**TRANSLATION_SPEC, "train": one_epoch})
    frozen = run_training(data, tmp_path / "frozen", {**TRANSLATION_SPEC, "train": {**one_epoch, "lr": 1e-7}})
    assert learned.returncode == frozen.returncode == 0, learned.stderr + frozen.stderr
    (good,), (bad,) = training_metrics(tmp_path / "learned"), training_metrics(tmp_path / "frozen")
    assert good["bigram_dev_loss"] > 0 and bad["bigram_dev_loss"] > 0
    assert good["dev_loss"] < good["bigram_dev_loss"] and bad["bigram_dev_loss"] < bad["dev_loss"]
    assert "WARNING: tiny (seed 7) has not learned from the source after its first epoch" in frozen.stderr
    assert "WARNING" not in learned.stderr


def test_an_unreadable_checkpoint_is_said_and_loses_nothing_a_finished_run_made(data, tmp_path):
    """A truncated checkpoint of a finished run, its model.pt deleted (as Snakemake deletes the
    outputs it reruns; metrics.jsonl it keeps, rules/train.smk): the rerun names the checkpoint and
    finishes from metrics.jsonl and best.pt without training. A rerun that must train from scratch
    leaves metrics.jsonl the finished run's until it has finished, also when it is killed
    (tests/test_faults.py: the decision to train from scratch, and its line)."""
    out = tmp_path / "m"
    spec = {**TRANSLATION_SPEC, "train": {**TRANSLATION_SPEC["train"], "max_epochs": 2}}
    assert run_training(data, out, spec).returncode == 0
    history, weights = (
        (out / "metrics.jsonl").read_text(),
        torch.load(out / "model.pt", weights_only=False)["state_dict"],
    )
    checkpoint = out / "checkpoint.pt"
    checkpoint.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
    (out / "model.pt").unlink()
    result = run_training(data, out, spec)
    assert result.returncode == 0, result.stderr
    assert f"{checkpoint}: unreadable (RuntimeError: PytorchStreamReader failed reading zip archive" in result.stderr
    assert "not training again" in result.stderr and '"train_loss"' not in result.stderr
    assert (out / "metrics.jsonl").read_text() == history
    again = torch.load(out / "model.pt", weights_only=False)["state_dict"]
    assert all(torch.equal(again[key], weights[key]) for key in weights)
    for name in ("best.pt", "model.pt", "checkpoint.pt"):
        (out / name).unlink()
    kill_in_second_epoch(training_command(data, out, spec), out, {**os.environ, "PYTHONPATH": str(REPO)})
    assert (out / "metrics.jsonl").read_text() == history
    assert len((out / "metrics.partial.jsonl").read_text().splitlines()) == 1  # the killed rerun's first epoch
