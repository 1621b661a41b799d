"""Kumar & Tsvetkov, Von Mises-Fisher Loss for Training Sequence to Sequence Models with
Continuous Outputs, ICLR 2019 (`../shared/seeds/000_f1127286484da4f1.txt`).

Experiments are named `<source>2<target>-[<embeddings>-][tied-]<loss>`; the tables' descriptive
columns are derived from them (`label`), so a row is its experiment and the paper's numbers.
"""

from workflow_src.artefacts import (
    Column,
    ConvergenceTable,
    ExampleTable,
    Figure,
    LearningCurves,
    ParameterTable,
    RareWordTable,
    Row,
    ScoreTable,
    System,
    Throughput,
)
from workflow_src.papers.continuous_setup import (
    LOSSES,
    continuous,
)
from workflow_src.papers.vmf_ledger import DEVIATIONS  # noqa: F401  (its ledger: registry.paper_module reads it here)
from workflow_src.registry import Experiment, named


def softmax(name: str, source: str, target: str) -> tuple[str, Experiment]:
    """Experiment `name`, which reads `<source>2<target>-ce`: a softmax baseline."""
    return named(name, f"{source}2{target}-ce", Experiment(source, target, "softmax", "ce"))


def label(name: str, experiment: Experiment) -> dict[str, str]:
    """The descriptive columns of Tables 1 and 4 for one experiment."""
    unit = {"word": "word", "bpe": "BPE", "emb": "emb"}
    loss = "CE" if experiment.loss == "ce" else LOSSES[name.rsplit("-", 1)[1]][3]
    return {
        "Embedding Model": experiment.embeddings or "-",
        "Tied Emb": "yes" if experiment.tied else "no",
        "Source Type/Target Type": f"{unit[experiment.source_unit]}→{unit[experiment.target_unit]}",
        "Loss": loss,
    }


EXPERIMENTS = dict(
    [
        softmax("word2word-ce", "word", "word"),
        softmax("word2bpe-ce", "word", "bpe"),
        softmax("bpe2bpe-ce", "bpe", "bpe"),
        continuous("word2emb-word2vec-l2", "l2", "word2vec", tied=False),
        continuous("word2emb-word2vec-cosine", "cosine", "word2vec", tied=False),
        continuous("word2emb-word2vec-maxmargin", "maxmargin", "word2vec", tied=False),
        continuous("word2emb-fasttext-maxmargin", "maxmargin", "fasttext", tied=False),
        continuous("word2emb-fasttext-tied-maxmargin", "maxmargin", "fasttext", tied=True),
        continuous("word2emb-word2vec-nllvmf_reg1", "nllvmf_reg1", "word2vec", tied=False),
        continuous("word2emb-word2vec-nllvmf_reg1reg2", "nllvmf_reg1reg2", "word2vec", tied=False),
        continuous("word2emb-word2vec-tied-nllvmf_reg1reg2", "nllvmf_reg1reg2", "word2vec", tied=True),
        continuous("word2emb-fasttext-nllvmf_reg1reg2", "nllvmf_reg1reg2", "fasttext", tied=False),
        continuous("word2emb-fasttext-tied-nllvmf_reg1reg2", "nllvmf_reg1reg2", "fasttext", tied=True),
        continuous("word2emb-fasttext-tied-nllvmf_released", "nllvmf_released", "fasttext", tied=True),
        continuous("word2emb-fasttext-tied-nllvmf_appendix", "nllvmf_appendix", "fasttext", tied=True),
        # WMT16 (§4.1): BPE sources, so the 300K-word target vocabulary has its translations
        continuous("bpe2emb-fasttext-tied-maxmargin", "maxmargin", "fasttext", tied=True, source="bpe"),
        continuous("bpe2emb-fasttext-tied-nllvmf_reg1reg2", "nllvmf_reg1reg2", "fasttext", tied=True, source="bpe"),
    ]
)

IWSLT = tuple(Column("iwslt16", pair) for pair in ("fr-en", "de-en", "en-fr"))
LABELS = ("Embedding Model", "Tied Emb", "Source Type/Target Type", "Loss")


def row(name: str, fr_en: float | None, de_en: float | None, en_fr: float | None, note: str = "") -> Row:
    paper = {
        column.name: value for column, value in zip(IWSLT, (fr_en, de_en, en_fr), strict=True) if value is not None
    }
    return Row(name, paper, label(name, EXPERIMENTS[name]), note)


WMT = Column("wmt16", "de-en", header="WMT de-en")
SOFTMAX = System("Softmax", "word2word-ce")
BPE = System("BPE", "bpe2bpe-ce")
MAXMARGIN = System("Max Margin", "word2emb-fasttext-tied-maxmargin")
NLLVMF = System(
    "Emb w/ NLL-vMF",
    "word2emb-fasttext-tied-nllvmf_reg1reg2",
    per_dataset={"wmt16": "bpe2emb-fasttext-tied-nllvmf_reg1reg2"},
)


def size_label(name: str) -> dict[str, str]:
    """Table 4's descriptive columns."""
    full = label(name, EXPERIMENTS[name])
    return {
        "Output Type": full["Source Type/Target Type"].split("→")[1],
        "Tied": full["Tied Emb"],
        "Loss": full["Loss"],
    }


ARTEFACTS = {
    "table1": ScoreTable(
        title="Translation quality experiments (BLEU scores) on IWSLT16 datasets",
        columns=IWSLT,
        label_columns=LABELS,
        spread=True,  # the sd over seeds, which the claims table decides by (workflow_src/report/claims.py)
        rows=(
            row("word2word-ce", 31.0, 24.7, 29.3),
            row("word2bpe-ce", 29.1, 24.1, 29.8),
            row("bpe2bpe-ce", 31.4, 25.8, 31.0),
            row("word2emb-word2vec-l2", 27.2, 19.4, 26.4),
            row("word2emb-word2vec-cosine", 29.1, 21.9, 26.6),
            row("word2emb-word2vec-maxmargin", 29.6, 21.4, 26.7),
            row("word2emb-fasttext-maxmargin", 31.0, 25.0, 29.0),
            row("word2emb-fasttext-tied-maxmargin", 32.1, 25.0, 31.0),
            row("word2emb-word2vec-nllvmf_reg1", 29.5, 22.7, 26.6),
            row("word2emb-word2vec-nllvmf_reg1reg2", 29.7, 21.6, 26.7),
            row("word2emb-word2vec-tied-nllvmf_reg1reg2", 29.7, 22.2, 27.5),
            row("word2emb-fasttext-nllvmf_reg1reg2", 30.4, 23.4, 27.6),
            row("word2emb-fasttext-tied-nllvmf_reg1reg2", 32.1, 25.1, 31.7),
            row(
                "word2emb-fasttext-tied-nllvmf_released",
                None,
                None,
                None,
                note="not in the paper: the loss of the authors' released code",
            ),
            row(
                "word2emb-fasttext-tied-nllvmf_appendix",
                None,
                None,
                None,
                note="not in Table 1: reg1+reg2 with the approximate -log C_m of §8.2, which the paper recommends "
                "(sign corrected: the appendix prints it as +log C_m)",
            ),
        ),
    ),
    "table2": ScoreTable(
        title="Translation quality experiment on WMT16 de-en",
        columns=(Column("wmt16", "de-en", "bleu", "BLEU"), Column("wmt16", "de-en", "meteor", "METEOR")),
        label_columns=("Loss",),
        rows=tuple(
            Row(name, {"BLEU": bleu, "METEOR": meteor}, {"Loss": loss})
            for name, loss, bleu, meteor in (
                ("word2word-ce", "CE", 22.9, 23.9),
                ("bpe2bpe-ce", "CE (BPE)", 30.1, 28.7),
                ("bpe2emb-fasttext-tied-maxmargin", "MaxMargin", 24.3, 25.2),
                ("bpe2emb-fasttext-tied-nllvmf_reg1reg2", "NLLvMF reg1+reg2", 28.8, 28.2),
            )
        ),
    ),
    "table3": ConvergenceTable(
        title="Total convergence times in hours",
        columns=(*IWSLT, WMT),
        systems=(SOFTMAX, BPE, NLLVMF),
        paper_hours={
            "fr-en": {"Softmax": 4, "BPE": 4.5, "Emb w/ NLL-vMF": 1.9},
            "de-en": {"Softmax": 3, "BPE": 3.5, "Emb w/ NLL-vMF": 1.5},
            "en-fr": {"Softmax": 1.8, "BPE": 2.8, "Emb w/ NLL-vMF": 1.3},
            "WMT de-en": {"Softmax": 4.3 * 24, "BPE": 4.5 * 24, "Emb w/ NLL-vMF": 1.6 * 24},  # 4.3d, 4.5d, 1.6d
        },
    ),
    "table4": ParameterTable(
        title="Parameters of the input and output layers, and training time per batch (batch size 64), IWSLT16 fr-en; "
        "and, not in the paper, decoding time per batch",
        label_columns=("Output Type", "Tied", "Loss"),
        column=IWSLT[0],
        rows=tuple(
            Row(name, {"input": inputs, "output": outputs, "ms": ms}, size_label(name))
            for name, inputs, outputs, ms in (
                ("word2word-ce", 25.6e6, 51.2e6, 400),
                ("bpe2bpe-ce", 8.192e6, 16.384e6, 346),
                ("word2emb-word2vec-l2", 25.6e6, 307.2e3, 160),
                ("word2emb-word2vec-cosine", 25.6e6, 307.2e3, 160),
                ("word2emb-fasttext-maxmargin", 25.6e6, 307.2e3, 178),
                ("word2emb-fasttext-tied-maxmargin", 153.6e3, 307.2e3, 178),
                ("word2emb-fasttext-nllvmf_reg1reg2", 25.6e6, 307.2e3, 170),
                ("word2emb-fasttext-tied-nllvmf_reg1reg2", 153.6e3, 307.2e3, 170),
            )
        ),
    ),
    "table5": RareWordTable(
        title="Test set unigram F1 scores of occurrence in the predicted sentences by training frequency, fr-en",
        column=IWSLT[0],
        systems=(SOFTMAX, BPE, MAXMARGIN, NLLVMF),
        bins=((1, 1), (2, 2), (3, 3), (4, 4), (5, 9), (10, 99), (100, 999), (1000, None)),
        paper={
            label: dict(zip(("Softmax", "BPE", "Max Margin", "Emb w/ NLL-vMF"), values, strict=True))
            for label, values in (
                ("1", (0.42, 0.50, 0.30, 0.52)),
                ("2", (0.16, 0.26, 0.25, 0.31)),
                ("3", (0.14, 0.22, 0.25, 0.33)),
                ("4", (0.29, 0.24, 0.30, 0.33)),
                ("5-9", (0.28, 0.33, 0.38, 0.37)),
                ("10-99", (0.54, 0.53, 0.53, 0.55)),
                ("100-999", (0.60, 0.61, 0.60, 0.60)),
                ("1000+", (0.69, 0.70, 0.69, 0.69)),
            )
        },
    ),
    "table10": ExampleTable(
        title="Translation examples, fr-en",
        column=IWSLT[0],
        systems=(
            BPE,
            System("L2", "word2emb-word2vec-l2"),
            System("Cosine", "word2emb-word2vec-cosine"),
            System("MaxMargin", MAXMARGIN.experiment),
            System("NLLvMF reg", NLLVMF.experiment),
        ),
        # §8.4 as the text extraction prints it (its accented letters lost, its colour marks dropped)
        paper={
            "Input": "Une ducation est critique, mais rgler ce problme va ncessiter que chacun d’entre nous "
            "s’engage et soit un meilleur exemple pour les femmes et filles dans nos vies.",
            "Reference": "An education is critical, but tackling this problem is going to require each and everyone "
            "of us to step up and be better role models for the women and girls in our own lives.",
            "BPE": "Education is critical, but it’s going to require that each of us will come in and if you do a "
            "better example for women and girls in our lives.",
            "L2": "Education is critical , but to to do this is going to require that each of us of to engage and "
            "or a better example of the women and girls in our lives.",
            "Cosine": "That’s critical , but that’s that it’s going to require that each of us is going to take that "
            "the problem and they’re going to if you’re a better example for women and girls in our lives.",
            "MaxMargin": "Education is critical, but that problem is going to require that every one of us is engaging "
            "and is a better example for women and girls in our lives.",
            "NLLvMF reg": "Education is critical , but fixed this problem is going to require that all of us engage "
            "and be a better example for women and girls in our lives.",
        },
    ),
    "figure1": Figure(
        title="Left: samples processed per second; right: development BLEU by epoch, IWSLT16 fr-en",
        panels=(
            Throughput("Training throughput", (SOFTMAX, BPE, NLLVMF)),
            LearningCurves("fr-en", IWSLT[0], (SOFTMAX, BPE, NLLVMF)),
        ),
    ),
    "figure2": Figure(
        title="Development BLEU by epoch, IWSLT16 de-en (left) and en-fr (right)",
        panels=tuple(LearningCurves(c.pair, c, (SOFTMAX, BPE, NLLVMF)) for c in IWSLT[1:]),
    ),
    "table9": ScoreTable(
        title="Translation quality experiments using beam search with BPE based baseline models with a beam size of 5",
        columns=(*IWSLT, WMT),
        label_columns=LABELS,
        rows=(
            Row(
                "bpe2bpe-ce",
                {"fr-en": 32.2, "de-en": 26.1, "en-fr": 32.4, "WMT de-en": 31.9},
                label("bpe2bpe-ce", EXPERIMENTS["bpe2bpe-ce"]),
                search="beam5",
            ),
        ),
    ),
}
