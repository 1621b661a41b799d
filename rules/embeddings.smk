rule train_embeddings:
    """word2vec or fasttext vectors of one language, L2-normalised, in .vec format."""
    input:
        "results/embeddings/{lang}/corpus.txt",
    output:
        "results/embeddings/{lang}/{kind}.vec",
    params:
        settings=lambda w: json.dumps(config["embeddings"][w.kind]),
    resources:
        **limits("embeddings"),
    log:
        "logs/embeddings/{lang}/{kind}.log",
    threads: config["threads"]["embeddings"]
    conda:
        "../envs/embeddings.yaml"
    shell:
        "{PY}.embeddings train --kind {wildcards.kind} --corpus {input:q} --out {output:q} "
        "--params {params.settings:q} --threads {threads} > {log:q} 2>&1"


rule target_table:
    """The target table of a continuous model: specials, then its target vocabulary's vectors."""
    input:
        vectors="results/embeddings/{tgt}/{kind}.vec",
        counts="results/data/{dataset}/{src}-{tgt}/vocab/{tgt}.tsv",
    output:
        "results/data/{dataset}/{src}-{tgt}/emb/{kind}.vec",
    params:
        size=lambda w: config["datasets"][w.dataset]["emb_vocab_size"],
    log:
        "logs/data/{dataset}/{src}-{tgt}/table.{kind}.log",
    conda:
        "../envs/embeddings.yaml"
    shell:
        "{PY}.embeddings table --vectors {input.vectors:q} --vocab {input.counts:q} --size {params.size} "
        "--out {output:q} > {log:q} 2>&1"
