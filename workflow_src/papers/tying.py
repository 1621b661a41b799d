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
    mean_probability_column,
)
from workflow_src.paper_records import Check, Claim, Gap
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


def lower_probability(word: str) -> Check:
    """Table 4's large VD-LSTM+REAL gives `word` a lower mean probability over the PTB test text than VD-LSTM."""
    return Check(
        "table4", mean_probability_column(word), name("large", "real"), than=name("large", "vd"), lower_is_better=True
    )


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
        # behavior with very frequent words such as "a", "an", and "the"": over every position of the test text
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


def lowers(
    table: str, column: str, variant: str, size: str = "small", than: str = "vd", relative: bool = False
) -> Check:
    """`variant`'s perplexity below `than`'s; `relative`: d = log(ppl_than / ppl_variant), so that
    gains in blocks of different perplexity compare (a `Gap`'s parts)."""
    return Check(
        table,
        column,
        name(size, variant),
        than=name(size, than),
        lower_is_better=True,
        factor=1.0 if relative else None,
    )


def al_gains(pairs) -> str:
    """The paper's AL gains over VD-LSTM: "small PTB 87.3 → 82.9 (5.0%)", for (size, corpus) pairs."""
    rows = {row.experiment: row.paper for row in ARTEFACTS["table1"].rows}

    def gain(size: str, corpus: Corpus) -> str:
        vd, al = (rows[name(size, v)][f"{corpus.name} test"] for v in ("vd", "al"))
        return f"{size} {corpus.name} {vd:.1f} → {al:.1f} ({1 - al / vd:.1%})"

    return "; ".join(gain(size, corpus) for size, corpus in pairs) + " test perplexity"


# Table 1's blocks: (size, column) wherever the paper reports a cell (no large models on WikiText-2)
BLOCKS = tuple(
    (size, f"{corpus.name} test")
    for size in SIZE_LABELS
    for corpus in (PTB, WIKITEXT2)
    if not (size == "large" and corpus == WIKITEXT2)
)
FIGURE1_A, FIGURE1_B = (panel.title for panel in ARTEFACTS["figure1"].panels)
SUBSPACE_SERIES = "d(Lᵀ, W)"  # the figure's series (workflow_src/report/figures.py)
ALMOST_ONE = 0.9  # C4's "the distance is almost 1"


def test_perplexities(table: str, blocks, variants: tuple[str, ...]) -> str:
    """The paper's test perplexities of `variants` in each (size, column) block: "small PTB 87.3 /
    82.9 / 85.1 perplexity"."""
    rows = {row.experiment: row.paper for row in ARTEFACTS[table].rows}
    return (
        "; ".join(
            f"{size} {column.removesuffix(' test')} "
            + " / ".join(f"{rows[name(size, v)][column]:.1f}" for v in variants)
            for size, column in blocks
        )
        + " perplexity"
    )


CLAIMS = (
    Claim(
        "C1",
        "AL and RE each lower the VD-LSTM's perplexity, at every size on both datasets",
        "In both datasets, both AL and RE improve upon the baseline individually",
        "§6.3, Table 1",
        "Table 1 test perplexity, every size on PTB and WikiText-2 (large: PTB only): AL < VD-LSTM, RE < VD-LSTM",
        test_perplexities("table1", BLOCKS, ("vd", "al", "re")) + " (VD / AL / RE)",
        tuple(lowers("table1", column, variant, size) for size, column in BLOCKS for variant in ("al", "re")),
    ),
    Claim(
        "C2",
        "REAL gives the lowest perplexity, at every size on both datasets",
        "and using RE and AL together leads to the best performance.",
        "§6.3, Table 1",
        "Table 1 test perplexity, every size on PTB and WikiText-2 (large: PTB only): REAL < AL, REAL < RE; one "
        "pooled test of the mean gain over the 10 cells (small PTB's gap to AL is 0.2), none reversed after Holm",
        test_perplexities("table1", BLOCKS, ("real", "al", "re")) + " (REAL / AL / RE)",
        tuple(lowers("table1", column, "real", size, than) for size, column in BLOCKS for than in ("al", "re")),
        pooled=True,
    ),
    Claim(
        "C3",
        "On each half of WikiText-2 the small models' gains are as on PTB: AL and RE each beat VD, REAL beats both",
        "These results are consistent with those on PTB (see Table 1)",
        "Table 2's caption",
        "Table 2 test perplexity, small models, each partition: AL < VD-LSTM, RE < VD-LSTM, REAL < AL, REAL < RE. "
        "PTB's fifth ordering, AL < RE (82.9 against 85.1), is left out: the paper's own Table 2 reverses it in both "
        "partitions (142.5 against 141.9, 143.7 against 140.9), so the caption cannot mean it. The body's \"AL has "
        'significantly improved competitive performance against RE and REAL" is C12',
        test_perplexities("table2", tuple(("small", f"{c.name} test") for c in PARTITIONS), ("vd", "al", "re", "real"))
        + " (VD / AL / RE / REAL)",
        tuple(
            lowers("table2", f"{corpus.name} test", variant, "small", than)
            for corpus in PARTITIONS
            for variant, than in (("al", "vd"), ("re", "vd"), ("real", "al"), ("real", "re"))
        ),
    ),
    Claim(
        "C4",
        "Without the augmented loss the subspace distance is almost 1, and it falls as β grows",
        "the distance is almost 1, and as more and more augmented loss is used the distance decreases rapidly",
        "§6.2, Figure 1 (a)",
        f'Figure 1 (a) subspace distance d(Lᵀ, W) over its seeds: at β = 0 > {ALMOST_ONE} ("almost 1" read as '
        f"above {ALMOST_ONE}, against a number the paper prints), at β = 0.5 < at β = 0, and at β = 1 < at β = 0.5 "
        '("as more and more ... is used", over each half of the sweep; "rapidly" gives no bar). That it reaches '
        "about 0.06 is C5",
        "almost 1 at β = 0, falling to about 0.06 at β = 1 (no number at β = 0.5)",
        (
            Check("figure1", FIGURE1_A, SUBSPACE_SERIES, x=0.0, threshold=ALMOST_ONE, paper_values=(1.0, ALMOST_ONE)),
            *(
                Check("figure1", FIGURE1_A, SUBSPACE_SERIES, x=more, than_x=less, lower_is_better=True)
                for less, more in ((0.0, 0.5), (0.5, 1.0))
            ),
        ),
    ),
    Claim(
        "C5",
        "With the augmented loss alone the subspace distance is about 0.06",
        "and eventually reaches around 0.06 when only augmented loss is used.",
        "§6.2, Figure 1 (a)",
        'Figure 1 (a) subspace distance d(Lᵀ, W) at β = 1 over its seeds: > 0.04 and < 0.09 ("around 0.06" read '
        "as within 1.5 times it either way, against a number the paper prints)",
        "about 0.06",
        tuple(
            Check(
                "figure1",
                FIGURE1_A,
                SUBSPACE_SERIES,
                threshold=bar,
                lower_is_better=lower,
                x=1.0,
                paper_values=(0.06, bar),
            )
            for bar, lower in ((0.09, True), (0.04, False))
        ),
    ),
    Claim(
        "C6",
        "A higher temperature gives a smaller subspace distance",
        "although higher temperatures still lead to smaller subspace distances.",
        "§6.2, Figure 1 (b)",
        "Figure 1 (b) subspace distance d(Lᵀ, W) at β = 1 over its seeds: at τ = 10 < at τ = 2",
        "none printed (Figure 1 (b) is a plot)",
        (Check("figure1", FIGURE1_B, SUBSPACE_SERIES, x=10.0, than_x=2.0, lower_is_better=True),),
    ),
    Claim(
        "C7",
        "On PTB, AL does better than RE for the small network",
        "For the smaller PTB dataset, performance with AL surpasses that with RE.",
        "§6.3, Table 1",
        "Table 1 PTB test perplexity, small: AL < RE (small only: the sentence sits under the paper's \"AL provides "
        'better performance gains for smaller networks", and its own medium and large PTB models have RE ahead, 73.9 '
        "against 74.7 and 69.0 against 71.2, which C8 states)",
        "82.9 against 85.1 perplexity",
        (lowers("table1", "PTB test", "al", "small", "re"),),
    ),
    Claim(
        "C8",
        "RE does better than AL for the medium and large networks, on both datasets",
        "RE significantly outperforms AL for larger networks.",
        "§6.3, Table 1",
        "Table 1 test perplexity, the networks larger than small (medium on PTB and WikiText-2, large on PTB): RE < "
        "AL in each",
        test_perplexities("table1", [b for b in BLOCKS if b[0] != "small"], ("re", "al")) + " (RE / AL)",
        tuple(lowers("table1", column, "re", size, "al") for size, column in BLOCKS if size != "small"),
    ),
    Claim(
        "C9",
        "The large VD-LSTM+REAL beats all earlier conventional models of Table 3, ensembles included",
        "The best LSTM model (VD-LSTM+REAL) outperforms all previous work which uses conventional framework, "
        "including large ensembles.",
        "§6.3, Table 3",
        "Table 3 PTB test perplexity of VD-LSTM+REAL (large): < 68.5, VD-RHN's (Zilly et al.), the best earlier "
        "conventional result the table prints, ensembles (68.7) included. The paper's own model only ties it on test "
        "(68.5; 71.1 against 71.2 on validation), so its numbers reproduced exactly would be inconclusive",
        "68.5 against 68.5 (VD-RHN) and 68.7 (38 large LSTMs, 10 large VD-LSTMs) perplexity",
        (Check("table3", "PTB test", name("large", "real"), threshold=68.5, lower_is_better=True),),
    ),
    Claim(
        "C10",
        "On PTB, AL's gain over the VD-LSTM shrinks as the network grows",
        "AL provides better performance gains for smaller networks.",
        "§6.3, Table 1",
        "Table 1 PTB test perplexity: AL's gain over VD-LSTM, log(VD / AL) (relative, so that sizes of different "
        "perplexity compare; the paper's absolute gains rank alike), small > medium > large. WikiText-2 is left "
        "out: the paper's own numbers reverse it there (small 2.0%, medium 2.3%; 2.1 against 2.2 perplexity). "
        "That AL gains at all is C1",
        al_gains((size, PTB) for size in SIZE_LABELS),
        tuple(
            Gap(
                lowers("table1", f"{PTB.name} test", "al", larger, relative=True),
                lowers("table1", f"{PTB.name} test", "al", smaller, relative=True),
            )
            for larger, smaller in (("small", "medium"), ("medium", "large"))
        ),
    ),
    Claim(
        "C11",
        "AL's gain over the VD-LSTM is smaller on WikiText-2 than on PTB",
        "In comparison, for the larger Wikitext-2 dataset, improvement by AL is more limited.",
        "§6.3, Table 1",
        "Table 1 test perplexity: AL's gain over VD-LSTM, log(VD / AL) (relative: the two datasets' perplexities "
        "differ; the paper's absolute gains rank alike), on PTB > on WikiText-2, small and medium (no large "
        "model on WikiText-2). That AL gains at all is C1",
        al_gains((size, corpus) for size in ("small", "medium") for corpus in (PTB, WIKITEXT2)),
        tuple(
            Gap(
                lowers("table1", f"{PTB.name} test", "al", size, relative=True),
                lowers("table1", f"{WIKITEXT2.name} test", "al", size, relative=True),
            )
            for size in ("small", "medium")
        ),
    ),
    Claim(
        "C12",
        "On each half of WikiText-2, the small AL model trails RE and REAL by less than on the whole of it",
        "As can be seen in Table 2, AL has significantly improved competitive performance against RE and REAL",
        "§6.3, Tables 1 and 2",
        "small models' test perplexity: AL's deficit to RE and to REAL, log(AL / RE) and log(AL / REAL), on the "
        "whole of WikiText-2 (Table 1) > on each partition (Table 2); relative, as the partitions' perplexities are "
        "37-38% above the whole's (in absolute perplexity, partition 2's deficit to REAL, 5.3, would exceed the "
        "whole's 4.9)",
        "AL / RE / REAL: whole 103.8 / 100.5 / 98.9; partition 1 142.5 / 141.9 / 140.6; partition 2 143.7 / 140.9 / "
        "138.4 perplexity",
        tuple(
            Gap(
                lowers("table1", f"{WIKITEXT2.name} test", better, than="al", relative=True),
                lowers("table2", f"{part.name} test", better, than="al", relative=True),
            )
            for part in PARTITIONS
            for better in ("re", "real")
        ),
    ),
    Claim(
        "C13",
        "For the large networks, reusing the embeddings (RE) gives most of what RE and AL together give",
        "We also find empirically that for large networks, most of the improvement could be achieved by only "
        "reusing the word embeddings.",
        "§1 (introduction), Table 1",
        "Table 1 PTB test perplexity, large (the only size of 1,500 units): RE's gain over VD-LSTM, log(VD / RE), "
        "> REAL's further gain over RE, log(RE / REAL) (\"most\": more than half of REAL's gain over VD-LSTM; "
        "relative, as C10)",
        test_perplexities("table1", (("large", f"{PTB.name} test"),), ("vd", "re", "real")) + " (VD / RE / REAL)",
        (
            Gap(
                lowers("table1", f"{PTB.name} test", "re", "large", relative=True),
                lowers("table1", f"{PTB.name} test", "real", "large", than="re", relative=True),
            ),
        ),
    ),
    Claim(
        "C14",
        "On PTB, AL, RE and REAL each reach a lower validation perplexity than the VD-LSTM, small and large",
        "All of AL, RE, and REAL networks significantly outperform the baseline in both cases.",
        "§6.3, Figure 2",
        "Table 1 PTB validation perplexity, small and large (Figure 2's \"both cases\": its curves' final points, "
        "which Table 1 prints): AL, RE, REAL < VD-LSTM",
        test_perplexities("table1", tuple((size, f"{PTB.name} valid") for size in ("small", "large")), VARIANTS)
        + " (VD / AL / RE / REAL)",
        tuple(
            lowers("table1", f"{PTB.name} valid", variant, size)
            for size in ("small", "large")
            for variant in ("al", "re", "real")
        ),
    ),
    Claim(
        "C15",
        "Even at a temperature as low as 2, the augmented loss brings W close to Lᵀ",
        "Notably, the augmented loss causes $W$ to approach $L^T$ sufficiently even at temperatures as low as 2",
        "§6.2, Figure 1 (b)",
        "Figure 1 subspace distance d(Lᵀ, W) over its seeds: at τ = 2 with only the augmented loss (panel (b), β = 1) "
        '< 0.5 × at β = 0 (panel (a), no augmented loss) ("sufficiently" read as less than half the distance '
        "without it, which the paper has almost 1; it prints no number at τ = 2). That a higher τ lowers it further "
        "is C6",
        "none printed at τ = 2 (Figure 1 (b) is a plot); almost 1 at β = 0",
        (
            Check(
                "figure1",
                FIGURE1_B,
                SUBSPACE_SERIES,
                x=2.0,
                than_column=FIGURE1_A,
                than_x=0.0,
                lower_is_better=True,
                factor=0.5,
            ),
        ),
    ),
    Claim(
        "C16",
        "For the large network, RE predicts about as well as REAL",
        "We would like to note that prediction performance of VD-LSTM +RE is similar to VD-LSTM +REAL for the "
        "large network.",
        "§6.4, Table 4",
        "Table 1 PTB test perplexity, large (Table 4's 1,500 units): RE within 2% of REAL (\"prediction "
        'performance" read as test perplexity, Table 4\'s next words being examples; "similar" as within 2%: the '
        "paper's pair is 0.7% apart, and the large gap it calls RE significantly outperforming AL, C8, 3.2%)",
        test_perplexities("table1", (("large", f"{PTB.name} test"),), ("re", "real")) + " (RE / REAL)",
        (Check("table1", f"{PTB.name} test", name("large", "re"), than=name("large", "real"), parity=0.02),),
    ),
    Claim(
        "C17",
        "The large VD-LSTM+REAL gives <unk> a lower probability than VD-LSTM over the PTB test text",
        "we notice that the probability of generating the `<unk>` token with our proposed network (VD-LSTM +REAL) "
        "is significantly lower compared to the baseline network (VD-LSTM) across many words.",
        "§6.4, Table 4",
        "Table 4's models (1,500 units, PTB): the mean over every position of the PTB test text of p(<unk> | the "
        'text before it), VD-LSTM+REAL < VD-LSTM ("across many words" read as over the test text\'s positions; the '
        "paper calls its observation qualitative and prints no number)",
        "none printed (§6.4 is qualitative; Table 4's examples show <unk> at 0.05-0.33 under VD-LSTM)",
        (lower_probability(UNK_TOKEN),),
    ),
    Claim(
        "C18",
        'The large VD-LSTM+REAL gives "a", "an" and "the" lower probabilities than VD-LSTM over the PTB test text',
        'We observe the same behavior with very frequent words such as "a", "an", and "the", owing to the same fact '
        "that they are not correlated with particular words.",
        "§6.4, Table 4",
        "Table 4's models (1,500 units, PTB): the mean over every position of the PTB test text of p(w | the text "
        'before it) for w = a, an, the, each VD-LSTM+REAL < VD-LSTM ("the same behavior": C17\'s, the probability '
        "being lower; the paper prints no number)",
        "none printed (§6.4 is qualitative)",
        tuple(lower_probability(word) for word in FREQUENT_WORDS),
    ),
)
