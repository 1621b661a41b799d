

rule bpe:
    """A sentencepiece BPE model of one language with the configured merges, learnt on the training
    text (once per corpus: layout.training_pair), and that text encoded."""
    input:
        f"{DATA_DIR}/tok/train.{{lang}}",
    output:
        model=f"{DATA_DIR}/bpe{{merges}}/{{lang}}.model",
        encoded=f"{DATA_DIR}/bpe{{merges}}/train.{{lang}}",
    params:
        prefix=lambda w, output: output.model.removesuffix(".model"),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.{lang}.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.bpe --merges {wildcards.merges} --train {input:q} --model-prefix {params.prefix:q} "
        "--encode {input:q}:{output.encoded:q} --threads {threads} > {log:q} 2>&1"


rule bpe_encode:
    """A direction's development or test set encoded with its corpus's BPE model."""
    input:
        model=lambda w: layout.corpus_bpe_file(config, w.dataset, pair(w), w.merges, f"{w.lang}.model"),
        text=f"{DATA_DIR}/tok/{{split}}.{{lang}}",
    output:
        f"{DATA_DIR}/bpe{{merges}}/{{split}}.{{lang}}",
    params:
        prefix=lambda w, input: input.model.removesuffix(".model"),
    wildcard_constraints:
        split="dev|test",
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.{split}.{lang}.log",
    resources:
        **limits("default"),
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.bpe --model-prefix {params.prefix:q} --encode {input.text:q}:{output:q} > {log:q} 2>&1"


rule bpe_counts:
    """A BPE vocabulary: the pieces of the encoded training text with their counts, uncapped, as
    OpenNMT's preprocess built it from BPE'd data."""
    input:
        f"{DATA_DIR}/bpe{{merges}}/train.{{lang}}",
    output:
        f"{DATA_DIR}/bpe{{merges}}/vocab.{{lang}}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.vocab.{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"
