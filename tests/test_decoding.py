"""Decoding: beam search with beam 1 is greedy search; with a wide beam it is exact."""

import dataclasses
import itertools

import pytest
import torch

from tests import fixed_step
from tests.conftest import translation_spec
from workflow_src.data.vocab import Vocab
from workflow_src.decode.decode import translate
from workflow_src.model.seq2seq import Seq2Seq

# fixed_step's tiny softmax model without dropout
SPEC = translation_spec({"experiment": "t", "model": {**fixed_step.BASE["model"], "dropout": 0.0}})
PAD, UNK, BOS, EOS = 0, 1, 2, 3


def model(vocab: int, seed: int) -> Seq2Seq:
    torch.manual_seed(seed)
    m = Seq2Seq(SPEC, 20, vocab, PAD)
    for p in m.parameters():
        torch.nn.init.uniform_(p, -1.5, 1.5)  # peaked distributions: a wide beam matters
    return m.eval()


def sources(batch: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 6, (batch,), generator=generator)
    src = torch.randint(4, 20, (batch, int(lengths.max())), generator=generator)
    for i, n in enumerate(lengths):
        src[i, n:] = PAD
    return src, lengths


def test_beam_one_is_greedy():
    m = model(30, seed=0)
    src, lengths = sources(8, seed=1)
    greedy = m.greedy(src, lengths, BOS, EOS, [PAD, BOS], max_len=12)
    beam = m.beam_search(src, lengths, BOS, EOS, [PAD, BOS], max_len=12, beam=1)
    assert torch.equal(greedy[0], beam[0]) and torch.equal(greedy[1], beam[1])


@torch.no_grad()
def sequence_score(m, src, lengths, sequence) -> float:
    tgt_in = torch.tensor([[BOS] + sequence[:-1]])
    outputs, _ = m(src, lengths, tgt_in)
    log_probs = m.output.scores(outputs)[0]
    return float(sum(log_probs[t, w] for t, w in enumerate(sequence)))


def test_a_beam_as_wide_as_the_search_space_finds_the_best_sequence():
    m = model(7, seed=3)  # words 4, 5, 6 and </s>
    max_len = 3
    candidates = []
    for n in range(1, max_len + 1):
        for body in itertools.product([4, 5, 6, EOS], repeat=n):
            if EOS in body[:-1] or (n < max_len and body[-1] != EOS):
                continue
            candidates.append(list(body))
    src, lengths = sources(12, seed=4)
    words, _ = m.beam_search(src, lengths, BOS, EOS, [PAD, UNK, BOS], max_len=max_len, beam=64)
    greedy, _ = m.greedy(src, lengths, BOS, EOS, [PAD, UNK, BOS], max_len=max_len)
    trim = lambda ids: tuple(ids[: ids.index(EOS) + 1] if EOS in ids else ids)  # noqa: E731
    beaten = 0
    for i in range(12):
        scores = {tuple(c): sequence_score(m, src[i : i + 1], lengths[i : i + 1], c) for c in candidates}
        best = max(scores, key=scores.get)
        assert trim(words[i].tolist()) == best
        beaten += trim(greedy[i].tolist()) != best
    assert beaten > 0  # the test is not trivial: greedy search misses the best sequence somewhere


def test_teacher_forcing_matches_step_by_step_decoding():
    for input_feed in (True, False):
        spec = dataclasses.replace(SPEC, model=dataclasses.replace(SPEC.model, decoder_layers=2, input_feed=input_feed))
        torch.manual_seed(5)
        m = Seq2Seq(spec, 20, 30, PAD).eval()
        src, lengths = sources(4, seed=6)
        tgt_in = torch.randint(4, 30, (4, 7))
        tgt_in[:, 0] = BOS
        outputs, attention = m(src, lengths, tgt_in)
        keys, state = m.encode(src, lengths)
        for t in range(7):
            h, a, state = m.decoder.step(m.decoder.embed(tgt_in[:, t]), state, keys)
            torch.testing.assert_close(m.output(h), outputs[:, t], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(a, attention[:, t], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("search", ("greedy", "beam"))
def test_checking_for_the_end_every_8_steps_changes_nothing_before_the_first_eos(search):
    """CUDA asks whether every sentence has finished only every 8 steps (a host sync each): the
    extra steps add </s> columns and leave the words and attended positions before them as they were."""
    m = model(30, seed=3)
    with torch.no_grad():
        m.output.bias[EOS] += 4.0  # sentences end within a few words, at different steps
    src, lengths = sources(6, seed=13)

    def decode(check_every):
        if search == "greedy":
            return m.greedy(src, lengths, BOS, EOS, [PAD, BOS], max_len=40, check_every=check_every)
        return m.beam_search(src, lengths, BOS, EOS, [PAD, BOS], max_len=40, beam=3, check_every=check_every)

    (words, attended), (words_8, attended_8) = decode(1), decode(8)
    steps = words.shape[1]
    assert steps < 40 and steps % 8 and words_8.shape[1] == 8 * (steps // 8 + 1)
    assert (words == EOS).any(1).all()
    assert torch.equal(words_8[:, :steps], words) and torch.equal(attended_8[:, :steps], attended)
    assert (words_8[:, steps:] == EOS).all()


@pytest.mark.parametrize("beam", (1, 3))
def test_translate_cuts_the_extra_eos_columns(beam):
    """translate() (test sets and the development BLEU) reads each hypothesis up to its first
    </s>: decoding that runs on past the end gives the same units and attended positions."""
    m = model(30, seed=2)
    with torch.no_grad():
        m.output.bias[EOS] += 5.0
    src_vocab, tgt_vocab = Vocab([f"s{i}" for i in range(4, 20)]), Vocab([f"t{i}" for i in range(4, 30)])
    sources = [" ".join(f"s{i}" for i in range(4 + n, 8 + 2 * n)) for n in range(6)]
    widths = []

    def translated(check_every):
        def checking_every(search):
            def decode(*args, **kwargs):
                words, attended = search(m, *args, check_every=check_every, **kwargs)
                widths.append(words.shape[1])
                return words, attended

            return decode

        m.greedy, m.beam_search = checking_every(Seq2Seq.greedy), checking_every(Seq2Seq.beam_search)
        return translate(m, SPEC, src_vocab, tgt_vocab, sources, torch.device("cpu"), beam=beam)

    hypotheses = translated(1)
    assert hypotheses == translated(8)
    assert widths[1] > widths[0]  # checking every 8 steps ran on past the last </s>
    assert all(len(units) == len(attended) and "</s>" not in units for units, attended in hypotheses)
    assert len({len(units) for units, _ in hypotheses}) > 2
