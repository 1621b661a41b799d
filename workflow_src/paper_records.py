"""What a paper lists beside its experiments and artefacts: its headline claims (`Claim`, each
decided by `Check`s, `workflow_src/report/claims.py`; in `papers/<paper>_claims.py`) and its
deviations ledger (`Deviation`, `workflow_src/report/deviations.py`). Plain records: a paper module
imports these and the registry's types, nothing that reads results or renders them."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Check:
    """In `column` of `artefact`, `row` is better than `than` (another row, of `than_artefact` where
    the sentence compares two tables' rows), than the same row's `than_column` (a table whose columns
    are the systems), than its own point at `than_x` (a figure's curve), or than `threshold` (a
    number the paper prints).

    With d = ours(row) - ours(than) (negated when `lower_is_better`), the claim is d + margin > 0
    ("within 1 BLEU of": margin 1; "more than 1 BLEU above": margin -1). With `factor`, it compares
    ratios: ours(row) / ours(than) below `factor` (lower is better) or above it. With `parity`, the
    claim is that the two are the same within a relative `parity` (|log ratio| < log(1 + parity)).
    `x` picks a figure's point. How it is decided depends on the evidence's kind
    (`workflow_src/report/claims.py`).
    """

    artefact: str  # table1, figure2, ... of the claim's paper
    column: str  # the column stem ("fr-en", "PTB test", "ms per batch"), or a figure's panel
    row: str  # the row key (experiment, pair, statistic, bin) or a figure's series
    than: str | None = None
    than_artefact: str | None = None  # `than`'s artefact, where it is not `artefact` (scored on the same test set)
    than_column: str | None = None
    threshold: float | None = None
    lower_is_better: bool = False
    margin: float = 0.0
    factor: float | None = None
    parity: float | None = None
    x: float | None = None
    than_x: float | None = None
    # the paper's numbers for `row` and what it is compared with, where its artefact prints none
    # (a figure) but its text does; else they are read from the artefact's registry entry
    paper_values: tuple[float, float] | None = None

    def __post_init__(self):
        compared = self.than is not None or self.than_column is not None or self.than_x is not None
        if compared == (self.threshold is not None):
            raise ValueError(
                f"check of {self.row}: compare with `than` (or `than_column`, `than_x`) or a `threshold`, not both"
            )
        if self.parity is not None and (not compared or self.factor is not None or self.margin):
            raise ValueError(f"check of {self.row}: parity compares two cells, without a factor or margin")
        if self.factor is not None and (not compared or self.margin or self.factor <= 0):
            raise ValueError(f"check of {self.row}: a factor (> 0) compares two cells, without a margin")
        if self.than_artefact is not None and (self.than is None or self.than_column or self.than_x is not None):
            raise ValueError(f"check of {self.row}: `than_artefact` names where the row `than` is, in the same column")

    @property
    def compared(self) -> tuple[str, str, float | None] | None:
        """The (row, column, x) of the cell compared with, or None for a threshold."""
        if self.threshold is not None:
            return None
        return (
            self.than if self.than is not None else self.row,
            self.than_column or self.column,
            self.than_x if self.than_x is not None else self.x,
        )

    @property
    def compared_artefact(self) -> str:
        """The artefact of the cell compared with (of `row` itself for a threshold)."""
        return self.than_artefact or self.artefact

    @property
    def name(self) -> str:
        """Its own cell, as `compared_name` names the other: "a", "fr-en, Emb ours"."""
        return self.row if self.than_column is None else f"{self.row}, {self.column}"

    @property
    def compared_name(self) -> str:
        if self.than_artefact is not None:
            return f"{self.than} of {self.than_artefact}"
        if self.than_x is not None:
            return f"{self.than or self.row} at x = {self.than_x:g}"
        return self.than if self.than_column is None else f"{self.than or self.row}, {self.than_column}"

    @property
    def against_printed_constant(self) -> bool:
        """Compared with a number the paper prints, not with another of our cells: on synthetic data
        the two are not comparable."""
        return self.threshold is not None

    @property
    def parts(self) -> tuple["Check", ...]:
        """The checks whose cells it reads: itself (a `Gap`: its two)."""
        return (self,)


@dataclasses.dataclass(frozen=True)
class Gap:
    """One difference exceeds another ("AL gains more on PTB than on WikiText-2", "METEOR, unlike
    BLEU, closes the gap"): with d of each `Check` on its own scale, the claim is

        d(wider) - d(narrower) > 0,

    decided on the two checks' bootstrap resamples, which draw the same test units where they share
    a test set, or, for values (timings), by Welch's t over the four cells (`workflow_src/report/claims.py`)."""

    wider: Check
    narrower: Check

    def __post_init__(self):
        if any(part.compared is None or part.parity is not None for part in self.parts):
            raise ValueError(f"gap of {self.wider.row}: each check compares two cells, without a parity")

    @property
    def parts(self) -> tuple[Check, Check]:
        return (self.wider, self.narrower)

    against_printed_constant = False


@dataclasses.dataclass(frozen=True)
class Claim:
    """A sentence of the paper and the checks that test exactly what it states. `quote` is the
    paper's text, verbatim (`tests/test_claims.py` finds it in ../shared/seeds/), `where` its section
    or table. A `pooled` claim (one over many cells with small gaps, "in all cases") is decided by
    one test of its checks' mean difference, not by each check at once
    (`workflow_src/report/claims.py`)."""

    id: str  # C1, C2, ... within its paper
    statement: str  # the claim in a line
    quote: str  # the paper's sentence (or the part of it that states the claim), verbatim
    where: str  # its section, table or caption
    measure: str  # what is compared, and the rule that decides
    paper: str  # the paper's numbers, as it prints them
    checks: tuple[Check | Gap, ...]
    pooled: bool = False

    def __post_init__(self):
        if not self.quote.strip() or not self.where.strip():
            raise ValueError(f"claim {self.id}: a claim quotes the paper's sentence and says where it is")
        if self.pooled and len(self.checks) < 2:
            raise ValueError(f"claim {self.id}: a pooled claim needs several checks")


# What our default is, against the paper:
#   deviation: our default differs from the paper (or the paper is silent and we had to choose)
#   faithful:  our default follows the paper; the setting offers the other reading (or a fix has landed)
#   extra:     something the paper does not have, added beside its results and named as such
STATES = ("deviation", "faithful", "extra")


@dataclasses.dataclass(frozen=True)
class Deviation:
    """One entry of a paper's ledger; `id` (D1, D2, ...) is what table footers cite."""

    id: str
    topic: str
    paper: str  # what the paper says (or "silent")
    ours: str  # what we do by default
    why: str
    effect: str  # the expected effect on the numbers
    setting: str  # a dotted config key, or a code path `workflow_src/<path>.py:<attribute>`
    artefacts: tuple[str, ...] = ()  # the artefacts it affects (table1, figure2, ...); () for none in particular
    state: str = "deviation"

    def __post_init__(self):
        if self.state not in STATES:
            raise ValueError(f"deviation {self.id}: state {self.state!r} is not one of {', '.join(STATES)}")
        if not self.id.startswith("D") or not self.id[1:].isdigit():
            raise ValueError(f"deviation {self.id!r}: ids are D1, D2, ...")


def mixed_precision(entry_id: str, artefacts: tuple[str, ...]) -> Deviation:
    """The entry every paper's ledger carries: the papers trained in fp32, our GPU default is bf16
    autocast around the output layers (`workflow_src/model/precision.py`)."""
    return Deviation(
        entry_id,
        "arithmetic precision",
        "fp32 (silent: no mixed precision is mentioned, and the GPUs of the time trained in fp32)",
        "train.precision auto: on CUDA, bf16 autocast around the output layers' products only "
        "(hidden x vocabulary, the joint layer's g_out(E)); the LSTMs, attention, losses, log C_m and softmax "
        "normalisation in fp32 or wider; on the CPU (the demo) fp32 throughout",
        "the output layers' products are most of a step's FLOPs at the papers' vocabularies, and bf16 runs them "
        "several times faster on tensor cores; the LSTMs stay fp32 because CUDA autocast would run cuDNN's in fp16",
        "logits and predicted vectors rounded to bf16 (8 significant bits) before an fp32 loss; expected within "
        "seed noise, not measured at scale here (results/gpu_check.md compares losses and gradients with fp32 on "
        "your GPU before training)",
        "train.precision",
        artefacts,
    )
