"""Kumar & Tsvetkov, Von Mises-Fisher Loss for Training Sequence to Sequence Models with
Continuous Outputs, ICLR 2019 (`../shared/seeds/000_f1127286484da4f1.txt`).

Experiments are named `<source>2<target>-[<embeddings>-][tied-]<loss>`; the tables' descriptive
columns are derived from them (`label`), so a row is its experiment and the paper's numbers.
"""

from workflow_src.artefacts import (Column, ConvergenceTable, ExampleTable, Figure, LearningCurves, ParameterTable,
                                    RareWordTable, Row, ScoreTable, System, Throughput)
from workflow_src.paper_records import Check, Claim, Deviation, mixed_precision
from workflow_src.papers.continuous_setup import (BLEU_SCORE, BRIDGE, CLIPPING, CONSTANT_LR, DECODE_LIMIT,
                                                  INITIALISATION, IWSLT_TEST, LOSSES, SELECTION, UNK_DICTIONARY,
                                                  continuous)
from workflow_src.registry import Experiment

def softmax(source: str, target: str) -> tuple[str, Experiment]:
    return f"{source}2{target}-ce", Experiment(source, target, "softmax", "ce")


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


EXPERIMENTS = dict([
    softmax("word", "word"),
    softmax("word", "bpe"),
    softmax("bpe", "bpe"),
    continuous("l2", "word2vec", tied=False),
    continuous("cosine", "word2vec", tied=False),
    continuous("maxmargin", "word2vec", tied=False),
    continuous("maxmargin", "fasttext", tied=False),
    continuous("maxmargin", "fasttext", tied=True),
    continuous("nllvmf_reg1", "word2vec", tied=False),
    continuous("nllvmf_reg1reg2", "word2vec", tied=False),
    continuous("nllvmf_reg1reg2", "word2vec", tied=True),
    continuous("nllvmf_reg1reg2", "fasttext", tied=False),
    continuous("nllvmf_reg1reg2", "fasttext", tied=True),
    continuous("nllvmf_released", "fasttext", tied=True),
    continuous("nllvmf_appendix", "fasttext", tied=True),
    # WMT16 (§4.1): BPE sources, so the 300K-word target vocabulary has its translations
    continuous("maxmargin", "fasttext", tied=True, source="bpe"),
    continuous("nllvmf_reg1reg2", "fasttext", tied=True, source="bpe"),
])

IWSLT = tuple(Column("iwslt16", pair) for pair in ("fr-en", "de-en", "en-fr"))
LABELS = ("Embedding Model", "Tied Emb", "Source Type/Target Type", "Loss")


def row(name: str, fr_en: float | None, de_en: float | None, en_fr: float | None, note: str = "") -> Row:
    paper = {column.name: value for column, value in zip(IWSLT, (fr_en, de_en, en_fr), strict=True) if value is not None}
    return Row(name, paper, label(name, EXPERIMENTS[name]), note)


WMT = Column("wmt16", "de-en", header="WMT de-en")
SOFTMAX = System("Softmax", "word2word-ce")
BPE = System("BPE", "bpe2bpe-ce")
MAXMARGIN = System("Max Margin", "word2emb-fasttext-tied-maxmargin")
NLLVMF = System("Emb w/ NLL-vMF", "word2emb-fasttext-tied-nllvmf_reg1reg2",
                per_dataset={"wmt16": "bpe2emb-fasttext-tied-nllvmf_reg1reg2"})


def size_label(name: str) -> dict[str, str]:
    """Table 4's descriptive columns."""
    full = label(name, EXPERIMENTS[name])
    return {"Output Type": full["Source Type/Target Type"].split("→")[1], "Tied": full["Tied Emb"], "Loss": full["Loss"]}


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
            row("word2emb-fasttext-tied-nllvmf_released", None, None, None,
                note="not in the paper: the loss of the authors' released code"),
            row("word2emb-fasttext-tied-nllvmf_appendix", None, None, None,
                note="not in Table 1: reg1+reg2 with the approximate -log C_m of §8.2, which the paper recommends "
                     "(sign corrected: the appendix prints it as +log C_m)"),
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
        title="Parameters of the input and output layers, and training time per batch (batch size 64), IWSLT16 fr-en",
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
        paper={label: dict(zip(("Softmax", "BPE", "Max Margin", "Emb w/ NLL-vMF"), values, strict=True)) for label, values in (
            ("1", (0.42, 0.50, 0.30, 0.52)), ("2", (0.16, 0.26, 0.25, 0.31)), ("3", (0.14, 0.22, 0.25, 0.33)),
            ("4", (0.29, 0.24, 0.30, 0.33)), ("5-9", (0.28, 0.33, 0.38, 0.37)), ("10-99", (0.54, 0.53, 0.53, 0.55)),
            ("100-999", (0.60, 0.61, 0.60, 0.60)), ("1000+", (0.69, 0.70, 0.69, 0.69)))},
    ),
    "table10": ExampleTable(
        title="Translation examples, fr-en",
        column=IWSLT[0],
        systems=(BPE, System("L2", "word2emb-word2vec-l2"), System("Cosine", "word2emb-word2vec-cosine"),
                 System("MaxMargin", MAXMARGIN.experiment), System("NLLvMF reg", NLLVMF.experiment)),
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
        panels=(Throughput("Training throughput", (SOFTMAX, BPE, NLLVMF)),
                LearningCurves("fr-en", IWSLT[0], (SOFTMAX, BPE, NLLVMF))),
    ),
    "figure2": Figure(
        title="Development BLEU by epoch, IWSLT16 de-en (left) and en-fr (right)",
        panels=tuple(LearningCurves(c.pair, c, (SOFTMAX, BPE, NLLVMF)) for c in IWSLT[1:]),
    ),
    "table9": ScoreTable(
        title="Translation quality experiments using beam search with BPE based baseline models with a beam size of 5",
        columns=(*IWSLT, WMT),
        label_columns=LABELS,
        rows=(Row("bpe2bpe-ce", {"fr-en": 32.2, "de-en": 26.1, "en-fr": 32.4, "WMT de-en": 31.9},
                  label("bpe2bpe-ce", EXPERIMENTS["bpe2bpe-ce"]), search="beam5"),),
    ),
}

BPE_TOOL = Deviation(
    "D25", "BPE implementation", "BPE (Sennrich et al., 2016: subword-nmt) with N merge operations (§4.1: 100,000 "
    "WMT16 source merges)", "sentencepiece in BPE mode, one model per language, asked for merges + characters + 3 "
    "specials pieces (<unk>, <s>, </s>); a word-start mark (▁) instead of subword-nmt's @@ continuation mark",
    "sentencepiece is a maintained, pip-installable BPE with no Perl or scripts around it", "segmentations differ "
    "from subword-nmt's in ties and rare characters, and the vocabulary is about N + characters pieces where "
    "subword-nmt's is the pieces its encoded text holds; the BPE rows' BLEU may move by tenths",
    "workflow_src/data/bpe.py:train",
    ("table1", "table2", "table3", "table4", "table5", "table9", "table10", "figure1", "figure2"))

DEVIATIONS = (
    IWSLT_TEST,
    BLEU_SCORE,
    Deviation("D3", "METEOR", "METEOR 1.5 (the jar)", "nltk's METEOR (exact, stem, WordNet synonyms), the synonym "
              "stage given the words rather than their stems", "no pip-installable official implementation; the jar "
              "needs java", "METEOR differs from the jar's by its paraphrase module and parameters; the signature "
              "names the modules", "scoring.meteor_jar", ("table2",)),
    Deviation("D4", "log C_m", "the exact normaliser (the released code: scipy's ive on the CPU, log 0 below "
              "κ ≈ 1.03 at m = 300)", "float64 torch on the device, exact and stable for every m and κ",
              "no underflow, no host round trip", "none on the equation; no inf or NaN losses at small κ",
              "workflow_src/model/vmf.py:log_cm", ("table1", "table2"), "faithful"),
    Deviation("D5", "Table 4 and Figure 1 (left)", "absolute ms per batch and samples per second on their GPU",
              "measured on the user's device at `benchmarks:` sizes (the paper's in config.yaml), the mean of 5 or more "
              "timed repeats with their sd, shown beside the paper's as ratios to word→word CE; Table 4's parameter "
              "counts are those of the fr-en models as trained (seed 1), biases included", "times depend on the device",
              "compare ratios, not absolute times; counts differ from the paper's by the biases, and by the "
              "vocabularies where fr-en's training text gives fewer than 50K words or 16K pieces",
              "benchmarks", ("table4", "figure1")),
    Deviation("D6", "released-code loss", "not in the paper", "an extra Table 1 row with the released code's "
              "-log C_m(κ) + log(1+κ)(0.2 - cos), named so", "the released code trains with it, not with reg1/reg2",
              "none on the paper's rows", "workflow_src/papers/vmf.py:LOSSES", ("table1",), "extra"),
    Deviation("D7", "approximate -log C_m", "the appendix recommends an approximation of -log C_m (its sign is "
              "wrong; it is a surrogate for the gradient)", "a named extra Table 1 row trains with the approximation; "
              "the paper's rows use the exact value", "the paper recommends it and the released code trains with it",
              "none on the paper's rows", "workflow_src/papers/vmf.py:LOSSES", ("table1",), "extra"),
    Deviation("D8", "Table 3 time to convergence", "training converged on validation loss or perplexity",
              "the training seconds until the epoch the paper's criterion selects (development loss)",
              "the paper's criterion; BLEU-selected times were longer or shorter by whole epochs",
              "our times are comparable as ratios to softmax", "workflow_src/report/analysis.py:time_to_convergence", ("table3",),
              "faithful"),
    SELECTION,
    Deviation("D10", "Figure 2 seeds", "averaged over several runs", "3 seeds, mean and range",
              "the paper's averaging", "none", "papers.vmf.figure2.seeds", ("figure2",), "faithful"),
    Deviation("D11", "Table 10 example", "one fr-en test sentence and its translations", "the paper's sentence "
              "when the test set holds it, else the first test sentence of at least 10 tokens (the demo world)",
              "the demo world does not contain the paper's sentence", "none on real data",
              "workflow_src/artefacts.py:ExampleTable", ("table10",), "faithful"),
    Deviation("D12", "dropout", "silent", "none (`model.dropout: 0`)", "the syn-margin paper, set up to match, "
              "trains without (§4), so both papers share their models", "unknown; the paper's numbers may assume some",
              "model.dropout", ("table1", "table2", "table3", "table5", "table9", "figure1", "figure2")),
    Deviation("D13", "encoder depth", "1 bidirectional layer (Table 7); the released README trains 2",
              "1 layer, as the paper", "the paper is explicit", "none", "model.encoder_layers",
              ("table1", "table4"), "faithful"),
    Deviation("D14", "WMT16 cleaning", "silent", "training pairs with a source/target length ratio above 9 are "
              "dropped (clean-corpus-n.perl's usual); dev and test never filtered", "CommonCrawl is noisy",
              "a few percent fewer training pairs", "datasets.wmt16.max_ratio", ("table2", "table3", "table9")),
    Deviation("D15", "WMT16 target BPE", "100,000 source merges; the target's not given", "32,000 target merges",
              "a common size for a 4.5M-pair corpus", "the BPE baseline's BLEU depends on it",
              "datasets.wmt16.bpe_merges", ("table2", "table3", "table9")),
    Deviation("D16", "IWSLT BPE size", "not given", "16,000 merges a side (Table 4's BPE layers have 16K rows: "
              "8.192M = 16K x 512)", "inferred from Table 4", "none if the inference holds",
              "datasets.iwslt16.bpe_merges", ("table1", "table4", "table5", "table9")),
    Deviation("D17", "French target embeddings", "trained on the WMT16 monolingual data (WMT16 has no French)",
              "French: Europarl v7, News Commentary v10, News Crawl 2007-2014, News Discussions v1 (WMT14/15, as the "
              "authors' README says)", "WMT16 published no French monolingual data", "none expected",
              "monolingual.fr.corpora", ("table1",)),
    UNK_DICTIONARY,
    mixed_precision("D19", ("table1", "table2", "table3", "table4", "table5", "table9", "table10", "figure1", "figure2")),
    CONSTANT_LR,
    CLIPPING,
    INITIALISATION,
    DECODE_LIMIT,
    BRIDGE,
    BPE_TOOL,
)


TIED_VMF = "word2emb-fasttext-tied-nllvmf_reg1reg2"


def bleu_check(pair: str, row: str, than: str, margin: float = 0.0) -> Check:
    return Check("table1", pair, row, than=than, margin=margin)


CLAIMS = (
    Claim("C1", "NLLvMF reg1+reg2 with tied fastText targets comes within 1 BLEU of word→word CE on fr-en "
          "(abstract: \"comparable translation quality\")", "Table 1 test BLEU, fr-en: NLLvMF + 1 > CE",
          "32.1 against 31.0", (bleu_check("fr-en", TIED_VMF, "word2word-ce", margin=1.0),)),
    Claim("C2", "Tying the fastText target embeddings raises NLLvMF reg1+reg2's BLEU on fr-en and de-en",
          "Table 1 test BLEU: tied > untied", "fr-en 32.1 against 30.4; de-en 25.1 against 23.4",
          tuple(bleu_check(pair, TIED_VMF, "word2emb-fasttext-nllvmf_reg1reg2") for pair in ("fr-en", "de-en"))),
    Claim("C3", "A continuous model's training step costs under half a CE step (abstract: \"up to 2.5x faster\")",
          "Table 4 ms per batch: NLLvMF < 0.5 × word→word CE", "170 / 400 ms = 0.43",
          (Check("table4", "ms per batch", TIED_VMF, than="word2word-ce", lower_is_better=True, factor=0.5),)),
    Claim("C4", "NLLvMF converges faster than the softmax baseline on fr-en (§5: \"less than up-to 2.5x\")",
          "Table 3 training time to convergence, fr-en: NLLvMF < softmax", "1.9 h against 4 h (0.48)",
          (Check("table3", "Emb w/ NLL-vMF ours", "fr-en", than_column="Softmax ours", lower_is_better=True),)),
    Claim("C5", "NLLvMF beats the L2 and cosine losses (word2vec targets) on fr-en",
          "Table 1 test BLEU, fr-en: NLLvMF reg1+reg2 > L2, > cosine", "29.7 against 27.2 and 29.1",
          tuple(bleu_check("fr-en", "word2emb-word2vec-nllvmf_reg1reg2", f"word2emb-word2vec-{loss}") for loss in ("l2", "cosine"))),
    Claim("C6", "fastText targets beat word2vec targets for NLLvMF reg1+reg2 on fr-en and de-en",
          "Table 1 test BLEU: fastText > word2vec", "fr-en 30.4 against 29.7; de-en 23.4 against 21.6",
          tuple(bleu_check(pair, "word2emb-fasttext-nllvmf_reg1reg2", "word2emb-word2vec-nllvmf_reg1reg2")
                for pair in ("fr-en", "de-en"))),
    Claim("C7", "NLLvMF translates rare words better than softmax (§6, Table 5)",
          "Table 5 unigram F1 of test words seen 1, 2, 3 and 5-9 times in training: NLLvMF > softmax",
          "0.52 / 0.42, 0.31 / 0.16, 0.33 / 0.14, 0.37 / 0.28",
          tuple(Check("table5", "Emb w/ NLL-vMF", frequency, than_column="Softmax") for frequency in ("1", "2", "3", "5-9"))),
)
