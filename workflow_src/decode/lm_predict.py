"""The next-word predictions of a language model after a phrase (the tying paper's Table 4).

`python -m workflow_src.decode.lm_predict --model model.pt --phrases FILE --top 10 --out JSON [--context TEXT
 --mean-probability-of WORD ... --block-tokens N --mean-probability-out JSON]`

For each phrase (one per line, words separated by spaces) the model, in eval mode, reads it and the
`top` words of p(w | what it read) = softmax(W h + b) are written, most probable first:
`[{"phrase": ..., "predictions": [{"word": ..., "probability": ...}, ...], "context": ...}, ...]`.
What it reads before the phrase (`context`):
- with `--context TEXT` (the tying paper's Table 4: "example phrases in the PTB test set"), the
  phrase in context: TEXT as one stream (each line's words, then `<eos>`), read from its start with
  the state carried along, up to the end of the phrase's first occurrence (followed by its next
  word, when given);
- otherwise, or for a phrase TEXT does not contain, `<eos>` and the phrase from a zero state (every
  sentence of the training stream follows an `<eos>`), and the result says so.
A word outside the model's vocabulary is read as `<unk>` when the vocabulary has it (the result
lists such words under "unknown"), and is an error otherwise.

With `--mean-probability-of` (the tying paper's §6.4: the probability "of generating the <unk> token
... across many words", and of "a", "an" and "the"), the whole context text is read, and for each
word w the probability the model gives it where another word comes next, p(w | the text before it)
at each position whose next token is not w, is summed per block of `--block-tokens` positions (each
followed by a token of the text; the rule passes the perplexity evidence's `evidence.BLOCK_TOKENS`):
`{"block_tokens": 1000, "words": {"<unk>": [[sum of p, positions], ...], ...}, "not_in_vocabulary":
[...]}`, the evidence (kind `probability`) of its mean. Positions where w itself comes next are left
out: over all positions a model trained by cross-entropy gives w about its frequency in the text
(with an output bias, exactly so on the training text), whatever else it learned, so that mean
would not tell two models apart; where another word comes next, the mass on w is what the model
spends on it wrongly (§6.4's Table 4: VD-LSTM gives <unk> 0.05-0.33 before "federal", "august",
"completed" and "technology").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import torch

from workflow_src.atomic import described, one_line_faults, read_lines, write_text
from workflow_src.data.archives import CorpusError
from workflow_src.model.lm import EOS, LSTMLanguageModel, load_language_model

CHUNK = 1000  # tokens read at once while following the context stream

UNK = "<unk>"


@torch.no_grad()
def next_word_probabilities(model: LSTMLanguageModel, ids: list[int]) -> torch.Tensor:
    """p(w | ids) over the vocabulary, after reading `ids` from a zero state."""
    model.eval()
    logits, _, _ = model(torch.tensor(ids, device=model.embedding.weight.device).view(-1, 1), model.init_hidden(1))
    return torch.softmax(logits[-1, 0].double(), dim=-1)


def find(stream: list[int], ids: list[int]) -> int | None:
    """The index in `stream` just after the first occurrence of `ids`, or None."""
    for start in range(len(stream) - len(ids) + 1):
        if stream[start : start + len(ids)] == ids:
            return start + len(ids)
    return None


@torch.no_grad()
def read_stream(
    model: LSTMLanguageModel, stream: list[int], ends: list[int], tracked: list[int] = ()
) -> tuple[dict[int, torch.Tensor], torch.Tensor]:
    """Reads `stream` once from a zero state, the state carried from chunk to chunk (as the perplexity
    evaluation reads a column): p(w | stream[:end]) for each of `ends`, and, for `tracked` word ids,
    p(w | stream[:t + 1]) at every position t followed by a token ((len(stream) - 1) x len(tracked);
    the whole stream is read then)."""
    model.eval()
    device = model.embedding.weight.device
    last = max(max(ends, default=0), len(stream) - 1 if tracked else 0)
    hidden, found, tracked_rows = model.init_hidden(1), {}, []
    for start in range(0, last, CHUNK):
        chunk = torch.tensor(stream[start : min(start + CHUNK, last)], device=device).view(-1, 1)
        logits, _, hidden = model(chunk, hidden)
        for end in ends:
            if start < end <= start + len(chunk):
                found[end] = torch.softmax(logits[end - start - 1, 0].double(), dim=-1)
        if tracked:
            tracked_rows.append(torch.log_softmax(logits[:, 0].double(), dim=-1)[:, list(tracked)].exp().cpu())
    tracked_p = torch.cat(tracked_rows) if tracked_rows else torch.zeros(0, len(tracked), dtype=torch.float64)
    return found, tracked_p[: max(len(stream) - 1, 0)]


def as_ids(words: list[str], word_ids: dict[str, int]) -> list[int | None]:
    """The words' ids, a word outside the vocabulary as `<unk>` (None where it has none)."""
    return [word_ids.get(w, word_ids.get(UNK)) for w in words]


def context_stream(context: list[str], word_ids: dict[str, int]) -> list[int]:
    """The context text's ids as one stream: each line's words, then `<eos>`; a word outside the
    vocabulary as `<unk>`, an error where the vocabulary has none."""
    stream = []
    for number, line in enumerate(context, start=1):
        ids = as_ids(line.split() + [EOS], word_ids)
        if None in ids:
            raise CorpusError(
                f"context line {number}: {line.split()[ids.index(None)]!r} is not in the model's "
                "vocabulary, which has no <unk>"
            )
        stream += ids
    return stream


@dataclasses.dataclass(frozen=True)
class ContextRead:
    """One pass over the context text (`read_context`): the distribution after each phrase line's first
    occurrence, and the tracked words' probabilities at every position followed by a token."""

    searched: bool  # a context text was given
    after_phrase: dict[str, tuple[int, torch.Tensor]]  # phrase line -> (its end in the stream, p(w | the text to it))
    stream: list[int]
    tracked: dict[str, int]  # word -> id, the words asked for that the vocabulary has
    tracked_p: torch.Tensor  # (len(stream) - 1) x len(tracked)


def read_context(
    model: LSTMLanguageModel, itos: list[str], lines: list[str], context: list[str] | None, words: list[str] = ()
) -> ContextRead:
    """Reads the context text once (`read_stream`): up to the end of the last phrase found in it
    (each `phrase<TAB>next words` line's phrase followed by its first next word), and to its end
    where `words` are tracked."""
    word_ids = {word: i for i, word in enumerate(itos)}
    stream = context_stream(context or [], word_ids)
    ends = {}
    for line in lines:
        phrase, _, following = line.partition("\t")
        if phrase.strip() and context is not None:
            end = find(stream, as_ids(phrase.split() + following.split()[:1], word_ids))
            if end is not None:
                ends[line] = end - len(following.split()[:1])
    tracked = {w: word_ids[w] for w in words if w in word_ids}
    found, tracked_p = read_stream(model, stream, list(ends.values()), list(tracked.values()))
    return ContextRead(
        context is not None, {line: (end, found[end]) for line, end in ends.items()}, stream, tracked, tracked_p
    )


def mean_probability_blocks(read: ContextRead, words: list[str], block_tokens: int) -> dict:
    """Per word w of `words` in the vocabulary, [sum of p(w | the text before), positions] over the
    positions whose next token is not w, per block of `block_tokens` positions of the context text
    (module docstring)."""
    tracked = torch.tensor(list(read.tracked.values()), dtype=torch.long)
    elsewhere = torch.tensor(read.stream[1:], dtype=torch.long).view(-1, 1) != tracked
    sums = read.tracked_p * elsewhere
    return {
        "block_tokens": block_tokens,
        "words": {
            w: [
                [float(sums[i : i + block_tokens, k].sum()), int(elsewhere[i : i + block_tokens, k].sum())]
                for i in range(0, len(read.tracked_p), block_tokens)
            ]
            for k, w in enumerate(read.tracked)
        },
        "not_in_vocabulary": [w for w in words if w not in read.tracked],
    }


def predict(model: LSTMLanguageModel, itos: list[str], lines: list[str], top: int, read: ContextRead) -> list[dict]:
    """The `top` predictions after each nonblank line; a line `phrase<TAB>next words` also gets the
    probability and rank of the first next word. `read`: the context text's pass, where each phrase
    it holds is read (module docstring)."""
    word_ids = {word: i for i, word in enumerate(itos)}
    results = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        phrase, _, following = line.partition("\t")
        unknown = [word for word in phrase.split() + following.split()[:1] if word not in word_ids]
        if unknown and UNK not in word_ids:
            raise CorpusError(f"line {number}, phrase {phrase!r}: {unknown[0]!r} is not in the model's vocabulary")
        if line in read.after_phrase:
            end, probabilities = read.after_phrase[line]
            where = f"in context: tokens 1-{end} of the text"
        else:
            probabilities = next_word_probabilities(model, as_ids([EOS] + phrase.split(), word_ids))
            where = "from a zero state after <eos>" + (", not found in the context text" if read.searched else "")
        best = probabilities.topk(min(top, len(itos)))
        result = {
            "phrase": phrase,
            "context": where,
            "predictions": [
                {"word": itos[i], "probability": p} for p, i in zip(best.values.tolist(), best.indices.tolist())
            ],
        }
        if following:
            next_word = following.split()[0]
            next_id = word_ids.get(next_word, word_ids.get(UNK))
            result |= {
                "next": next_word,
                "next_probability": probabilities[next_id].item(),
                "next_rank": int((probabilities > probabilities[next_id]).sum()) + 1,
            }
        if unknown:
            result["unknown"] = sorted(set(unknown))
        results.append(result)
    return results


@one_line_faults
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument(
        "--phrases",
        type=Path,
        required=True,
        help="one phrase per line, optionally a tab and the words that follow it (blank lines are skipped)",
    )
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--context", type=Path, help="the text (one sentence per line) to read the phrases in")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--mean-probability-of", nargs="*", default=[], metavar="WORD", help="words whose probability over the context"
    )
    parser.add_argument("--block-tokens", type=int, help="the positions of a block of the mean probabilities")
    parser.add_argument("--mean-probability-out", type=Path, help="the JSON of their per-block sums")
    args = parser.parse_args(argv)
    if args.mean_probability_out and not (args.block_tokens and args.block_tokens > 0):
        parser.error("--mean-probability-out needs --block-tokens, a positive number of positions")
    if args.mean_probability_of and not (args.context and args.mean_probability_out):
        parser.error("--mean-probability-of needs --context (the text it is read over) and --mean-probability-out")
    model, itos = load_language_model(args.model, torch.device("cpu"))
    context = read_lines(args.context) if args.context else None
    lines = read_lines(args.phrases)
    try:
        read = read_context(model, itos, lines, context, args.mean_probability_of)
        results = predict(model, itos, lines, args.top, read)
    except CorpusError as err:
        parser.exit(1, f"lm_predict: error: {args.phrases}: {err}\n")
    if args.mean_probability_out:
        blocks = mean_probability_blocks(read, args.mean_probability_of, args.block_tokens)
        write_text(args.mean_probability_out, json.dumps(blocks) + "\n")
    write_text(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
