"""<unk> replacement on a hand-made example; BLEU against sacrebleu's own command line."""

import json
import subprocess
import sys

import pytest

from workflow_src.decode.decode import piece_to_word, read_dictionary, replace_unknowns
from workflow_src.score.score import bleu, main as score_main


def test_unk_replaced_through_attention_and_dictionary():
    source = "le chat mange la souris grise".split()
    hypothesis = ["the", "<unk>", "eats", "the", "<unk>", "<unk>", "."]
    attended = [0, 1, 2, 3, 4, 5, 5]
    dictionary = {"chat": "cat", "souris": "mouse"}
    out = replace_unknowns(hypothesis, attended, source, list(range(len(source))), dictionary)
    # chat -> cat (dictionary), souris -> mouse, grise -> copied (no entry)
    assert out == ["the", "cat", "eats", "the", "mouse", "grise", "."]


def test_unk_replacement_through_subword_positions():
    pieces = ["▁le", "▁ch", "at", "▁gr", "is", "e"]
    assert piece_to_word(pieces) == [0, 1, 1, 2, 2, 2]
    out = replace_unknowns(["<unk>", "<unk>"], [2, 4], ["le", "chat", "grise"], piece_to_word(pieces), {"chat": "cat"})
    assert out == ["cat", "grise"]


def test_dictionary_file_errors_name_the_line(tmp_path):
    path = tmp_path / "dict.tsv"
    path.write_text("chat\tcat\t3\nbroken line\n")
    try:
        read_dictionary(path)
    except ValueError as err:
        assert "dict.tsv, line 2" in str(err)
    else:
        raise AssertionError("a malformed line must fail")


@pytest.mark.parametrize("tokenize", [None, "none"])
def test_bleu_matches_sacrebleu_command_line(tmp_path, tokenize):
    """Detokenized text with sacrebleu's 13a, and (the joint paper's multi-bleu) tokenized text with none."""
    refs = ["The cat sat on the mat.", "Why aren't we just robots?", "It is going to require each of us.", "Thanks."]
    hyps = ["The cat sat on a mat.", "Why are we not robots?", "It will require each of us.", "Thank you."]
    if tokenize == "none":
        refs, hyps = (
            [line.replace(".", " .").replace("?", " ?").replace("n't", " n't") for line in lines]
            for lines in (refs, hyps)
        )
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    (tmp_path / "hyp").write_text("\n".join(hyps) + "\n")
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "sacrebleu",
            str(tmp_path / "ref"),
            "-i",
            str(tmp_path / "hyp"),
            "-m",
            "bleu",
            "-f",
            "json",
            "-w",
            "2",
            *(["-tok", tokenize] if tokenize else []),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    expected = json.loads(cli.stdout)
    ours = bleu(hyps, refs, **({"tokenize": tokenize} if tokenize else {}))
    if tokenize:
        assert "tok:none" in ours["signature"]
    assert 0 < ours["score"] < 100
    assert ours["score"] == expected["score"]
    assert ours["signature"] == expected["signature"]


def test_score_tool_writes_signature(tmp_path):
    (tmp_path / "ref").write_text("a b c d\n")
    (tmp_path / "hyp").write_text("a b c d\n")
    score_main(
        ["bleu", "--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "ref"), "--out", str(tmp_path / "s.json")]
    )
    result = json.loads((tmp_path / "s.json").read_text())
    assert result["score"] == 100.0 and result["signature"].startswith("nrefs:1|case:mixed")
