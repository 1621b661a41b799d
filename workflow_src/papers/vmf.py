"""Kumar & Tsvetkov, Von Mises-Fisher Loss for Training Sequence to Sequence Models with
Continuous Outputs, ICLR 2019 (`../shared/seeds/000_f1127286484da4f1.txt`).

Table 1 (BLEU, IWSLT16, greedy decoding). Each row: an experiment and the paper's numbers.
"""

from workflow_src.registry import Experiment, Row, Table

LAMBDA1, LAMBDA2 = 0.02, 0.1  # §3 footnotes 4 and 5

EXPERIMENTS = {
    "word2word-ce": Experiment("word", "word", "softmax", "ce"),
    "bpe2bpe-ce": Experiment("bpe", "bpe", "softmax", "ce"),
    "word2emb-fasttext-tied-nllvmf_reg1reg2": Experiment(
        "word", "emb", "continuous", "nllvmf", {"lambda1": LAMBDA1, "lambda2": LAMBDA2}, "fasttext", tied=True
    ),
}

TABLE1_COLUMNS = ("Embedding Model", "Tied Emb", "Source Type/Target Type", "Loss")

TABLES = {
    "table1": Table(
        title="Translation quality experiments (BLEU scores) on IWSLT16 datasets",
        dataset="iwslt16",
        pairs=("fr-en", "de-en", "en-fr"),
        metric="bleu",
        label_columns=TABLE1_COLUMNS,
        rows=(
            Row("word2word-ce", {"fr-en": 31.0, "de-en": 24.7, "en-fr": 29.3},
                dict(zip(TABLE1_COLUMNS, ("-", "no", "word→word", "CE")))),
            Row("bpe2bpe-ce", {"fr-en": 31.4, "de-en": 25.8, "en-fr": 31.0},
                dict(zip(TABLE1_COLUMNS, ("-", "no", "BPE→BPE", "CE")))),
            Row("word2emb-fasttext-tied-nllvmf_reg1reg2", {"fr-en": 32.1, "de-en": 25.1, "en-fr": 31.7},
                dict(zip(TABLE1_COLUMNS, ("fasttext", "yes", "word→emb", "NLLvMF reg1+reg2")))),
        ),
    ),
}
