"""Preprocessing as each paper did it: a BPE side keeps its whole vocabulary (vMF §4.1's 100,000
source merges), and the joint paper's 50-token limit counts BPE pieces (OpenNMT's -seq_length).
(Identity-normalised BPE: tests/test_text_tools.py.) And the data benchmark's report."""

import datetime
import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO, translation_spec
from workflow_src import layout, registry
from workflow_src.data.vocab import SPECIALS
from workflow_src.model.nmt_data import load_vocabularies, training_pairs_within

FULL = yaml.safe_load((REPO / "config.yaml").read_text())
VMF_BPE_SOURCES = ("bpe2bpe-ce", "bpe2emb-fasttext-tied-maxmargin", "bpe2emb-fasttext-tied-nllvmf_reg1reg2")


def tiny_config(max_len_unit="word"):
    return {
        "model": {
            "encoder_layers": 1,
            "decoder_layers": 1,
            "hidden": 8,
            "src_embedding": 4,
            "tgt_embedding": 4,
            "dropout": 0.0,
        },
        "datasets": {
            "toy": {
                "src_vocab_size": 50,
                "tgt_vocab_size": 50,
                "emb_vocab_size": 50,
                "max_len": 3,
                "max_len_unit": max_len_unit,
                "bpe_merges": {"src": 100, "tgt": 100},
            }
        },
        "train": {
            "device": "cpu",
            "lr": {"softmax": 1e-3, "continuous": 1e-3},
            "batch_size": 4,
            "max_epochs": 1,
            "patience": 1,
            "selection": "bleu",
            "clip": 5.0,
            "init_scale": 0.1,
        },
    }


@pytest.mark.parametrize("name", VMF_BPE_SOURCES)
def test_vmf_bpe_sources_keep_every_piece_on_the_full_config(name):
    """Tables 2, 3 and 9 on WMT16: the 50K cap is for word sides; a BPE side's vocabulary is every
    piece (`bpe=None`, the data set's bpe_merges, once capped at src_vocab_size)."""
    spec = layout.resolve_spec(FULL, "wmt16", "de-en", name, 1)
    data = FULL["datasets"]["wmt16"]
    target_cap = None if spec["target_unit"] == "bpe" else data["emb_vocab_size"]
    assert spec["vocab"] == {"src_size": None, "tgt_size": target_cap}
    assert data["bpe_merges"]["src"] > data["src_vocab_size"]  # the cap would have cut pieces


def test_every_experiment_caps_its_word_sides_only():
    data = tiny_config()["datasets"]["toy"]
    for name, e in registry.all_experiments().items():
        sizes = layout.vocab_sizes(data, e)
        assert (sizes["src_size"] is None) == (e.source_unit == "bpe"), name
        assert (sizes["tgt_size"] is None) == (e.target_unit == "bpe"), name


def test_a_bpe_vocabulary_larger_than_the_word_cap_loads_whole(tmp_path):
    counts = tmp_path / "vocab.tsv"
    counts.write_text("".join(f"p{i}\t{100 - i}\n" for i in range(80)))
    config = tiny_config()
    src, tgt, _ = load_vocabularies(layout.train_spec(config, "toy", "de-en", "bpe2bpe-ce", 1), counts, counts, None)
    assert len(src) == len(tgt) == 80 + len(SPECIALS)
    src, tgt, _ = load_vocabularies(layout.train_spec(config, "toy", "de-en", "word2bpe-ce", 1), counts, counts, None)
    assert (len(src), len(tgt)) == (50 + len(SPECIALS), 80 + len(SPECIALS))


def test_the_length_limit_is_in_the_spec_and_a_missing_key_is_named():
    spec = layout.resolve_spec(tiny_config("piece"), "toy", "de-en", "bpe2bpe-ce", 1)
    assert spec["data"] == {"max_len": 3, "max_len_unit": "piece"}
    config = tiny_config()
    del config["datasets"]["toy"]["max_len_unit"]
    with pytest.raises(ValueError, match=r"datasets\.toy\.max_len_unit: missing"):
        layout.resolve_spec(config, "toy", "de-en", "bpe2bpe-ce", 1)
    with pytest.raises(ValueError, match=r"datasets\.toy\.max_len_unit: 'token' is not word or piece"):
        layout.resolve_spec(tiny_config("token"), "toy", "de-en", "bpe2bpe-ce", 1)


def test_a_piece_limit_counts_units_without_sentence_marks():
    """OpenNMT's preprocess keeps 0 < len <= max_len on each side; targets here end in </s> (id 3)."""
    src = [[5, 6, 7], [5, 6, 7, 8], [5], [], [5, 6]]
    tgt = [[5, 6, 7, 3], [5, 3], [5, 6, 7, 8, 3], [5, 3], [3]]
    piece = translation_spec({"data": {"max_len": 3, "max_len_unit": "piece"}})
    assert training_pairs_within(piece, src, tgt) == [0]
    word = translation_spec({"data": {"max_len": 3, "max_len_unit": "word"}})  # tokenisation has already filtered words
    assert training_pairs_within(word, src, tgt) == [0, 1, 2, 3, 4]


def test_the_data_benchmark_reports_rates_and_memory_of_every_stage(tmp_path):
    out = tmp_path / "benchmarks" / "data.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflow_src.plan.data_benchmark",
            "--lines",
            "2000",
            "--merges",
            "500",
            "--out",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["lines"] == 2000 and report["cpu_count"] >= 1 and report["host"]
    assert datetime.datetime.fromisoformat(report["date"]).tzinfo is not None
    assert 15 < report["corpus"]["mean_words_en"] < 40  # news-like lengths
    assert list(report["stages"]) == ["extraction", "tokenisation", "truecasing", "bpe"]
    for name, stage in report["stages"].items():
        assert stage["lines"] == 2 * 2000, name
        assert stage["lines_per_second"] > 0 and stage["peak_rss_mb"] >= stage["baseline_rss_mb"] > 0, name
    assert 500 < report["stages"]["bpe"]["pieces"]["en"] <= 500 + 200  # merges, characters, specials
    assert [p.name for p in out.parent.iterdir()] == ["data.json"]  # the work folder is gone


def test_both_directions_of_a_wmt_corpus_share_its_training_text_and_bpe():
    """en-de and de-en (en-fi and fi-en) read the same training members the other way round: the
    direction `pairs` names first holds the training side; evaluation sets stay per direction."""
    assert layout.training_pair(FULL, "wmt17", "de-en") == "en-de" == layout.training_pair(FULL, "wmt17", "en-de")
    assert layout.training_pair(FULL, "wmt17", "fi-en") == "en-fi"
    assert layout.training_pair(FULL, "iwslt16", "en-fr") == "en-fr"  # IWSLT: an archive per direction
    assert layout.training_pair(FULL, "wmt16", "de-en") == "de-en"
    files = layout.unit_files("wmt17", "de-en", "bpe", "tgt", FULL, "32k")
    assert files["train"] == "results/data/wmt17/en-de/bpe32000/train.en"
    assert files["model"] == "results/data/wmt17/en-de/bpe32000/en.model"
    assert files["test"] == "results/data/wmt17/de-en/bpe32000/test.en"
    # a corpus that reads other members in one direction is not shared
    config = json.loads(json.dumps(FULL))
    config["datasets"]["wmt17"]["sources"]["de-en"]["train"] = config["datasets"]["wmt17"]["sources"]["de-en"]["train"][
        :1
    ]
    assert (
        layout.training_pair(config, "wmt17", "de-en") == "de-en"
        and layout.training_pair(config, "wmt17", "en-de") == "en-de"
    )
    headlines = next(e for e in FULL["datasets"]["wmt17"]["sources"]["fi-en"]["train"] if "delimited" in e)
    assert layout.swapped(headlines)["source_column"] == headlines["target_column"] == 2
