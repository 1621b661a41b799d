"""Whether a language model's training has diverged (docs/tying.md, "REAL diverges in the demo"):
its last validation perplexity is above `DIVERGED_RATIO` times its best. The trainer warns when it
happens, and a table row built on such a run says so (`workflow_src.report.plateau`): the kept epoch
is where the failure left the model, not what the method learns.
"""

from __future__ import annotations

DIVERGED_RATIO = 1.5


def diverged(history: list[dict]) -> str:
    """'' unless the language model of metrics.jsonl `history` ended above `DIVERGED_RATIO` times its
    best validation perplexity; then how it rose (e.g. "validation perplexity 56.0 at epoch 5 → 123.4
    at epoch 6")."""
    if not history or "valid_perplexity" not in history[-1]:
        return ""
    best, last = min(history, key=lambda record: record["valid_perplexity"]), history[-1]
    if last["valid_perplexity"] <= DIVERGED_RATIO * best["valid_perplexity"]:
        return ""
    return (
        f"validation perplexity {best['valid_perplexity']:.1f} at epoch {best['epoch']} → "
        f"{last['valid_perplexity']:.1f} at epoch {last['epoch']}"
    )
