"""Language-model training and next-word prediction: a tiny model learns, a killed run resumes to
exactly the uninterrupted result, a finished one is not trained again, appendix A's schedule,
perplexity by hand, closed vocabularies."""

import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.conftest import LM_SPEC, REPO, hand_set_model, kill_in_second_epoch
from workflow_src.decode import lm_predict
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.lm_losses import augmented_loss
from workflow_src.model.losses import cross_entropy
from workflow_src.papers.tying import SCHEDULE as APPENDIX_A
from workflow_src.train import train_lm
from workflow_src.specs import TrainSlice
from workflow_src.train.train_lm import (
    EOS,
    batchify,
    build_model,
    build_objective,
    build_vocabulary,
    encode,
    evaluate,
    learning_rate,
    load_language_model,
    read,
    resolve,
    save_language_model,
    training_stream,
)

SUBJECTS, VERBS, OBJECTS = (
    ("the cat", "the dog", "a bird", "my friend"),
    ("sees", "likes", "chases"),
    ("the ball", "a mouse", "the tree"),
)
VOCABULARY = 14  # the 13 words above and <eos>


def write_corpus(root, train_sentences):
    rng = random.Random(0)
    for split, n in (("train", train_sentences), ("valid", 60), ("test", 60)):
        (root / f"{split}.txt").write_text(
            "".join(f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}\n" for _ in range(n))
        )
    return root


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"), 600)


def arguments(corpus, out, spec, valid=None):
    return [
        "--spec",
        json.dumps(spec),
        "--train",
        str(corpus / "train.txt"),
        "--valid",
        str(valid or corpus / "valid.txt"),
        "--test",
        str(corpus / "test.txt"),
        "--out-dir",
        str(out),
    ]


def metrics(out):
    timing = {"seconds", "tokens_per_second"}
    return [
        {k: v for k, v in json.loads(line).items() if k not in timing}
        for line in (out / "metrics.jsonl").read_text().splitlines()
    ]


@pytest.mark.parametrize("loss, reuse_embedding", [("ce", False), ("augmented", True)])
def test_a_tiny_model_learns(corpus, tmp_path, loss, reuse_embedding):
    spec = {
        **LM_SPEC,
        "loss": loss,
        "loss_params": LM_SPEC["loss_params"] if loss == "augmented" else {},
        "reuse_embedding": reuse_embedding,
        "dropout": 0.0,
        "size": 10,
        "batch_size": 4,
        "max_epochs": 6,
    }
    train_lm.main(arguments(corpus, tmp_path, spec))
    assert json.loads((tmp_path / "spec.json").read_text()) == spec  # the run's spec document, in its folder
    history = metrics(tmp_path)
    result = json.loads((tmp_path / "perplexity.json").read_text())
    assert [m["epoch"] for m in history] == list(range(1, 7))
    assert [m["lr"] for m in history] == pytest.approx([1, 1, 0.9, 0.81, 0.729, 0.6561])
    best = min(history, key=lambda m: m["valid_perplexity"])
    assert best["valid_perplexity"] < history[0]["valid_perplexity"] and best["valid_perplexity"] < VOCABULARY / 2
    assert result["kept_epoch"] == best["epoch"] and result["valid_perplexity"] == pytest.approx(
        best["valid_perplexity"]
    )
    assert result["test_perplexity"] < VOCABULARY / 2
    assert result["evaluation"]["vocabulary"] == VOCABULARY
    assert result["evaluation"]["valid_tokens"] == (60 * 6 // 10 - 1) * 10  # 5 words and <eos> a line, in 10 columns
    # RE: W is L^T itself; untied, two 10-dimensional subspaces of R^14 differ
    assert (result["subspace_distance"] < 1e-6) == reuse_embedding
    saved = torch.load(tmp_path / "model.pt", weights_only=False)
    assert saved["epoch"] == best["epoch"] and sorted(saved["itos"]) == sorted(
        set((corpus / "train.txt").read_text().split()) | {EOS}
    )


def test_training_with_al_feeds_the_augmented_loss_w_h_without_the_output_bias():
    """J_tot = J(W h + b) + γτ J_aug(W h) (Eqs. 3.1, 3.3), summed over a training epoch (lr 0: no update)."""
    spec = resolve({**LM_SPEC, "dropout": 0.0, "lr": 0.0})
    torch.manual_seed(0)
    model = build_model(spec, VOCABULARY)
    with torch.no_grad():
        model.decoder.bias.copy_(torch.randn(VOCABULARY) * 5)
    data = batchify(torch.randint(VOCABULARY, (200,)), spec.batch_size)
    total, _, tokens = train_lm.train_epoch(
        model, data, spec, torch.optim.SGD(model.parameters(), lr=0.0), build_objective(spec)
    )
    model.eval()
    with torch.no_grad():
        logits, _, _ = model(data[:-1], model.init_hidden(spec.batch_size))
        logits, targets = logits.flatten(0, 1), data[1:].flatten()
        w_h = logits - model.decoder.bias
        gamma, tau = spec.loss_params["gamma"], spec.loss_params["tau"]
        expected = cross_entropy(logits, targets) + gamma * tau * augmented_loss(
            w_h, targets, model.embedding.weight, tau
        )
        with_bias = cross_entropy(logits, targets) + gamma * tau * augmented_loss(
            logits, targets, model.embedding.weight, tau
        )
    assert tokens == len(targets)
    assert total == pytest.approx(expected.sum().item(), rel=1e-4)
    assert total != pytest.approx(with_bias.sum().item(), rel=1e-3)


def test_killed_training_resumes_to_the_uninterrupted_result(tmp_path):
    corpus = write_corpus(tmp_path, 1000)  # epochs of most of a second, to be killed in
    spec = {**LM_SPEC, "max_epochs": 3}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "workflow_src.train.train_lm"]
    whole, interrupted = tmp_path / "whole", tmp_path / "interrupted"
    result = subprocess.run(command + arguments(corpus, whole, spec), env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    kill_in_second_epoch(command + arguments(corpus, interrupted, spec), interrupted, env)
    result = subprocess.run(command + arguments(corpus, interrupted, spec), env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "resuming after epoch" in result.stderr
    assert metrics(interrupted) == metrics(whole)
    assert (interrupted / "perplexity.json").read_text() == (whole / "perplexity.json").read_text()
    a, b = (torch.load(out / "model.pt", weights_only=False)["state_dict"] for out in (interrupted, whole))
    assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_a_finished_run_keeps_no_checkpoint_weights_and_a_rerun_does_not_train(corpus, tmp_path, capsys):
    spec = {**LM_SPEC, "max_epochs": 2}
    train_lm.main(arguments(corpus, tmp_path, spec))
    checkpoint = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert (
        checkpoint["finished"] and "model" not in checkpoint and [r["epoch"] for r in checkpoint["history"]] == [1, 2]
    )
    before = {name: (tmp_path / name).read_text() for name in ("metrics.jsonl", "perplexity.json")}
    for name in ("model.pt", *before):  # as Snakemake removes a job's outputs before it reruns it
        (tmp_path / name).unlink()
    capsys.readouterr()
    train_lm.main(arguments(corpus, tmp_path, spec))
    err = capsys.readouterr().err
    assert "training finished after epoch 2; not training again" in err and '"train_loss"' not in err
    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert (
        torch.load(tmp_path / "model.pt", weights_only=False)["epoch"]
        == json.loads(before["perplexity.json"])["kept_epoch"]
    )


def test_a_resume_in_another_precision_stops_naming_train_precision(corpus, tmp_path, capsys):
    spec = {**LM_SPEC, "max_epochs": 1}
    train_lm.main(arguments(corpus, tmp_path, spec))
    checkpoint = tmp_path / "checkpoint.pt"
    saved = torch.load(checkpoint, weights_only=False)
    assert saved["precision"] == "fp32" and torch.load(tmp_path / "model.pt", weights_only=False)["precision"] == "fp32"
    torch.save({**saved, "precision": "bf16"}, checkpoint)  # as a job started on a GPU left it
    with pytest.raises(SystemExit) as stopped:
        train_lm.main(arguments(corpus, tmp_path, spec))
    assert str(stopped.value).startswith(
        f"train.precision: {checkpoint} was trained in bf16, but 'auto' resolves to fp32 on cpu"
    )
    torch.save({key: value for key, value in saved.items() if key != "precision"}, checkpoint)
    capsys.readouterr()
    train_lm.main(arguments(corpus, tmp_path, spec))
    err = capsys.readouterr().err
    assert "the precision it was trained in was not recorded" in err and "not training again" in err


def test_learning_rate_schedule_is_appendix_a():
    """lr 1, decayed by 0.9 / 0.9 / 0.97 each epoch after epoch 5 / 10 / 1; clipping 5 / 5 / 6."""

    def schedule(size):
        return read({**LM_SPEC, **APPENDIX_A[size]}, "LM_SPEC")

    assert [learning_rate(schedule("small"), e) for e in range(1, 9)] == pytest.approx(
        [1, 1, 1, 1, 1, 0.9, 0.81, 0.729]
    )
    assert [learning_rate(schedule("medium"), e) for e in (1, 10, 11, 13)] == pytest.approx([1, 1, 0.9, 0.729])
    assert [learning_rate(schedule("large"), e) for e in (1, 2, 3, 40)] == pytest.approx([1, 0.97, 0.97**2, 0.97**39])
    assert [APPENDIX_A[size]["clip"] for size in ("small", "medium", "large")] == [5, 5, 6]


def test_perplexity_of_a_hand_set_model_on_a_batchified_text(tmp_path):
    """Only layer 2's g and o biases and the output layer are nonzero, so with one unit
    c_t = (c_{t-1} + tanh 1) / 2 and h_t = σ(0.5) tanh c_t depend on the position in the column
    alone, and logits = w h + b. Each column is read from c = 0 across segment boundaries."""
    text = tmp_path / "text.txt"
    text.write_text("a b c\nb a\nc c a b\na\n")  # 14 tokens: two columns of 7 with B = 2 (none dropped), 4 with B = 3
    itos = build_vocabulary(text)
    w, b = {"a": 1.0, "b": -1.0, "c": 2.0, EOS: 0.5}, {"a": 0.0, "b": 0.5, "c": 0.0, EOS: -0.3}
    model = hand_set_model([w[word] for word in itos], [b[word] for word in itos])
    stream = [word for line in text.read_text().splitlines() for word in line.split() + [EOS]]
    for columns in (2, 3):
        length = len(stream) // columns
        nll = 0.0
        for column in range(columns):
            c = 0.0
            for target in stream[column * length + 1 : (column + 1) * length]:
                c = (c + math.tanh(1.0)) / 2
                h = math.tanh(c) / (1 + math.exp(-0.5))
                nll += math.log(sum(math.exp(w[v] * h + b[v]) for v in w)) - (w[target] * h + b[target])
        data = batchify(encode(text, {word: i for i, word in enumerate(itos)}), columns)
        assert evaluate(model, data, bptt=2) == pytest.approx(math.exp(nll / (columns * (length - 1))), rel=1e-12)


def test_a_word_outside_the_training_vocabulary_fails_naming_file_and_line(corpus, tmp_path, capsys):
    valid = tmp_path / "valid.txt"
    valid.write_text("the cat sees the ball\nthe zebra sees the ball\n")
    with pytest.raises(SystemExit) as failure:
        train_lm.main(arguments(corpus, tmp_path / "out", LM_SPEC, valid=valid))
    assert failure.value.code == 1
    assert f"{valid}, line 2: 'zebra' is not in the training vocabulary" in capsys.readouterr().err
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


def test_a_wrong_spec_key_is_named(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^LM_SPEC: unknown key clipping in a LMSpec$"):
        read({**LM_SPEC, "clipping": 5}, "LM_SPEC")
    with pytest.raises(ValueError, match=r"^LM_SPEC: missing key clip of a LMSpec$"):
        read({k: v for k, v in LM_SPEC.items() if k != "clip"}, "LM_SPEC")
    with pytest.raises(ValueError, match=r"^LM_SPEC: unknown key convergence\.patience in a Convergence$"):
        read(
            {**LM_SPEC, "convergence": {"window": 2, "tolerance": 0.1, "plateau_decay": 0.5, "patience": 1}}, "LM_SPEC"
        )
    with pytest.raises(ValueError, match="takes loss_params"):
        resolve({**LM_SPEC, "loss": "beta"})
    # the command says it in one line, naming --spec, and trains nothing
    with pytest.raises(SystemExit):
        train_lm.main(
            [
                "--spec",
                json.dumps({**LM_SPEC, "clipping": 5}),
                "--train",
                "t",
                "--valid",
                "v",
                "--test",
                "t",
                "--out-dir",
                str(tmp_path / "out"),
            ]
        )
    assert capsys.readouterr().err == "train_lm: error: --spec: unknown key clipping in a LMSpec\n"
    assert not (tmp_path / "out").exists()


def test_figure_1_mode_trains_a_slice_with_unit_norm_embeddings(corpus, tmp_path):
    stream = torch.arange(1000)
    spec = read({**LM_SPEC, "train_slice": {"length": 300, "start": None}}, "LM_SPEC")
    chosen = training_stream(spec, stream)
    assert len(chosen) == 300 and torch.equal(chosen, torch.arange(chosen[0], chosen[0] + 300))
    assert torch.equal(training_stream(spec, stream), chosen)  # drawn from the seed
    assert torch.equal(
        training_stream(dataclasses.replace(spec, train_slice=TrainSlice(300, 7)), stream), torch.arange(7, 307)
    )

    spec = {
        **LM_SPEC,
        "loss": "beta",
        "loss_params": {"beta": 1.0, "tau": 10.0},
        "dropout": 0.0,
        "max_epochs": 2,
        "unit_norm_embeddings": True,
        "train_slice": {"length": 2000, "start": None},
    }
    train_lm.main(arguments(corpus, tmp_path, spec))
    model, _ = load_language_model(tmp_path / "model.pt", torch.device("cpu"))
    torch.testing.assert_close(model.embedding.weight.norm(dim=1), torch.ones(VOCABULARY))
    assert 0 < json.loads((tmp_path / "perplexity.json").read_text())["subspace_distance"] <= 1


def test_a_second_session_restarts_the_schedule_from_the_final_weights_and_keep_last_keeps_the_last(corpus, tmp_path):
    """Footnote 4: the schedule runs again from where the first session ended; Figure 1's models
    are measured as training leaves them, however their validation perplexity went."""
    spec = {**LM_SPEC, "dropout": 0.0, "max_epochs": 2, "decay_after": 1, "sessions": 2, "keep": "last"}
    train_lm.main(arguments(corpus, tmp_path / "two", spec))
    history = metrics(tmp_path / "two")
    assert [(m["epoch"], m["session"]) for m in history] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    assert [m["lr"] for m in history] == pytest.approx([1, 0.9, 1, 0.9])
    result = json.loads((tmp_path / "two" / "perplexity.json").read_text())
    assert result["kept_epoch"] == 4 and result["sessions"] == 2
    assert result["valid_perplexity"] == pytest.approx(history[-1]["valid_perplexity"])
    # each epoch records L's largest row and its word (docs/tying.md: REAL's runaway shows there first)
    model, itos = load_language_model(tmp_path / "two" / "model.pt", torch.device("cpu"))
    norms = model.embedding.weight.norm(dim=1)
    assert history[-1]["embedding_row_norm_max"] == pytest.approx(norms.max().item(), abs=1e-4)
    assert history[-1]["embedding_row_norm_max_word"] == itos[norms.argmax()]
    # the first session alone is the first two epochs of the two
    train_lm.main(arguments(corpus, tmp_path / "one", {**spec, "sessions": 1}))
    assert metrics(tmp_path / "one") == history[:2]
    with pytest.raises(ValueError, match="keep 'first' is not one of best, last, lowest_train_loss"):
        resolve({**LM_SPEC, "keep": "first"})


def test_training_loss_improvement_and_plateaus_follow_their_definitions():
    history = [{"train_loss": loss} for loss in (5.0, 4.0, 4.5, 3.9, 3.95)]
    assert train_lm.training_loss_improvement(history[:2], window=2) is None
    assert train_lm.training_loss_improvement(history[:3], window=2) == pytest.approx((5.0 - 4.0) / 5.0)
    assert train_lm.training_loss_improvement(history, window=2) == pytest.approx((4.0 - 3.9) / 4.0)
    assert train_lm.training_loss_improvement(history[:4], window=1) == pytest.approx((4.0 - 3.9) / 4.0)
    assert train_lm.training_loss_improvement(history[:3], window=1) == pytest.approx(
        (4.0 - 4.5) / 4.0
    )  # worse: negative
    assert [train_lm.plateaus(history[:n]) for n in range(1, 6)] == [0, 0, 1, 1, 2]


def test_training_to_convergence_stops_on_the_criterion_records_it_and_keeps_the_lowest_training_loss(corpus, tmp_path):
    """Figure 1: b = 0, trained until the training loss stops improving (max_epochs a cap), the
    rate halved after each epoch that did not improve on the best, the lowest-loss epoch measured."""
    spec = {
        **LM_SPEC,
        "dropout": 0.0,
        "max_epochs": 12,
        "decay_after": 0,
        "lr_decay": 1.0,
        "output_bias": False,
        "keep": "lowest_train_loss",
        "convergence": {"window": 2, "tolerance": 0.05, "plateau_decay": 0.5},
    }
    train_lm.main(arguments(corpus, tmp_path, spec))
    history = metrics(tmp_path)
    result = json.loads((tmp_path / "perplexity.json").read_text())
    stop = next(r["epoch"] for r in history if r["converged"])
    assert [r["epoch"] for r in history] == list(range(1, stop + 1)) and 2 < stop < 12  # stopped before the cap
    for e, record in enumerate(history, start=1):
        improvement = train_lm.training_loss_improvement(history[:e], 2)
        assert record["train_loss_improvement"] == (pytest.approx(improvement) if improvement is not None else None)
        assert record["converged"] == (improvement is not None and improvement < 0.05)
        assert record["lr"] == pytest.approx(0.5 ** train_lm.plateaus(history[: e - 1]))
    assert result["stopped"].startswith(f"converged after epoch {stop}")
    assert result["kept_epoch"] == min(history, key=lambda r: r["train_loss"])["epoch"]
    model, _ = load_language_model(tmp_path / "model.pt", torch.device("cpu"))
    assert model.decoder is not None and model.output_bias is None
    # the cap, when the criterion never holds
    train_lm.main(
        arguments(
            corpus,
            tmp_path / "capped",
            {**spec, "max_epochs": 3, "convergence": {**spec["convergence"], "tolerance": 0.0}},
        )
    )
    assert (
        json.loads((tmp_path / "capped" / "perplexity.json").read_text())["stopped"]
        == "the epoch cap: 1 x 3 epochs without converging"
        or metrics(tmp_path / "capped")[-1]["converged"]
    )
    with pytest.raises(ValueError, match="convergence"):
        resolve({**LM_SPEC, "convergence": {"window": 2}})


def saved_tiny_model(path: Path, itos: list[str]) -> LSTMLanguageModel:
    """A 6-unit language model over `itos`, seeded, saved at `path` as train_lm saves one."""
    torch.manual_seed(0)
    model = LSTMLanguageModel(len(itos), 6, init_range=1.0)
    save_language_model(path, model, resolve({**LM_SPEC, "size": 6}), itos, epoch=1)
    return model


def test_predictions_are_the_models_softmax_sorted(tmp_path, capsys):
    itos = ["the", "cat", "sees", "a", "mouse", EOS]
    model = saved_tiny_model(tmp_path / "model.pt", itos)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("the cat sees\n\na mouse\tsees the cat\n")
    lm_predict.main(
        [
            "--model",
            str(tmp_path / "model.pt"),
            "--phrases",
            str(phrases),
            "--top",
            "4",
            "--out",
            str(tmp_path / "p.json"),
        ]
    )
    results = json.loads((tmp_path / "p.json").read_text())
    assert [r["phrase"] for r in results] == ["the cat sees", "a mouse"]
    model.eval()
    for result in results:
        hidden = model.init_hidden(1)
        for word in [EOS] + result["phrase"].split():  # one word at a time, carrying the state
            logits, _, hidden = model(torch.tensor([[itos.index(word)]]), hidden)
        scores = logits[0, 0].tolist()
        expected = sorted(
            ((math.exp(s) / sum(math.exp(t) for t in scores), word) for s, word in zip(scores, itos)), reverse=True
        )
        assert [p["word"] for p in result["predictions"]] == [word for _, word in expected[:4]]
        assert [p["probability"] for p in result["predictions"]] == pytest.approx(
            [p for p, _ in expected[:4]], rel=1e-5
        )
    # the word that follows a phrase (after a tab): its probability and rank
    probability, rank = next((p, i + 1) for i, (p, word) in enumerate(expected) if word == "sees")
    assert results[1]["next"] == "sees" and results[1]["next_rank"] == rank
    assert results[1]["next_probability"] == pytest.approx(probability, rel=1e-5)
    assert "next" not in results[0]

    phrases.write_text("the cat\nthe zebra sees\n")
    with pytest.raises(SystemExit) as failure:
        lm_predict.main(
            ["--model", str(tmp_path / "model.pt"), "--phrases", str(phrases), "--out", str(tmp_path / "q.json")]
        )
    assert failure.value.code == 1
    assert "line 2, phrase 'the zebra sees': 'zebra' is not in the model's vocabulary" in capsys.readouterr().err
    assert not (tmp_path / "q.json").exists()


def test_a_word_outside_the_vocabulary_is_read_as_unk_when_the_model_has_one(tmp_path):
    itos = ["the", "cat", "sees", "<unk>", EOS]
    saved_tiny_model(tmp_path / "model.pt", itos)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("the zebra sees\tgnus\nthe <unk> sees\t<unk>\n")
    lm_predict.main(
        ["--model", str(tmp_path / "model.pt"), "--phrases", str(phrases), "--out", str(tmp_path / "p.json")]
    )
    unknown, written = json.loads((tmp_path / "p.json").read_text())
    assert unknown["unknown"] == ["gnus", "zebra"] and "unknown" not in written
    assert (
        unknown["predictions"] == written["predictions"] and unknown["next_probability"] == written["next_probability"]
    )


def test_table_4_phrases_are_read_in_the_context_of_the_test_text(tmp_path, monkeypatch):
    """The whole text before the phrase, state carried (in chunks), as one token-by-token pass
    from the text's start; a phrase the text lacks is read from a sentence start, and says so."""
    itos = ["the", "cat", "sees", "a", "mouse", EOS]
    model = saved_tiny_model(tmp_path / "model.pt", itos)
    context = ["the cat sees a mouse", "a mouse sees the cat", "the cat sees the mouse"]
    (tmp_path / "test.txt").write_text("\n".join(context) + "\n")
    (tmp_path / "phrases.txt").write_text("the cat sees\tthe mouse\nmouse mouse\tcat\n")
    monkeypatch.setattr(lm_predict, "CHUNK", 4)  # the phrase's end falls in a later chunk than its start
    lm_predict.main(
        [
            "--model",
            str(tmp_path / "model.pt"),
            "--phrases",
            str(tmp_path / "phrases.txt"),
            "--top",
            "6",
            "--context",
            str(tmp_path / "test.txt"),
            "--out",
            str(tmp_path / "p.json"),
        ]
    )
    found, missing = json.loads((tmp_path / "p.json").read_text())
    stream = [itos.index(w) for line in context for w in line.split() + [EOS]]
    prefix = stream[: 12 + 3]  # "the cat sees" followed by "the" first occurs in the third line
    model.eval()
    hidden = model.init_hidden(1)
    for word in prefix:
        logits, _, hidden = model(torch.tensor([[word]]), hidden)
    expected = torch.softmax(logits[0, 0].double(), -1)
    assert found["context"] == "in context: tokens 1-15 of the text"
    assert {p["word"]: p["probability"] for p in found["predictions"]} == pytest.approx(
        {word: p for word, p in zip(itos, expected.tolist())}, rel=1e-5
    )
    at_sentence_start = lm_predict.next_word_probabilities(model, [itos.index(w) for w in [EOS, "the", "cat", "sees"]])
    assert not torch.allclose(expected, at_sentence_start, rtol=1e-3)
    assert missing["context"] == "from a zero state after <eos>, not found in the context text"


def test_the_mean_probability_of_words_over_the_text_against_a_token_by_token_pass(tmp_path, monkeypatch, capsys):
    """§6.4's evidence (tying C17, C18): at each position of the context text followed by a token other
    than w, p(w | the text before it), summed per block of positions (positions where w comes next
    left out, and not counted); a word outside the vocabulary is named."""
    read_stream = lm_predict.read_stream
    itos = ["the", "cat", "sees", "a", "<unk>", EOS]
    model = saved_tiny_model(tmp_path / "model.pt", itos)
    context = ["the cat sees a zebra", "a cat sees the cat", "the zebra sees"]
    (tmp_path / "test.txt").write_text("\n".join(context) + "\n")
    (tmp_path / "phrases.txt").write_text("the cat\n")
    monkeypatch.setattr(lm_predict, "CHUNK", 4)  # blocks and chunks cut the text at different places
    passes = []
    monkeypatch.setattr(lm_predict, "read_stream", lambda *a: passes.append(a) or read_stream(*a))
    arguments = ["--model", str(tmp_path / "model.pt"), "--phrases", str(tmp_path / "phrases.txt")]
    arguments += ["--context", str(tmp_path / "test.txt"), "--out", str(tmp_path / "p.json")]
    lm_predict.main(
        arguments
        + ["--mean-probability-of", "<unk>", "the", "an", "--block-tokens", "5"]
        + ["--mean-probability-out", str(tmp_path / "m.json")]
    )
    assert len(passes) == 1  # the phrases' predictions and the means from one reading of the text
    assert json.loads((tmp_path / "p.json").read_text())[0]["context"] == "in context: tokens 1-2 of the text"
    written = json.loads((tmp_path / "m.json").read_text())
    stream = [itos.index(w if w in itos else "<unk>") for line in context for w in line.split() + [EOS]]
    model.eval()
    hidden, expected = model.init_hidden(1), []
    for word in stream[:-1]:  # each position followed by a token: 15 of the 16
        logits, _, hidden = model(torch.tensor([[word]]), hidden)
        expected.append(torch.softmax(logits[0, 0].double(), -1))
    assert written["not_in_vocabulary"] == ["an"] and written["block_tokens"] == 5
    for word, counted in (("<unk>", [4, 5, 4]), ("the", [5, 4, 4])):  # next: "zebra" twice, "the" twice
        w, following = itos.index(word), stream[1:]
        per_block = [
            [sum(p[w].item() for p, n in zip(expected[i : i + 5], following[i : i + 5]) if n != w), counted[i // 5]]
            for i in range(0, len(expected), 5)
        ]
        assert [n for _, n in written["words"][word]] == counted
        assert [s for s, _ in written["words"][word]] == pytest.approx([s for s, _ in per_block], rel=1e-6)
    with pytest.raises(SystemExit):  # over what text?
        lm_predict.main(arguments[:4] + ["--out", str(tmp_path / "q.json"), "--mean-probability-of", "the"])
    assert "--mean-probability-of needs --context" in capsys.readouterr().err and not (tmp_path / "q.json").exists()


def test_a_diverging_run_stops_after_two_diverged_epochs_and_says_why(corpus, tmp_path):
    """A rate growing 4-fold an epoch after the third blows the tiny model up once it has learned;
    training stops once two epochs in a row end above 1.5 times the best validation perplexity,
    keeps the best epoch, and perplexity.json says why."""
    spec = {**LM_SPEC, "lr": 1.0, "lr_decay": 4.0, "decay_after": 3, "clip": 1000.0, "dropout": 0.0, "max_epochs": 12}
    train_lm.main(arguments(corpus, tmp_path, spec))
    history = metrics(tmp_path)
    best = min(history, key=lambda m: m["valid_perplexity"])
    assert len(history) < 12 and all(m["valid_perplexity"] > 1.5 * best["valid_perplexity"] for m in history[-2:])
    assert best["epoch"] > 1 and not train_lm.given_up(
        history[:-1]
    )  # it learned, and stopped at the first epoch it could
    result = json.loads((tmp_path / "perplexity.json").read_text())
    assert result["stopped"].startswith("diverged: validation perplexity") and result["kept_epoch"] == best["epoch"]


def test_an_unreadable_checkpoint_is_said_and_a_finished_run_is_kept_or_trained_again(corpus, tmp_path, capsys):
    """A garbage checkpoint of a finished run, model.pt and perplexity.json deleted as Snakemake
    deletes outputs it reruns (metrics.jsonl it keeps: rules/lm.smk): the rerun names the
    checkpoint and scores kept.pt again without training. With kept.pt truncated too, it trains
    from scratch, says so, and ends where the first run did."""
    spec = {**LM_SPEC, "max_epochs": 2}
    train_lm.main(arguments(corpus, tmp_path, spec))
    before, history = (tmp_path / "perplexity.json").read_text(), (tmp_path / "metrics.jsonl").read_text()
    checkpoint = tmp_path / "checkpoint.pt"
    for damaged in ("checkpoint", "checkpoint and kept model"):
        checkpoint.write_bytes(b"n" + bytes(range(256)))
        if damaged != "checkpoint":
            kept = tmp_path / "kept.pt"
            kept.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])
        for name in ("model.pt", "perplexity.json"):
            (tmp_path / name).unlink()
        capsys.readouterr()
        train_lm.main(arguments(corpus, tmp_path, spec))
        err = capsys.readouterr().err
        assert f"{checkpoint}: unreadable (UnpicklingError: invalid load key, 'n'" in err
        if damaged == "checkpoint":
            assert "not training again" in err and '"train_loss"' not in err
            assert (tmp_path / "metrics.jsonl").read_text() == history
        else:
            assert (
                f"training from scratch: no finished run to go on from ({kept}: unreadable" in err
                and '"train_loss"' in err
            )
            assert metrics(tmp_path) == [
                {k: v for k, v in json.loads(line).items() if k not in {"seconds", "tokens_per_second"}}
                for line in history.splitlines()
            ]
        assert (tmp_path / "perplexity.json").read_text() == before
