"""The next-word predictions of a language model after a phrase (the tying paper's Table 4).

`python -m workflow_src.lm_predict --model model.pt --phrases FILE --top 10 --out JSON`

For each phrase (one per line, words separated by spaces) the model, in eval mode and from a zero
state, reads `<eos>` and the phrase (every sentence of the training stream follows an `<eos>`),
and the `top` words of p(w | <eos> phrase) = softmax(W h + b) are written, most probable first:
`[{"phrase": ..., "predictions": [{"word": ..., "probability": ...}, ...]}, ...]`.
A word outside the model's vocabulary is read as `<unk>` when the vocabulary has it (the result
lists such words under "unknown"), and is an error otherwise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from workflow_src.atomic import read_lines, write_text
from workflow_src.archives import CorpusError
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.train_lm import EOS, load_language_model

UNK = "<unk>"


@torch.no_grad()
def next_word_probabilities(model: LSTMLanguageModel, ids: list[int]) -> torch.Tensor:
    """p(w | ids) over the vocabulary, after reading `ids` from a zero state."""
    model.eval()
    logits, _, _ = model(torch.tensor(ids, device=model.embedding.weight.device).view(-1, 1), model.init_hidden(1))
    return torch.softmax(logits[-1, 0].double(), dim=-1)


def predict(model: LSTMLanguageModel, itos: list[str], lines: list[str], top: int) -> list[dict]:
    """The `top` predictions after each nonblank line; a line `phrase<TAB>next words` also gets the
    probability and rank of the first next word."""
    word_ids = {word: i for i, word in enumerate(itos)}
    results = []
    for number, phrase in enumerate(lines, start=1):
        if not phrase.strip():
            continue
        phrase, _, following = phrase.partition("\t")
        unknown = [word for word in phrase.split() + following.split()[:1] if word not in word_ids]
        if unknown and UNK not in word_ids:
            raise CorpusError(f"line {number}, phrase {phrase!r}: {unknown[0]!r} is not in the model's vocabulary")
        probabilities = next_word_probabilities(model, [word_ids.get(w, word_ids.get(UNK)) for w in [EOS] + phrase.split()])
        best = probabilities.topk(min(top, len(itos)))
        result = {"phrase": phrase, "predictions": [
            {"word": itos[i], "probability": p} for p, i in zip(best.values.tolist(), best.indices.tolist())]}
        if following:
            next_word = following.split()[0]
            next_id = word_ids.get(next_word, word_ids.get(UNK))
            result |= {"next": next_word, "next_probability": probabilities[next_id].item(),
                       "next_rank": int((probabilities > probabilities[next_id]).sum()) + 1}
        if unknown:
            result["unknown"] = sorted(set(unknown))
        results.append(result)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--phrases", type=Path, required=True, help="one phrase per line, optionally a tab and the words that follow it (blank lines are skipped)")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    model, itos = load_language_model(args.model, torch.device("cpu"))
    try:
        results = predict(model, itos, read_lines(args.phrases), args.top)
    except CorpusError as err:
        parser.exit(1, f"lm_predict: error: {args.phrases}: {err}\n")
    write_text(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
