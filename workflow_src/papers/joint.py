"""Pappas, Miculicich Werlen & Henderson, Beyond Weight Tying: Learning Joint Input-Output
Embeddings for Neural Machine Translation, WMT 2018 (`../shared/seeds/001_44f70e2266ae43c0.txt`).

Every model reads and writes sentencepiece BPE with one of three vocabularies (the data set's
`bpe_sizes`: 32K, 64K, 128K operations), has the paper's architecture (config `architectures.joint`:
2 layers of 512, a unidirectional encoder as OpenNMT-py's default and the paper's |Θ| have it,
dropout 0.3; Adam 1e-3, config train.lr.joint) and a softmax over the decoder's
input embedding E in one of the output forms of `workflow_src.model.joint`. Experiments are named
`bpe<vocabulary>-<form>[<d_j>][-layers<n>]`. BLEU is on tokenized, de-BPE'd text, as multi-bleu.perl
computes it (the `bleu_tok` metric: sacrebleu with `tokenize none`), of beam-search output (beam
size 5, OpenNMT-py's default; the paper does not give its size).
"""

from workflow_src.artefacts import (
    Column,
    Figure,
    MeteorByFrequency,
    RepresentationTable,
    Row,
    SamplingTable,
    ScoreAgainst,
    ScoreTable,
    System,
    parameter_column,
)
from workflow_src.papers.joint_ledger import DEVIATIONS  # noqa: F401  (its ledger: registry.paper_module reads it here)
from workflow_src.registry import Experiment, named

BPE_SIZES = ("32k", "64k", "128k")
JOINT_DIMS = (512, 2048, 4096)  # §4.2: d_j chosen on the development set among these
LEVELS = ((0.001, "‡"), (0.01, "†"), (0.05, "*"))  # Table 2: p < .05, .01, .001
SEARCH = "beam5"


def name(bpe: str, form: str, joint_dim: int | None = None, layers: int | None = None) -> str:
    return f"bpe{bpe}-{form}{joint_dim or ''}" + (f"-layers{layers}" if layers and layers != 2 else "")


def experiment(
    literal: str, bpe: str, form: str, joint_dim: int | None = None, layers: int | None = None
) -> tuple[str, Experiment]:
    """Experiment `literal`, which reads `bpe<vocabulary>-<form>[<d_j>][-layers<n>]` (`name`). §4.2:
    "all models on corpora with V ≈ 128K and all structure-aware models with d_j >= 2048 on corpora
    with V <= 64K are trained with 25% negative sampling"."""
    sampled = bpe == "128k" or (joint_dim or 0) >= 2048
    return named(
        literal,
        name(bpe, form, joint_dim, layers),
        Experiment(
            "bpe",
            "bpe",
            "softmax",
            "ce",
            output_form=form,
            joint_dim=joint_dim,
            sample_share=0.25 if sampled else None,
            bpe=bpe,
            architecture="joint",
            layers=None if layers == 2 else layers,
            lr_group="joint",
        ),
    )


ABLATIONS = (("bilinear", None), ("output", None), ("context", None))
DEPTHS = (1, 2, 3, 4)
EXPERIMENTS = dict(
    [
        experiment("bpe32k-nmt", "32k", "nmt"),
        experiment("bpe32k-tied", "32k", "tied"),
        experiment("bpe32k-joint512", "32k", "joint", 512),
        experiment("bpe32k-joint2048", "32k", "joint", 2048),
        experiment("bpe32k-joint4096", "32k", "joint", 4096),
        experiment("bpe64k-nmt", "64k", "nmt"),
        experiment("bpe64k-tied", "64k", "tied"),
        experiment("bpe64k-joint512", "64k", "joint", 512),
        experiment("bpe64k-joint2048", "64k", "joint", 2048),
        experiment("bpe64k-joint4096", "64k", "joint", 4096),
        experiment("bpe128k-nmt", "128k", "nmt"),
        experiment("bpe128k-tied", "128k", "tied"),
        experiment("bpe128k-joint512", "128k", "joint", 512),
        experiment("bpe128k-joint2048", "128k", "joint", 2048),
        experiment("bpe128k-joint4096", "128k", "joint", 4096),
        # Table 3's ablations
        experiment("bpe32k-bilinear", "32k", "bilinear"),
        experiment("bpe32k-output", "32k", "output"),
        experiment("bpe32k-context", "32k", "context"),
        # Table 5's depths (2 is Table 2's models)
        experiment("bpe32k-nmt-layers1", "32k", "nmt", layers=1),
        experiment("bpe32k-nmt-layers3", "32k", "nmt", layers=3),
        experiment("bpe32k-nmt-layers4", "32k", "nmt", layers=4),
        experiment("bpe32k-tied-layers1", "32k", "tied", layers=1),
        experiment("bpe32k-tied-layers3", "32k", "tied", layers=3),
        experiment("bpe32k-tied-layers4", "32k", "tied", layers=4),
        experiment("bpe32k-joint512-layers1", "32k", "joint", 512, 1),
        experiment("bpe32k-joint512-layers3", "32k", "joint", 512, 3),
        experiment("bpe32k-joint512-layers4", "32k", "joint", 512, 4),
    ]
)

EN_FI, FI_EN, EN_DE, DE_EN = (
    Column("wmt17", pair, "bleu_tok", header)
    for pair, header in (("en-fi", "En→Fi"), ("fi-en", "Fi→En"), ("en-de", "En→De"), ("de-en", "De→En"))
)
DIRECTIONS = (EN_FI, FI_EN, EN_DE, DE_EN)
MODEL_NAMES = {"nmt": "NMT", "tied": "NMT-tied", "joint": "NMT-joint"}
# §4.1: Meteor's alpha, beta, gamma, delta "when evaluating on English and German respectively"
METEOR_PARAMETERS = {"en": (0.85, 0.2, 0.6, 0.0), "de": (0.95, 1.0, 0.55, 0.0)}


def table2_rows(bpe: str, label: str, cells: dict[str, tuple[float, ...]]) -> tuple[Row, ...]:
    """One vocabulary's block of Table 2: per model, (|Θ| in millions, BLEU) per direction as
    printed; NMT-joint's d_j is chosen on the development set, differences are against NMT."""
    rows = []
    for form, numbers in cells.items():
        paper = {}
        for column, (parameters, bleu) in zip(DIRECTIONS, zip(numbers[::2], numbers[1::2]), strict=True):
            paper |= {column.name: bleu, parameter_column(column.name): parameters * 1e6}
        joint = form == "joint"
        rows.append(
            Row(
                name(bpe, form, 512 if joint else None),
                paper,
                {"BPE": label, "Model": MODEL_NAMES[form]},
                tune=tuple(name(bpe, "joint", d) for d in JOINT_DIMS) if joint else None,
                baseline=name(bpe, "nmt"),
                search=SEARCH,
            )
        )
    return tuple(rows)


def ablation(form: str, joint_dim: int | None, label: str, layer_form: str, bleu: float, parameters: float) -> Row:
    """A Table 3 row (De→En, 32K)."""
    return Row(
        name("32k", form, joint_dim),
        {DE_EN.name: bleu, parameter_column(DE_EN.name): parameters * 1e6},
        {"Model": label, "Layer form": layer_form},
        baseline=name("32k", "nmt"),
        search=SEARCH,
    )


def depth_rows(form: str, joint_dim: int | None, cells: tuple[float, ...]) -> tuple[Row, ...]:
    """Table 5, one model: (BLEU, |Θ| in millions) per depth 1-4 as printed, a row per depth here."""
    return tuple(
        Row(
            name("32k", form, joint_dim, layers),
            {DE_EN.name: bleu, parameter_column(DE_EN.name): parameters * 1e6},
            {"Model": MODEL_NAMES[form], "d_j": str(joint_dim or "-"), "Layers": str(layers)},
            baseline=name("32k", "nmt", layers=layers),
            search=SEARCH,
        )
        for layers, (bleu, parameters) in zip(DEPTHS, zip(cells[::2], cells[1::2]), strict=True)
    )


ARTEFACTS = {
    "table1": RepresentationTable(
        title="Top-5 most similar input and output representations to query words by cosine similarity, De→En (32K)",
        column=DE_EN,
        sides=(
            ("NMT Input", name("32k", "nmt"), "input"),
            ("NMT Output", name("32k", "nmt"), "output"),
            ("NMT-tied Input/Output", name("32k", "tied"), "input"),
            ("NMT-joint Input", name("32k", "joint", 512), "input"),
            ("NMT-joint Output", name("32k", "joint", 512), "output"),
        ),
        queries=("visited", "generous", "friend"),
        labels={"visited": "Verb past tense", "generous": "Adjective", "friend": "Noun"},
        paper={
            "visited": {
                "NMT Input": ("attacked", "conquered", "contacted", "occupied", "consulted"),
                "NMT Output": ("visiting", "attended", "visit", "visits", "discovered"),
                "NMT-tied Input/Output": ("visits", "attended", "visiting", "frequented", "visit"),
                "NMT-joint Input": ("visiting", "attended", "visits", "visit", "frequented"),
                "NMT-joint Output": ("attended", "witnessed", "discussed", "recognized", "demonstrated"),
            },
            "generous": {
                "NMT Input": ("modest", "extensive", "substantial", "ambitious", "sumptuous"),
                "NMT Output": ("spacious", "generosity", "generously", "massive", "huge"),
                "NMT-tied Input/Output": ("generosity", "spacious", "generously", "lavish", "massive"),
                "NMT-joint Input": ("spacious", "generosity", "flexible", "generously", "massive"),
                "NMT-joint Output": ("friendly", "flexible", "brilliant", "fantastic", "massive"),
            },
            "friend": {
                "NMT Input": ("wife", "husband", "colleague", "friends", "painter"),
                "NMT Output": ("friends", "colleague", "Fri@@", "fellow", "friendship"),
                "NMT-tied Input/Output": ("colleague", "friends", "neighbour", "girlfriend", "companion"),
                "NMT-joint Input": ("colleague", "friends", "neighbour", "girlfriend", "husband"),
                "NMT-joint Output": ("colleague", "fellow", "supporter", "partner", "manager"),
            },
        },
    ),
    "table2": ScoreTable(
        title="Model performance (BLEU on tokenized text) and number of parameters with varying BPE operations "
        "(32K, 64K, 128K) on WMT17 English-Finnish and English-German",
        columns=DIRECTIONS,
        label_columns=("BPE", "Model"),
        significance_levels=LEVELS,
        parameters=True,
        rows=(
            *table2_rows(
                "32k",
                "32K",
                {
                    "nmt": (60.0, 12.68, 59.8, 9.42, 61.3, 18.46, 65.0, 15.85),
                    "tied": (43.3, 12.58, 43.3, 9.59, 44.9, 18.48, 46.7, 16.51),
                    "joint": (47.5, 13.03, 47.5, 10.19, 47.0, 19.79, 48.8, 18.11),
                },
            ),
            *table2_rows(
                "64k",
                "64K",
                {
                    "nmt": (108.0, 13.32, 106.7, 12.29, 113.9, 20.70, 114.0, 20.01),
                    "tied": (75.0, 13.59, 75.0, 11.74, 79.4, 20.85, 79.4, 19.19),
                    "joint": (75.5, 13.84, 75.5, 12.08, 79.9, 21.62, 79.9, 20.61),
                },
            ),
            *table2_rows(
                "128k",
                "128K (sampled)",
                {
                    "nmt": (201.1, 13.52, 163.1, 11.64, 211.3, 22.48, 178.3, 19.12),
                    "tied": (135.6, 13.90, 103.2, 11.97, 144.2, 21.43, 111.6, 19.43),
                    "joint": (137.7, 13.93, 103.7, 12.07, 146.3, 22.73, 115.8, 20.60),
                },
            ),
        ),
    ),
    "table3": ScoreTable(
        title="BLEU on De→En (32K) for the ablation analysis of NMT-joint",
        columns=(DE_EN,),
        label_columns=("Model", "Layer form"),
        significance_levels=LEVELS,
        parameters=True,
        rows=(
            ablation("nmt", None, "NMT", "W^T h_t", 15.85, 65.0),
            ablation("tied", None, "NMT-tied", "E h_t", 16.51, 46.7),
            ablation("bilinear", None, "Eq. 6", "E W h_t", 16.23, 47.0),
            ablation("output", None, "Eq. 7a", "σ(EW) h_t", 16.01, 47.0),
            ablation("context", None, "Eq. 7b", "E σ(W h_t)", 17.52, 47.0),
            ablation("joint", 512, "Eq. 15 (512)", "σ(E W_o) σ(W_c h_t)", 17.54, 47.2),
            ablation("joint", 2048, "Eq. 15 (2048)", "σ(E W_o) σ(W_c h_t)", 18.11, 48.8),
        ),
    ),
    "table5": ScoreTable(
        title="BLEU on De→En (32K) for NMT-joint (d_j = 512) against the baselines when varying the depth of "
        "both encoder and decoder (the paper's depth columns are rows here)",
        columns=(DE_EN,),
        label_columns=("Model", "d_j", "Layers"),
        significance_levels=LEVELS,
        parameters=True,
        rows=(
            *depth_rows("nmt", None, (16.49, 60.8, 15.85, 65.0, 17.71, 69.2, 17.74, 73.4)),
            *depth_rows("tied", None, (15.93, 42.5, 16.51, 46.7, 17.72, 50.9, 17.60, 55.1)),
            *depth_rows("joint", 512, (16.93, 43.0, 17.54, 47.2, 17.83, 51.4, 18.13, 55.6)),
        ),
    ),
    "table4": SamplingTable(
        title="Target tokens processed per second during training with negative sampling on En→De with a large "
        "BPE vocabulary (|V| ≈ 128K; a benchmark)",
        label_columns=("Model", "d_j"),
        shares=(0.5, 0.25, 0.05),
        rows=tuple(
            Row(
                name("128k", form, d),
                {"0.5": a, "0.25": b, "0.05": c},
                {"Model": MODEL_NAMES[form], "d_j": str(d or "-")},
            )
            for form, d, (a, b, c) in (
                ("nmt", None, (4.3e3, 5.7e3, 7.1e3)),
                ("tied", None, (5.2e3, 6.0e3, 7.8e3)),
                ("joint", 512, (4.9e3, 5.9e3, 7.2e3)),
                ("joint", 2048, (2.8e3, 4.2e3, 7.0e3)),
                ("joint", 4096, (1.7e3, 2.9e3, 6.0e3)),
            )
        ),
    ),
    "figure2": Figure(
        title="BLEU (tokenized text) of NMT-joint against its joint space size d_j, 32K BPE; NMT and NMT-tied as lines",
        panels=tuple(
            ScoreAgainst(
                column.name,
                column,
                "d_j",
                tuple((d, name("32k", "joint", d)) for d in JOINT_DIMS),
                "NMT-joint",
                (System("NMT", name("32k", "nmt")), System("NMT-tied", name("32k", "tied"))),
                search=SEARCH,
            )
            for column in DIRECTIONS
        ),
    ),
    "figure3": Figure(
        title="METEOR (%) on both directions of German-English (32K BPE) for outputs of high, medium and low "
        "training frequency (each a third of |V|, taken as Meteor's function words, delta 0)",
        panels=tuple(
            MeteorByFrequency(
                column.name,
                column,
                (
                    System("NMT", name("32k", "nmt")),
                    System("NMT-tied", name("32k", "tied")),
                    System(
                        "NMT-joint", name("32k", "joint", 512), tune=tuple(name("32k", "joint", d) for d in JOINT_DIMS)
                    ),
                ),
                METEOR_PARAMETERS,
                search=SEARCH,
            )
            for column in (EN_DE, DE_EN)
        ),
    ),
}
