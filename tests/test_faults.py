"""Faults name their file: every loader of a checkpoint, model, vocabulary, embedding table or
metrics file, given a truncated or a garbage file, fails with one line that names the path and what
was expected there; a command that meets one ends with that line, no traceback; a training run
whose checkpoint is unreadable says so and goes on from a finished run's history and kept model,
or from scratch. Small files, no training: well under a second in all."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.conftest import LM_SPEC, REPO, translation_spec
from workflow_src.atomic import FileFault, read_metrics
from workflow_src.data.embeddings import read_vec, write_vec
from workflow_src.data.vocab import Vocab
from workflow_src.decode import decode, lm_predict
from workflow_src.model.lm import build_model, load_language_model, save_language_model
from workflow_src.model.nmt_data import load_model, save_model
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.train import checkpoints
from workflow_src.train.train_lm import resolve

SPEC = {"experiment": "tiny", "train": {"max_epochs": 2}}
HISTORY = [
    {"epoch": 1, "dev_bleu": 1.5, "best": True, "early_stop": False},
    {"epoch": 2, "dev_bleu": 2.5, "best": True, "early_stop": False},
]


def finished(history):
    return bool(history) and history[-1]["epoch"] >= SPEC["train"]["max_epochs"]


def write_torch(path, value):
    torch.save(value, path)


def write_translation_model(path):
    vocab = Vocab([f"w{i}" for i in range(30)])
    spec = translation_spec({})
    save_model(path, Seq2Seq(spec, len(vocab), len(vocab), vocab.pad), spec, vocab, vocab)


def write_language_model(path):
    spec = resolve(LM_SPEC)
    save_language_model(path, build_model(spec, 30), spec, [f"w{i}" for i in range(30)], 1)


def write_vocabulary(path):
    path.write_text("".join(f"word{i}\t{100 - i}\n" for i in range(40)))


def write_table(path):
    write_vec(path, [f"word{i}" for i in range(20)], np.random.default_rng(0).standard_normal((20, 8)))


def write_metrics(path):
    path.write_text("".join(json.dumps(r) + "\n" for r in HISTORY * 5))


def resume_from(path):
    """The checkpoint at `path` read as a training run starting again reads it: None (from scratch)
    is its answer to a damaged one, and the log's one line names the file."""
    lines = []
    assert checkpoints.resume_point(path.parent, path.parent / "best.pt", SPEC, finished, "cpu", lines.append) is None
    assert len(lines) == 1 and "training from scratch" in lines[0]
    raise FileFault(lines[0])


# name: (write a good file, where a truncation cuts it (after the last such byte in its first half), load it)
LOADERS = {
    "checkpoint": (
        lambda p: write_torch(
            p,
            {
                "spec_hash": checkpoints.spec_hash(SPEC),
                "epoch": 2,
                "history": HISTORY,
                "model": {"w": torch.zeros(256)},
            },
        ),
        None,
        resume_from,
    ),
    "translation model": (write_translation_model, None, lambda p: load_model(p, torch.device("cpu"))),
    "language model": (write_language_model, None, lambda p: load_language_model(p, torch.device("cpu"))),
    "vocabulary": (write_vocabulary, b"\t", lambda p: Vocab.load(p, 10)),
    "embedding table": (write_table, b" ", read_vec),
    "metrics": (write_metrics, b",", read_metrics),
}


def damage(path, how: str, cut_after: bytes | None) -> None:
    data = path.read_bytes()
    if how == "truncated":
        end = len(data) // 2 if cut_after is None else data.rindex(cut_after, 0, len(data) // 2) + 1
        path.write_bytes(data[:end])
    else:
        path.write_bytes(bytes(range(256)) * 4)


@pytest.mark.parametrize("how", ["truncated", "garbage"])
@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_damaged_file_is_one_line_naming_it_and_what_was_expected(tmp_path, name, how):
    write, cut_after, load = LOADERS[name]
    path = tmp_path / "checkpoint.pt"  # the name a checkpoint must have; the others take any
    write(path)
    load(path) if name != "checkpoint" else None  # the good file loads
    damage(path, how, cut_after)
    with pytest.raises(FileFault) as fault:
        load(path)
    message = str(fault.value)
    assert str(path) in message and "expected" in message and "\n" not in message, message


def test_an_empty_vocabulary_is_a_fault_not_a_vocabulary_of_special_tokens(tmp_path):
    (tmp_path / "vocab.tsv").write_text("")
    with pytest.raises(FileFault, match=r"vocab\.tsv: empty; expected 'word<TAB>count' lines"):
        Vocab.load(tmp_path / "vocab.tsv")


def test_a_command_that_meets_a_damaged_model_ends_with_its_one_line(tmp_path, capsys):
    model = tmp_path / "model.pt"
    model.write_bytes(b"n" + bytes(range(256)))  # pickle's "invalid load key, 'n'"
    for text in ("src.txt", "words.txt", "dict.tsv", "phrases.txt"):
        (tmp_path / text).write_text("a\tb\n" if text == "dict.tsv" else "a b\n")
    with pytest.raises(SystemExit) as decoding:
        decode.main(
            [
                "--model",
                str(model),
                "--src",
                str(tmp_path / "src.txt"),
                "--src-words",
                str(tmp_path / "words.txt"),
                "--dictionary",
                str(tmp_path / "dict.tsv"),
                "--tgt-lang",
                "en",
                "--out-tok",
                str(tmp_path / "o.tok"),
                "--out",
                str(tmp_path / "o.txt"),
                "--device",
                "cpu",
            ]
        )
    with pytest.raises(SystemExit) as predicting:
        lm_predict.main(
            ["--model", str(model), "--phrases", str(tmp_path / "phrases.txt"), "--out", str(tmp_path / "o.json")]
        )
    for command, ended in (("decode", decoding), ("lm_predict", predicting)):
        line = ended.value.code
        assert line.startswith(f"{command}: error: {model}: unreadable (UnpicklingError: invalid load key, 'n'")
        assert "expected a" in line and "\n" not in line, line
    assert not (tmp_path / "o.txt").exists() and not (tmp_path / "o.json").exists()


def test_an_unreadable_checkpoint_of_a_finished_run_is_rebuilt_from_its_history_and_kept_model(tmp_path):
    """metrics.jsonl (the whole history) and best.pt (this spec's kept model) make the finished state
    again: the run is finished without training, and the checkpoint rewritten from them."""
    write_metrics(tmp_path / "metrics.jsonl")
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in HISTORY))
    torch.save({"spec": SPEC, "state_dict": {"w": torch.ones(3)}, "epoch": 2}, tmp_path / "best.pt")
    (tmp_path / "checkpoint.pt").write_bytes(b"PK\x03\x04" + bytes(100))  # a zip's first bytes, then nothing
    lines = []
    saved = checkpoints.resume_point(tmp_path, tmp_path / "best.pt", SPEC, finished, "cpu", lines.append)
    assert saved == {"spec_hash": checkpoints.spec_hash(SPEC), "epoch": 2, "history": HISTORY, "finished": True}
    assert (
        len(lines) == 1
        and lines[0].startswith(f"{tmp_path / 'checkpoint.pt'}: unreadable")
        and "not training again" in lines[0]
    )
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False) == saved
    # another spec's kept model, or a history whose stopping rule had not fired: from scratch, said
    for spec, history in (({**SPEC, "experiment": "other"}, HISTORY), (SPEC, HISTORY[:1])):
        (tmp_path / "checkpoint.pt").write_bytes(b"garbage")
        (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in history))
        torch.save({"spec": spec, "state_dict": {}, "epoch": 1}, tmp_path / "best.pt")
        lines.clear()
        assert checkpoints.resume_point(tmp_path, tmp_path / "best.pt", SPEC, finished, "cpu", lines.append) is None
        assert len(lines) == 1 and "training from scratch" in lines[0], lines


def test_a_missing_text_file_is_one_line_naming_it_and_what_belongs_there(tmp_path, capsys):
    from workflow_src.atomic import read_lines
    from workflow_src.plan.cost import main as plan

    with pytest.raises(FileFault, match=f"^{tmp_path}/gone.txt: No such file or directory; expected a test set$"):
        read_lines(tmp_path / "gone.txt", "a test set")
    with pytest.raises(SystemExit) as ended:
        plan(["compare", "--jobs", str(tmp_path / "plan.jobs.csv"), "--out-prefix", str(tmp_path / "compared")])
    missing = f"{tmp_path}/plan.jobs.csv: No such file or directory; expected the plan's <prefix>.jobs.csv"
    assert str(ended.value).endswith(f": error: {missing}")  # named after the command that runs it (below)
    typed = subprocess.run(  # as a user types it: the command's own name
        [sys.executable, "-m", "workflow_src.plan", "compare", "--jobs", str(tmp_path / "plan.jobs.csv")]
        + ["--out-prefix", str(tmp_path / "compared")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert typed.returncode == 1 and typed.stderr == f"plan: error: {missing}\n"


def test_a_command_ended_without_teardown_keeps_its_status_and_its_flushed_output():
    """The GPU check's commands end by `exit_without_teardown`: what they printed (block-buffered
    into a pipe) is all there, with their status, and no exit handler runs after the verdict."""
    script = (
        "import atexit, sys\n"
        "from workflow_src.atomic import exit_without_teardown\n"
        "atexit.register(lambda: print('teardown ran'))\n"
        "print('verdict', end='')\n"
        "sys.stderr.write('said')\n"
        "exit_without_teardown(3)\n"
    )
    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout block-buffered, as a pipe's is
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=buffered, capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "verdict", "said")
