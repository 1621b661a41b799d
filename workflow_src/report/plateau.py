"""Whether a training run had plateaued when it stopped (issue 23: rankings that mean something).
A table that ranks methods by what each learns needs every compared run to have plateaued; a run
still moving is ranked by how far its budget let it get, and its table row says so.

A run has plateaued when its early stop fired (its last metrics record's `early_stop`: `patience`
epochs without a new best development score; a language model's `converged`), when its last
`PAST_BEST` epochs brought no new best (a language model has no early stop), or when its
development metric moved by at most `BLEU_STEP` BLEU (translation models) or `PERPLEXITY_STEP`
of the perplexity (language models) over its last epoch.

A language model that has diverged (`workflow_src.train.divergence`) has not plateaued, however its
last epochs moved: training kept its best epoch, where the failure left it.
"""

from __future__ import annotations

from collections import Counter

from workflow_src.train.divergence import diverged

NOT_PLATEAUED = "not plateaued when its training stopped"
DIVERGED = "diverged"
SETTINGS = (
    'A row "not plateaued" may rank otherwise after more epochs; the settings that give them: docs/demo.md, '
    '"Rankings from what each method learns".'
)
DIVERGENCE = (
    'A row that "diverged" holds the best epoch, where the failing training left it: docs/tying.md, '
    '"REAL diverges in the demo".'
)
BLEU_STEP = 1.0
PERPLEXITY_STEP = 0.01
PAST_BEST = 2


def unsettled(history: list[dict]) -> str:
    """'' when the run of metrics.jsonl `history` had plateaued, else how its last epoch moved
    its development metric (e.g. "development BLEU 29.1 → 40.2 at epoch 3"), or "diverged: ..."."""
    if not history:
        return "no epoch recorded"
    if how := diverged(history):
        return f"diverged: {how}"
    last = history[-1]
    if last.get("early_stop") or last.get("converged"):
        return ""
    if len(history) >= PAST_BEST and not any(r.get("best", True) for r in history[-PAST_BEST:]):
        return ""
    if "dev_bleu" in last:
        metric, values = "development BLEU", [r["dev_bleu"] for r in history[-2:]]
        settled = len(values) == 2 and abs(values[1] - values[0]) <= BLEU_STEP
    else:
        metric, values = "validation perplexity", [r["valid_perplexity"] for r in history[-2:]]
        settled = len(values) == 2 and abs(values[1] - values[0]) <= PERPLEXITY_STEP * values[0]
    return "" if settled else f"{metric} {' → '.join(f'{v:.1f}' for v in values)} at epoch {last['epoch']}"


def learning_note(runs: list[tuple[int, list[dict]]]) -> str:
    """A table row's note on those of its runs (seed, metrics history) that had not plateaued (the
    row ranks by how far its training budget let it get) or had diverged (by where the failure left
    it); neither is what the method learns."""
    failed, moving = [], []
    for seed, history in runs:
        if how := diverged(history):
            failed.append(f"seed {seed}: {how}")
        elif how := unsettled(history):
            moving.append(f"seed {seed}: {how}")
    notes = []
    if moving:
        notes.append(f"{NOT_PLATEAUED} ({'; '.join(moving)}), so its rank may change with more epochs")
    if failed:
        notes.append(f"{DIVERGED} ({'; '.join(failed)}): the row holds its best epoch, not what the method learns")
    return "; ".join(notes)


def unequal_epochs(trained: dict[str, int], block: str) -> dict[str, str]:
    """Notes for rows compared with each other (`trained`: row -> the epochs its training ran, the
    rows of one `block`) that ran another number of epochs than most of them (ties: the most
    epochs): such a row is ranked against training of another length."""
    if len(set(trained.values())) < 2:
        return {}
    usual = max(Counter(trained.values()).items(), key=lambda item: (item[1], item[0]))[0]
    return {
        row: f"trained {epochs} epochs, the other {block} rows {usual}"
        for row, epochs in trained.items()
        if epochs != usual
    }


def footer(rows: list[dict]) -> list[str]:
    """The lines under a table whose notes say a row had not plateaued or had diverged: where the
    docs say more (once, not in every note)."""
    notes = " ".join(row.get("note") or "" for row in rows)
    return [line for phrase, line in ((NOT_PLATEAUED, SETTINGS), (f"{DIVERGED} (seed", DIVERGENCE)) if phrase in notes]
