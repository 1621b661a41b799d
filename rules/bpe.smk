BPE = "results/data/{dataset}/{src}-{tgt}/bpe{merges}"


rule bpe:
    """A sentencepiece BPE model per language with the configured merges, and the encoded text."""
    input:
        expand("results/data/{dataset}/{src}-{tgt}/tok/{split}.{lang}", split=SPLITS, allow_missing=True),
    output:
        model=BPE + "/{lang}.model",
        encoded=expand(BPE + "/{split}.{lang}", split=SPLITS, allow_missing=True),
    params:
        prefix=BPE + "/{lang}",
        jobs=lambda w, input, output: " ".join(f"{i}:{o}" for i, o in zip(input, output.encoded)),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.{lang}.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.bpe --merges {wildcards.merges} --train {input[0]:q} --model-prefix {params.prefix:q} "
        "--encode {params.jobs} --threads {threads} > {log:q} 2>&1"


rule bpe_counts:
    """A BPE vocabulary: the pieces of the encoded training text with their counts, uncapped, as
    OpenNMT's preprocess built it from BPE'd data."""
    input:
        BPE + "/train.{lang}",
    output:
        BPE + "/vocab.{lang}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/bpe{merges}.vocab.{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"
