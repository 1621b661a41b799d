"""|Θ| at the papers' sizes, checked without training: every model is built from config.yaml on
torch's `meta` device (shapes, no memory, no data) and its trainable parameters are counted
against each count the papers print.

A vMF or tying count fails at more than 1% off, or beyond the rounding of the printed number where
that is coarser (the tying paper's "20M" stands for anything in [19.5M, 20.5M)). The joint paper's
counts are checked to their printed rounding (0.1M), against vocabularies derived from one printed
row, with nothing fitted; a count the paper prints 0.2M off fails. Where the paper leaves a size
open, the test says which printed numbers it spends on recovering it.
"""

import dataclasses

import pytest
import torch
import yaml

from tests.conftest import REPO
from workflow_src.layout import train_spec
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.seq2seq import Seq2Seq
from workflow_src.papers import joint, tying, vmf

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
PAD = 1


def close(ours: float, printed: float, rounding: float = 0.0) -> bool:
    """Within 1% of the printed count, or within half its last printed digit (`rounding`)."""
    return abs(ours - printed) <= max(0.01 * printed, rounding / 2)


def trainable(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def translation_model(name: str, dataset: str, pair: str, src_vocab: int, tgt_vocab: int) -> Seq2Seq:
    """Experiment `name` as config.yaml trains it on `dataset`, with the given vocabularies, on `meta`."""
    spec = train_spec(CONFIG, dataset, pair, name, seed=1)
    dim = CONFIG["embeddings"]["fasttext"]["dim"]
    with torch.device("meta"):
        table = torch.empty(tgt_vocab, dim) if spec.embeddings else None
        return Seq2Seq(spec, src_vocab, tgt_vocab, PAD, table)


# --- vMF paper, Table 4: input layer (the decoder's input embeddings) and output layer, IWSLT16 fr-en.
# Its vocabularies are Table 7's 50K words; the BPE rows have 16K pieces (8.192M / 512), config
# datasets.iwslt16.bpe_merges. The output counts leave the softmax bias out (50K, 0.1%).
@pytest.mark.parametrize("row", vmf.ARTEFACTS["table4"].rows, ids=lambda row: row.experiment)
def test_vmf_table4_input_and_output_layers(row):
    data = CONFIG["datasets"]["iwslt16"]
    experiment = vmf.EXPERIMENTS[row.experiment]
    words = data["emb_vocab_size"] if experiment.target_unit == "emb" else data["tgt_vocab_size"]
    vocab = data["bpe_merges"]["tgt"] if experiment.target_unit == "bpe" else words
    model = translation_model(row.experiment, "iwslt16", "fr-en", vocab, vocab)
    assert close(trainable(model.decoder.embed), row.paper["input"]), (
        trainable(model.decoder.embed),
        row.paper["input"],
    )
    assert close(trainable(model.output), row.paper["output"]), (trainable(model.output), row.paper["output"])


def test_vmf_encoder_is_bidirectional_as_table7_says():
    spec = train_spec(CONFIG, "iwslt16", "fr-en", "word2word-ce", seed=1)
    assert spec.model.encoder_bidirectional is True and spec.model.encoder_layers == 1
    model = translation_model("word2word-ce", "iwslt16", "fr-en", 50000, 50000)
    assert model.encoder.rnn.bidirectional and model.encoder.rnn.hidden_size == 512


# --- The joint paper (WMT17, Tables 2, 3 and 5). It prints |Θ| (to 0.1M) but not |V|. Per direction
# and BPE size, with d = d_h = 512 (§4.2) and R everything that does not grow with a vocabulary:
#     NMT       = R + 512 |V_src| + 512 |V_tgt| + 513 |V_tgt|     (source and target embeddings, W and b)
#     NMT-tied  = R + 512 |V_src| + 513 |V_tgt|
#     any other = NMT-tied + what its output layer (Eq. 6, 7a, 7b, 15 at d_j) or its depth adds,
# and what they add does not depend on |V|. So ONE printed row, NMT-tied, fixes everything the
# vocabularies do to every model but NMT: the test derives |V_src| from it and checks every other row
# against it, with nothing fitted: NMT-joint at the d_j the paper states, the ablations (Table 3) and
# the depths 1, 3, 4 (Table 5). Only the NMT rows see |V_tgt| apart, as NMT - NMT-tied = 512 |V_tgt|:
# that is where |V_tgt| comes from (no NMT row of Table 2 is a check: each is the only number that
# says its |V_tgt|; Table 5's NMT rows at depths 1, 3, 4 are, against Table 2's De→En 32K NMT).
# Our decoder's learned bridge (D13: 2 (512² + 512) = 0.53M, where OpenNMT-py copies the encoder's
# states) is left out of our counts here, so that they are the paper's architecture.
# A check passes within two printed roundings (this row's and the row its vocabulary came from,
# 0.05M each) plus the rounding of the derived vocabularies to whole pieces: a count printed 0.2M off
# fails (test_a_joint_count_printed_02m_off_fails). A row that does not match is not fitted away:
# KNOWN_MISMATCHES names it, its ledger entry and the difference measured, and the test requires
# exactly that difference.
D_H = 512
TOLERANCE = 2 * 0.05e6 + 2 * 1025
TABLE2_BY_NAME = {row.experiment: row for row in joint.ARTEFACTS["table2"].rows}
# Table 2's NMT-joint d_j where the paper states it (the table chooses it on validation, §4.2, and prints none):
# §4.4 "Depth": "our NMT-joint with d_j = 2048 reaches 18.11 score with a 2-layer deep model" (De→En 32K,
# also Table 3's Eq. 15 (2048) row, 48.8M); §4.4 "Performance", on Figure 2 (32K): for English-Finnish
# "the increase in embedding size leads to a consistent increase in BLEU" (4096), "the optimal size is
# observed around 2048 for De → En and around 512 on En → De". At 64K and 128K the paper states no d_j:
# those NMT-joint counts are not checked (any of 512, 2048, 4096 would be a fit).
TABLE2_JOINT_DIMS = {("En→Fi", "32k"): 4096, ("Fi→En", "32k"): 4096, ("En→De", "32k"): 512, ("De→En", "32k"): 2048}
# (table, column, experiment) -> (ledger entry of workflow_src/papers/joint.py, our count - the printed one)
KNOWN_MISMATCHES = {
    ("table2", "En→De", joint.name("32k", "joint", 512)): ("D19", -1.58e6),  # 47.0M is d_j = 2048's, not §4.4's 512
}


def printed(table: str, experiment: str, column: str) -> float:
    """The paper's |Θ| of a row, read from the registry each time (a test may change it)."""
    rows = joint.ARTEFACTS[table].rows
    return next(row.paper[f"{column} |Θ|"] for row in rows if row.experiment == experiment)


def pair_of(column: str) -> str:
    return next(c.pair for c in joint.DIRECTIONS if c.name == column)


def joint_count(name: str, column: str, src_vocab: int, tgt_vocab: int) -> int:
    """Our trainable parameters of experiment `name` at these vocabularies, less the bridge (D13)."""
    model = translation_model(name, "wmt17", pair_of(column), src_vocab, tgt_vocab)
    return trainable(model) - trainable(model.decoder.bridge_h) - trainable(model.decoder.bridge_c)


def joint_vocabularies(column: str, bpe: str) -> tuple[int, int]:
    """(|V_src|, |V_tgt|): |V_tgt| from NMT - NMT-tied, then |V_src| from NMT-tied's count, which alone
    fixes every count but NMT's (any split of it between the sides gives NMT-tied, hence the others)."""
    tied = printed("table2", joint.name(bpe, "tied"), column)
    tgt_vocab = round((printed("table2", joint.name(bpe, "nmt"), column) - tied) / D_H)
    width = CONFIG["architectures"]["joint"]["src_embedding"]
    # |Θ| grows by `width` per source piece: a model with a 2-piece source gives the rest
    rest = joint_count(joint.name(bpe, "tied"), column, 2, tgt_vocab) - 2 * width
    return round((tied - rest) / width), tgt_vocab


def joint_difference(table: str, experiment: str, column: str, bpe: str) -> float:
    """Our count of a row at the vocabularies Table 2's NMT-tied (and NMT) rows imply, less the printed one."""
    return joint_count(experiment, column, *joint_vocabularies(column, bpe)) - printed(table, experiment, column)


def joint_check(table: str, experiment: str, column: str, bpe: str = "32k") -> bool:
    """True when our count matches the printed one; a known mismatch must show its recorded difference."""
    difference = joint_difference(table, experiment, column, bpe)
    known = KNOWN_MISMATCHES.get((table, column, experiment))
    return abs(difference - (known[1] if known else 0.0)) <= TOLERANCE


def test_joint_vocabularies_as_the_counts_imply_them():
    """The vocabularies the test derives, stated: none above its merges plus 15% (most lie within 10%
    of them; two source sides at 128K hold about half: D16, the next test)."""
    src_vocab, tgt_vocab = joint_vocabularies("De→En", "32k")
    assert tgt_vocab == pytest.approx(35.7e3, abs=100) and src_vocab == pytest.approx(35.4e3, abs=100)
    for bpe, merges in (("32k", 32e3), ("64k", 64e3), ("128k", 128e3)):
        for column in joint.DIRECTIONS:
            for side, size in zip(("src", "tgt"), joint_vocabularies(column.name, bpe)):
                assert 0 < size < 1.15 * merges, (column.name, bpe, side, size)


def test_joint_128k_sources_of_fi_en_and_de_en_are_their_64k_sizes():
    """D16: at 128K, Fi→En's and De→En's source sides hold the pieces of their 64K vocabularies
    (about 64K and 67K), where ours holds every piece of 128K merges: our models are 17-20% larger."""
    for column, expected in (("Fi→En", 64.3e3), ("De→En", 67.4e3)):
        src_128k, tgt_128k = joint_vocabularies(column, "128k")
        assert src_128k == pytest.approx(expected, abs=200)
        assert src_128k == pytest.approx(joint_vocabularies(column, "64k")[0], abs=200)
        ours = joint_count(joint.name("128k", "nmt"), column, 128_000, tgt_128k)  # merges alone: a lower bound
        larger = ours / printed("table2", joint.name("128k", "nmt"), column) - 1
        assert 0.17 <= larger <= 0.21, (column, larger)


@pytest.mark.parametrize("column, bpe", list(TABLE2_JOINT_DIMS), ids=lambda x: x)
def test_joint_table2_nmt_joint_at_the_stated_dj(column, bpe):
    """The row is registered at d_j 512 and chooses among all three; the count is checked at §4.4's d_j."""
    experiment = joint.name(bpe, "joint", TABLE2_JOINT_DIMS[column, bpe])
    row = joint.name(bpe, "joint", 512)
    counted = joint_count(experiment, column, *joint_vocabularies(column, bpe)) - printed("table2", row, column)
    known = KNOWN_MISMATCHES.get(("table2", column, row))
    assert abs(counted - (known[1] if known else 0.0)) <= TOLERANCE, (column, bpe, counted, known)


@pytest.mark.parametrize("row", joint.ARTEFACTS["table3"].rows[2:], ids=lambda row: row.experiment)
def test_joint_table3_ablations(row):
    assert joint_check("table3", row.experiment, "De→En"), joint_difference("table3", row.experiment, "De→En", "32k")


def test_joint_table3_baselines_are_table2s():
    """Table 3's NMT and NMT-tied rows are Table 2's De→En 32K models (spent on the vocabularies)."""
    for row in joint.ARTEFACTS["table3"].rows[:2]:
        assert row.paper["De→En |Θ|"] == TABLE2_BY_NAME[row.experiment].paper["De→En |Θ|"]


@pytest.mark.parametrize(
    "row", [r for r in joint.ARTEFACTS["table5"].rows if r.label["Layers"] != "2"], ids=lambda row: row.experiment
)
def test_joint_table5_depths(row):
    """4.2M per layer a side: a unidirectional encoder layer and a decoder layer of 512 units, 2.1M each
    (a bidirectional encoder layer of 2 x 256 would add 1.58M)."""
    assert joint_check("table5", row.experiment, "De→En"), joint_difference("table5", row.experiment, "De→En", "32k")


def test_joint_table5_depth2_rows_are_table3s():
    """Table 5's 2-layer rows are Table 3's NMT, NMT-tied and Eq. 15 (512): d_j 512's 47.2M, where
    Table 2's De→En 32K NMT-joint prints 48.8M, d_j 2048's (D19)."""
    table3 = {row.experiment: row.paper["De→En |Θ|"] for row in joint.ARTEFACTS["table3"].rows}
    for row in joint.ARTEFACTS["table5"].rows:
        if row.label["Layers"] == "2":
            assert row.paper["De→En |Θ|"] == table3[row.experiment]


@pytest.mark.parametrize(
    "table, experiment, changed",
    [
        ("table3", joint.name("32k", "joint", 2048), joint.name("32k", "joint", 2048)),  # the checked row itself
        ("table3", joint.name("32k", "joint", 2048), joint.name("32k", "tied")),  # the row the vocabulary comes from
        ("table5", joint.name("32k", "nmt", layers=3), joint.name("32k", "nmt")),  # NMT's |V_tgt| for the depths
        ("table5", joint.name("32k", "joint", 512, 4), joint.name("32k", "joint", 512, 4)),
    ],
)
@pytest.mark.parametrize("shift", [0.2e6, -0.2e6])
def test_a_joint_count_printed_02m_off_fails(monkeypatch, table, experiment, changed, shift):
    """The checks can fail: a printed count 0.2M off, in the checked row or in a row its vocabulary is
    derived from, makes the check of a row that passes fail."""
    assert joint_check(table, experiment, "De→En")
    source = "table2" if changed in TABLE2_BY_NAME and changed != experiment else table
    row = next(r for r in joint.ARTEFACTS[source].rows if r.experiment == changed)
    monkeypatch.setitem(row.paper, "De→En |Θ|", row.paper["De→En |Θ|"] + shift)
    assert not joint_check(table, experiment, "De→En")


def test_a_known_mismatch_is_measured_not_excused(monkeypatch):
    """A known mismatch passes only at its recorded difference: the printed count 0.2M off fails it too."""
    row = TABLE2_BY_NAME[joint.name("32k", "joint", 512)]
    assert joint_check("table2", row.experiment, "En→De")  # at d_j 512: the recorded -1.58M
    monkeypatch.setitem(row.paper, "En→De |Θ|", row.paper["En→De |Θ|"] + 0.2e6)
    assert not joint_check("table2", row.experiment, "En→De")


def test_joint_encoder_is_unidirectional():
    spec = train_spec(CONFIG, "wmt17", "de-en", joint.name("32k", "nmt"), seed=1)
    assert spec.model.encoder_bidirectional is False


# --- The tying paper, Table 3: PTB (|V| = 10K), 2-layer LSTMs whose width equals the embedding's
# (§6.1: 1500 units large, 650 medium). Its own model, VD-LSTM + REAL (large): 51M; the untied
# baselines it prints: LSTM (large) 66M and (medium) 20M (Zaremba et al.), VD-LSTM (large) 66M (Gal).
PTB_VOCAB = 10000


@pytest.mark.parametrize(
    "size, reuse, printed", [("large", True, 51e6), ("large", False, 66e6), ("medium", False, 20e6)]
)
def test_tying_table3(size, reuse, printed):
    with torch.device("meta"):
        model = LSTMLanguageModel(PTB_VOCAB, CONFIG["lm"]["sizes"][size], reuse_embedding=reuse)
    assert close(trainable(model), printed, rounding=1e6), trainable(model)


def test_tying_table3_rows_are_the_models_counted():
    real = next(row for row in tying.ARTEFACTS["table3"].rows if row.experiment == tying.name("large", "real"))
    assert real.label["Parameters"] == "51M"
    assert dataclasses.asdict(tying.LANGUAGE_MODELS[real.experiment])["reuse_embedding"] is True
