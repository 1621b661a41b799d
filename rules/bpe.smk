

rule bpe:
    """A sentencepiece BPE model per language with the configured merges, and the encoded text."""
    input:
        expand("results/data/{dataset}/{src}-{tgt}/tok/{split}.{lang}", split=SPLITS, allow_missing=True),
    output:
        model="results/data/{dataset}/{src}-{tgt}/bpe{merges}/{lang}.model",
        encoded=expand("results/data/{dataset}/{src}-{tgt}/bpe{merges}/{split}.{lang}", split=SPLITS, allow_missing=True),
    params:
        prefix=lambda w, output: output.model.removesuffix(".model"),
        train=lambda w, input: input[0],
        jobs=lambda w, input, output: " ".join(f"{i}:{o}" for i, o in zip(input, output.encoded)),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.{lang}.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.bpe --merges {wildcards.merges} --train {params.train:q} --model-prefix {params.prefix:q} "
        "--encode {params.jobs} --threads {threads} > {log:q} 2>&1"


rule bpe_counts:
    """A BPE vocabulary: the pieces of the encoded training text with their counts, uncapped, as
    OpenNMT's preprocess built it from BPE'd data."""
    input:
        "results/data/{dataset}/{src}-{tgt}/bpe{merges}/train.{lang}",
    output:
        "results/data/{dataset}/{src}-{tgt}/bpe{merges}/vocab.{lang}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.vocab.{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"
