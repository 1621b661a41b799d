# -- one truecaser per language, shared by its parallel text and its embedding corpus ----------


rule tokenize_parallel:
    """Moses tokenization of one split of a pair (sacremoses, tokenizer.perl without escaping)."""
    input:
        f"{DATA_DIR}/raw/{{split}}.{{src}}",
        f"{DATA_DIR}/raw/{{split}}.{{tgt}}",
    output:
        temp(f"{DATA_DIR}/tokenized/{{split}}.{{src}}"),
        temp(f"{DATA_DIR}/tokenized/{{split}}.{{tgt}}"),
    params:
        raw=lambda w, input: os.path.dirname(input[0]),
        out=lambda w, output: os.path.dirname(output[0]),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/tokenize.{split}.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.preprocess tokenize-parallel --pair {wildcards.src}-{wildcards.tgt} --raw-dir {params.raw:q} "
        "--out-dir {params.out:q} --splits {wildcards.split} --threads {threads} > {log:q} 2>&1"


rule tokenize_monolingual:
    """The monolingual corpus `monolingual.<lang>.use` names, read and tokenized (blank lines dropped)."""
    input:
        lambda w: monolingual_inputs(w.lang)[0],
    output:
        tokenized=temp("results/embeddings/{lang}/tokenized.txt"),
        stats="results/embeddings/{lang}/tokenized.txt.stats.json",
    params:
        sources=lambda w: monolingual_inputs(w.lang)[1],
        limit=lambda w: (f"--max-sentences {config['monolingual'][w.lang]['max_sentences']}"
                         if config["monolingual"][w.lang]["max_sentences"] else ""),
    resources:
        **limits("preprocess"),
    log:
        "logs/embeddings/{lang}/tokenize.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.preprocess tokenize-monolingual --lang {wildcards.lang} --input {params.sources} "
        "--out {output.tokenized:q} {params.limit} --threads {threads} > {log:q} 2>&1"


rule truecase_model:
    """truecase.perl's model of one language, learnt once and used by all its text."""
    input:
        lambda w: truecaser_text(w.lang),
    output:
        "results/truecase/{lang}.model",
    resources:
        **limits("preprocess"),
    log:
        "logs/truecase/{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.preprocess truecaser --input {input:q} --out {output:q} > {log:q} 2>&1"


# -- target embeddings -------------------------------------------------------------------------
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
        "python -m workflow_src.data.embeddings train --kind {wildcards.kind} --corpus {input:q} --out {output:q} "
        "--params {params.settings:q} --threads {threads} > {log:q} 2>&1"


rule target_table:
    """The target table of a continuous model (specials, then its target vocabulary's vectors),
    and the share of the target vocabulary without a vector."""
    input:
        vectors="results/embeddings/{tgt}/{kind}.vec",
        counts=lambda w: training_files(w, "word", "tgt")["vocab"],
    output:
        table=f"{DATA_DIR}/emb/{{kind}}.vec",
        coverage=f"{DATA_DIR}/emb/{{kind}}.vec.coverage.json",
    params:
        size=lambda w: config["datasets"][w.dataset]["emb_vocab_size"],
    log:
        "logs/data/{dataset}/{src}-{tgt}/table.{kind}.log",
    conda:
        "../envs/embeddings.yaml"
    shell:
        "python -m workflow_src.data.embeddings table --vectors {input.vectors:q} --vocab {input.counts:q} --size {params.size} "
        "--out {output.table:q} > {log:q} 2>&1"
