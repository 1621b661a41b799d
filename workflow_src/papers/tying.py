"""Inan, Khosravi & Socher, Tying Word Vectors and Word Classifiers: A Loss Framework for
Language Modeling, ICLR 2017 (`../shared/seeds/002_24e2c70fad893b14.txt`).

Language models are named `lm-<size>-<variant>`: the VD-LSTM (`vd`), with the augmented loss
(`al`), reused embeddings (`re`) or both (`real`); Figure 1's are `lm-subspace@<beta|tau>=<v>`.
AL's γ is chosen on validation perplexity among `lm-<size>-al@gamma=<v>` (and `-real@...`), the
values per corpus in each artefact's `tune: {gamma: {ptb: [...], wikitext2: [...]}}` (appendix A's
ranges: 0.5-0.8 and 1.0-1.5), as the syn-margin paper chooses its margin.
The appendix's settings per size live here, as the paper gives them; what it leaves open (the
widths' owner for toy runs, epochs) is in config `lm:`.
"""

from workflow_src.artefacts import (
    Corpus,
    Figure,
    NextWordTable,
    PerplexityCurves,
    PerplexityTable,
    Row,
    SubspaceSweep,
    System,
)
from workflow_src.papers.tying_ledger import DEVIATIONS  # noqa: F401  (its ledger: registry.paper_module reads it here)
from workflow_src.registry import LanguageModel, named

# Appendix A. Its "dropout probabilities" are keep probabilities (Zaremba et al.'s TensorFlow
# keep_prob; see ../shared/seeds/INDEX.md): these are the drop probabilities.
SCHEDULE = {  # learning rate 1, decayed by `lr_decay` each epoch after `decay_after`; clipping
    "small": {"lr": 1.0, "lr_decay": 0.9, "decay_after": 5, "clip": 5.0},
    "medium": {"lr": 1.0, "lr_decay": 0.9, "decay_after": 10, "clip": 5.0},
    "large": {"lr": 1.0, "lr_decay": 0.97, "decay_after": 1, "clip": 6.0},
}
# Figure 1's 300-unit models: §6.1 gives no schedule and trains "to the minimum training loss
# possible": a constant rate (so that training stops because the loss converged, config
# lm.convergence, not because a decaying rate froze it), the small models' clipping.
SCHEDULE["subspace"] = {"lr": 1.0, "lr_decay": 1.0, "decay_after": 0, "clip": 5.0}
DROPOUT = {"ptb": {"small": 0.3, "medium": 0.5, "large": 0.65}, "wikitext2": {"small": 0.2, "medium": 0.4}}
INIT_RANGE = {"small": 0.1, "medium": 0.05, "large": 0.04, "subspace": 0.1}  # not stated: Zaremba et al.'s
WIDTHS = {"small": 200, "medium": 650, "large": 1500, "subspace": 300}  # §6.1, §6.2: units per layer


def init_range(size: str, width: int, scaled: bool) -> float:
    """U(-r, r) for a `size` model `width` units wide: the paper's r, or (`scaled`, config
    lm.scale_init_to_width) r √(paper width / width), which keeps the spread of W h at
    initialisation (about r √d) where it is at the paper's width; the same r at that width."""
    return INIT_RANGE[size] * ((WIDTHS[size] / width) ** 0.5 if scaled else 1.0)


# Footnote 4: "For PTB, small models were re-trained by initializing to their final configuration
# from the first training session": the schedule runs twice.
SESSIONS = {("ptb", "small"): 2}
TAU = 20.0  # appendix A: the temperature of AL
BPTT, BATCH_SIZE, LAYERS = 35, 20, 2

VARIANTS = {  # suffix -> (the paper's name, RE, AL)
    "vd": ("VD-LSTM", False, False),
    "al": ("VD-LSTM+AL", False, True),
    "re": ("VD-LSTM+RE", True, False),
    "real": ("VD-LSTM+REAL", True, True),
}
SIZE_LABELS = {"small": "Small (200 units)", "medium": "Medium (650 units)", "large": "Large (1500 units)"}


def name(size: str, variant: str) -> str:
    return f"lm-{size}-{variant}"


def vd_lstm(literal: str, size: str, variant: str) -> tuple[str, LanguageModel]:
    """Language model `literal`, which reads `lm-<size>-<variant>` (`name`): the VD-LSTM of a size of
    appendix A, with what its variant (`VARIANTS`) adds."""
    _, reuse, augmented = VARIANTS[variant]
    return named(literal, name(size, variant), LanguageModel(size, reuse_embedding=reuse, augmented=augmented))


LANGUAGE_MODELS = dict(
    [
        vd_lstm("lm-small-vd", "small", "vd"),
        vd_lstm("lm-small-al", "small", "al"),
        vd_lstm("lm-small-re", "small", "re"),
        vd_lstm("lm-small-real", "small", "real"),
        vd_lstm("lm-medium-vd", "medium", "vd"),
        vd_lstm("lm-medium-al", "medium", "al"),
        vd_lstm("lm-medium-re", "medium", "re"),
        vd_lstm("lm-medium-real", "medium", "real"),
        vd_lstm("lm-large-vd", "large", "vd"),
        vd_lstm("lm-large-al", "large", "al"),
        vd_lstm("lm-large-re", "large", "re"),
        vd_lstm("lm-large-real", "large", "real"),
    ]
)
# §6.1's validation of the theory: 300 units, a random contiguous 20,000-word slice of PTB train,
# no regularisation, unit-norm embedding rows, J_tot = β J_aug τ²|V| + (1 - β) J; β and τ are
# swept from this point (β = 1, τ = 10). §4's setting, which §6.2 simulates, has b = 0 (y = W h).
# Trained "to the minimum training loss possible": until the training loss converges (config
# lm.convergence), and the model measured is the epoch with the lowest training loss.
SUBSPACE = "lm-subspace"
LANGUAGE_MODELS[SUBSPACE] = LanguageModel(
    "subspace",
    beta=1.0,
    tau=10.0,
    regularised=False,
    unit_norm_embeddings=True,
    sliced=True,
    keep="lowest_train_loss",
    output_bias=False,
    to_convergence=True,
)

PTB, WIKITEXT2 = Corpus("ptb", "PTB"), Corpus("wikitext2", "Wikitext-2")
PARTITIONS = (Corpus("wikitext2part1", "Wikitext-2, Partition 1"), Corpus("wikitext2part2", "Wikitext-2, Partition 2"))


def tune(variant: str) -> str | None:
    """AL's γ is chosen on validation within appendix A's range per corpus (an artefact's
    `tune: {gamma: {ptb: [...], wikitext2: [...]}}`); the other variants have nothing to tune."""
    return "gamma" if VARIANTS[variant][2] else None


def system(label: str, size: str, variant: str) -> System:
    return System(label, name(size, variant), tune=tune(variant))


def rows(
    size: str, corpora: tuple[Corpus, ...], values: dict[str, tuple[float, ...]], note: str = ""
) -> tuple[Row, ...]:
    """A block of Table 1 or 2: per variant, (valid, test) per corpus as the paper prints them."""
    out = []
    for variant, numbers in values.items():
        paper = {}
        for corpus, (valid, test) in zip(corpora, zip(numbers[::2], numbers[1::2]), strict=True):
            if valid is not None:
                paper |= {f"{corpus.name} valid": valid, f"{corpus.name} test": test}
        out.append(
            Row(
                name(size, variant),
                paper,
                {"Network": SIZE_LABELS[size], "Model": VARIANTS[variant][0]},
                note,
                tune=tune(variant),
            )
        )
    return tuple(out)


def reported(model: str, parameters: str, valid: float | None, test: float) -> Row:
    """A Table 3 row of another paper, as the tying paper reports it."""
    return Row(
        "",
        {"PTB valid": valid, "PTB test": test} if valid is not None else {"PTB test": test},
        {"Model": model, "Parameters": parameters},
        note="as the paper reports it; not run here",
    )


UNK_TOKEN, FREQUENT_WORDS = "<unk>", ("a", "an", "the")  # §6.4's words, whose probability REAL lowers


ARTEFACTS = {
    "figure1": Figure(
        title="Subspace distance between L^T and W (appendix B) of 2-layer LSTMs trained on a random contiguous "
        "slice of PTB train (the paper's: 20,000 words, 300 units) without regularisation, with unit-norm "
        "embedding rows and J_tot = β J_aug τ²|V| + (1 - β) J",
        panels=(
            SubspaceSweep(
                "(a) against β, at τ = 10",
                PTB,
                SUBSPACE,
                "beta",
                (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                paper="about 1 at β = 0, falling rapidly to about 0.06 at β = 1",
            ),
            SubspaceSweep(
                "(b) against τ, at β = 1",
                PTB,
                SUBSPACE,
                "tau",
                (1.0, 2.0, 3.0, 5.0, 10.0, 20.0),
                paper="low even at τ = 2; higher temperatures lower still",
            ),
        ),
    ),
    "table1": PerplexityTable(
        title="Final word-level perplexities on the validation and test sets",
        columns=(PTB, WIKITEXT2),
        label_columns=("Network", "Model"),
        rows=(
            *rows(
                "small",
                (PTB, WIKITEXT2),
                {
                    "vd": (92.6, 87.3, 112.2, 105.9),
                    "al": (86.3, 82.9, 110.3, 103.8),
                    "re": (89.9, 85.1, 106.1, 100.5),
                    "real": (86.3, 82.7, 105.6, 98.9),
                },
                "PTB: two training sessions, the second from the first's final weights (footnote 4)",
            ),
            *rows(
                "medium",
                (PTB, WIKITEXT2),
                {
                    "vd": (82.0, 77.7, 100.2, 95.3),
                    "al": (77.4, 74.7, 98.8, 93.1),
                    "re": (77.1, 73.9, 92.3, 87.7),
                    "real": (75.7, 73.2, 91.5, 87.0),
                },
            ),
            # footnote 5: large models were not trained on Wikitext-2
            *rows(
                "large",
                (PTB, WIKITEXT2),
                {
                    "vd": (76.8, 72.6, None, None),
                    "al": (74.5, 71.2, None, None),
                    "re": (72.5, 69.0, None, None),
                    "real": (71.1, 68.5, None, None),
                },
            ),
        ),
    ),
    "table2": PerplexityTable(
        title="Small models trained on the two equal partitions of the Wikitext-2 training set",
        columns=PARTITIONS,
        label_columns=("Network", "Model"),
        rows=rows(
            "small",
            PARTITIONS,
            {
                "vd": (159.1, 148.0, 163.19, 148.6),
                "al": (153.0, 142.5, 156.4, 143.7),
                "re": (152.4, 141.9, 152.5, 140.9),
                "real": (149.3, 140.6, 150.5, 138.4),
            },
        ),
    ),
    "table3": PerplexityTable(
        title="Comparison with previous work on the Penn Treebank (word-level validation and test perplexity)",
        columns=(PTB,),
        label_columns=("Model", "Parameters"),
        rows=(
            reported("RNN (Mikolov & Zweig)", "6M", None, 124.7),
            reported("RNN+LDA (Mikolov & Zweig)", "7M", None, 113.7),
            reported("RNN+LDA+KN-5+Cache (Mikolov & Zweig)", "9M", None, 92.0),
            reported("Deep RNN (Pascanu et al., 2013a)", "6M", None, 107.5),
            reported("Sum-Prod Net (Cheng et al., 2014)", "5M", None, 100.0),
            reported("LSTM (medium) (Zaremba et al., 2014)", "20M", 86.2, 82.7),
            reported("CharCNN (Kim et al., 2015)", "19M", None, 78.9),
            reported("LSTM (large) (Zaremba et al., 2014)", "66M", 82.2, 78.4),
            reported("VD-LSTM (large, untied, MC) (Gal, 2015)", "66M", None, 73.4),
            reported("Pointer Sentinel-LSTM (medium) (Merity et al., 2016)", "21M", 72.4, 70.9),
            reported("38 Large LSTMs (Zaremba et al., 2014)", "2.51B", 71.9, 68.7),
            reported("10 Large VD-LSTMs (Gal, 2015)", "660M", None, 68.7),
            reported("VD-RHN (Zilly et al., 2016)", "32M", 71.2, 68.5),
            Row(
                name("large", "real"),
                {"PTB valid": 71.1, "PTB test": 68.5},
                {"Model": "VD-LSTM +REAL (large)", "Parameters": "51M"},
                tune=tune("real"),
            ),
            reported("VD-RHN +RE (Zilly et al., 2016)", "24M", 68.1, 66.0),
        ),
    ),
    "figure2": Figure(
        title="Validation perplexity during training on PTB, small (200) and large (1500) networks",
        panels=tuple(
            PerplexityCurves(
                f"{size} ({SIZE_LABELS[size].split('(')[1].rstrip(')')})",
                PTB,
                tuple(system(VARIANTS[v][0], size, v) for v in VARIANTS),
            )
            for size in ("small", "large")
        ),
    ),
    "table4": NextWordTable(
        title="Next-word predictions of the large VD-LSTM and VD-LSTM+REAL after phrases of the PTB test set",
        corpus=PTB,
        systems=(system("VD-LSTM", "large", "vd"), system("VD-LSTM +REAL", "large", "real")),
        # "example phrases in the PTB test set": read where they occur, after the test text before
        # them, as the test perplexity reads them (the paper does not say; context=None: sentence start)
        context="test",
        # §6.4: "the probability of generating the `<unk>` token ... is significantly lower", and "the same
        # behavior with very frequent words such as "a", "an", and "the"": where another word comes next in the
        # test text (workflow_src/decode/lm_predict.py)
        mean_probability_of=(UNK_TOKEN, *FREQUENT_WORDS),
        phrases=(
            ("information international said it believes that the complaints filed in", "federal court"),
            (
                "oil company refineries ran flat out to prepare for a robust holiday driving season in july and",
                "august",
            ),
            (
                "southmark said it plans to <unk> its <unk> to provide financial results as soon as its audit is",
                "completed",
            ),
            ("merieux said the government 's minister of industry science and", "technology"),
        ),
        paper={  # Table 4, read row by row out of its column-major layout
            "information international said it believes that the complaints filed in": {
                "VD-LSTM": "the 0.27, a 0.13, federal 0.13, N 0.09, <unk> 0.05, an 0.03, august 0.01, new 0.01, "
                "response 0.01, connection 0.01",
                "VD-LSTM +REAL": "federal 0.22, the 0.1, a 0.08, N 0.06, state 0.04",
            },
            "oil company refineries ran flat out to prepare for a robust holiday driving season in july and": {
                "VD-LSTM": (
                    "the 0.09, N 0.08, a 0.07, <unk> 0.07, was 0.04, in 0.03, has 0.03, is 0.02, will 0.02, its 0.02"
                ),
                "VD-LSTM +REAL": (
                    "august 0.08, N 0.05, early 0.05, september 0.05, the 0.03, a 0.03, in 0.03, that 0.02, "
                    "ended 0.02, its 0.02"
                ),
            },
            "southmark said it plans to <unk> its <unk> to provide financial results as soon as its audit is": {
                "VD-LSTM": "the 0.06, <unk> 0.05, a 0.05, in 0.04, n't 0.04, to 0.03, likely 0.03, expected 0.03, "
                "scheduled 0.01, completed 0.01",
                "VD-LSTM +REAL": "expected 0.1, completed 0.04, <unk> 0.03, the 0.03, in 0.03, a 0.03, scheduled 0.03, "
                "n't 0.03, due 0.02, to 0.01",
            },
            "merieux said the government 's minister of industry science and": {
                "VD-LSTM": "<unk> 0.33, the 0.06, a 0.01, other 0.01, others 0.01, industry 0.01, commerce 0.01, "
                "planning 0.01, management 0.01, mail 0.01",
                "VD-LSTM +REAL": "<unk> 0.09, health 0.08, development 0.04, the 0.04, a 0.03, industry 0.03, "
                "business 0.02, telecomm. 0.02, human 0.02, other 0.01",
            },
        },
    ),
}
