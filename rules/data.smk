rule download:
    """Fetch one source: its mirrors in order, the first that is the archive it claims and matches
    its md5 wins (resumable, retried); the log names the URL used."""
    output:
        "resources/{source}",
    input:
        local_mirror_files,
    params:
        urls=lambda w: " ".join(f"--url {shlex.quote(url)}" for url in source_urls(w.source)),
        check=lambda w: (f"--md5 {source(w.source)['md5']}" if "md5" in source(w.source)
                         else f"--no-md5-reason {shlex.quote(source(w.source)['no_md5_reason'])}"),
        local=" ".join(f"--local-copy {shlex.quote(d)}" for d in config["download"].get("local_copies", [])),
        retry=f"--retries {config['download']['retries']} --backoff {config['download']['backoff']}",
    log:
        "logs/download/{source}.log",
    wildcard_constraints:
        source="|".join(re.escape(key) for key in config["sources"]) or "^$",
    resources:
        downloads=1,
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.download --out {output:q} {params.urls} {params.check} {params.local} {params.retry} > {log:q} 2>&1"


rule extract_train:
    """A pair's training text from its data set's archives (iwslt or wmt layout), with where it came
    from and the undecodable lines counted; both directions of a corpus use one (layout.training_pair)."""
    input:
        lambda w: extraction(w, ["train"])[0],
    output:
        f"{DATA_DIR}/raw/train.{{src}}",
        f"{DATA_DIR}/raw/train.{{tgt}}",
        stats=f"{DATA_DIR}/raw/train.stats.json",
    params:
        command=lambda w: extraction(w, ["train"])[1],
        out=lambda w, output: os.path.dirname(output.stats),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/extract.train.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.{params.command} --out-dir {params.out:q} --stats {output.stats:q} > {log:q} 2>&1"


rule extract_evaluation:
    """A direction's development and test sets, with where they came from."""
    input:
        lambda w: extraction(w, ["dev", "test"])[0],
    output:
        expand(f"{DATA_DIR}/raw/{{split}}.{{src}}", split=["dev", "test"], allow_missing=True),
        expand(f"{DATA_DIR}/raw/{{split}}.{{tgt}}", split=["dev", "test"], allow_missing=True),
        stats=f"{DATA_DIR}/raw/evaluation.stats.json",
    params:
        command=lambda w: extraction(w, ["dev", "test"])[1],
        out=lambda w, output: os.path.dirname(output.stats),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/extract.evaluation.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.{params.command} --out-dir {params.out:q} --stats {output.stats:q} > {log:q} 2>&1"


rule preprocess_parallel:
    """One split truecased with each language's shared model (sacremoses, use_known); training pairs
    over max_len words (when max_len_unit is word; pieces are limited at training) or max_ratio dropped."""
    input:
        f"{DATA_DIR}/tokenized/{{split}}.{{src}}",
        f"{DATA_DIR}/tokenized/{{split}}.{{tgt}}",
        truecase_src="results/truecase/{src}.model",
        truecase_tgt="results/truecase/{tgt}.model",
    output:
        f"{DATA_DIR}/tok/{{split}}.{{src}}",
        f"{DATA_DIR}/tok/{{split}}.{{tgt}}",
        stats=f"{DATA_DIR}/tok/stats.{{split}}.json",
    params:
        tokenized=lambda w, input: os.path.dirname(input[0]),
        out=lambda w, output: os.path.dirname(output.stats),
        max_len=lambda w: (f"--max-len {config['datasets'][w.dataset]['max_len']}"
                           if config["datasets"][w.dataset]["max_len_unit"] == "word" else ""),
        max_ratio=lambda w: (f"--max-ratio {config['datasets'][w.dataset]['max_ratio']}"
                             if config["datasets"][w.dataset]["max_ratio"] else ""),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/preprocess.{split}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.preprocess parallel --pair {wildcards.src}-{wildcards.tgt} --tokenized-dir {params.tokenized:q} "
        "--out-dir {params.out:q} --truecase-model-src {input.truecase_src:q} --truecase-model-tgt {input.truecase_tgt:q} "
        "--splits {wildcards.split} --stats {output.stats:q} {params.max_len} {params.max_ratio} > {log:q} 2>&1"


rule word_counts:
    """Training word counts of one side: the word vocabulary, and frequencies for analysis."""
    input:
        f"{DATA_DIR}/tok/train.{{lang}}",
    output:
        f"{DATA_DIR}/vocab/{{lang}}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/vocab.{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"


rule monolingual_corpus:
    """The embedding corpus of one language: its tokenized monolingual text, truecased with the
    language's shared model (the one its parallel text uses)."""
    input:
        tokenized="results/embeddings/{lang}/tokenized.txt",
        reading="results/embeddings/{lang}/tokenized.txt.stats.json",
        truecase_model="results/truecase/{lang}.model",
    output:
        corpus="results/embeddings/{lang}/corpus.txt",
        stats="results/embeddings/{lang}/corpus.txt.stats.json",
    resources:
        **limits("preprocess"),
    log:
        "logs/embeddings/{lang}/corpus.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.preprocess monolingual --lang {wildcards.lang} --input {input.tokenized:q} "
        "--truecase-model {input.truecase_model:q} --out {output.corpus:q} > {log:q} 2>&1"


rule extract_lm:
    """A language-modelling corpus (PTB, WikiText-2): its splits as plain text, and statistics."""
    input:
        lambda w: resource(config["datasets"][w.dataset]["archive"]),
    output:
        expand(f"{LM_DATA_DIR}/{{split}}.txt", split=LM_SPLITS, allow_missing=True),
        stats=f"{LM_DATA_DIR}/stats.json",
    params:
        members=lambda w: " ".join(shlex.quote(f"{split}:{member}")
                                   for split, member in config["datasets"][w.dataset]["members"].items()),
        out=lambda w, output: os.path.dirname(output.stats),
    wildcard_constraints:
        dataset="|".join(datasets_of_kind("lm")) or "^$",
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/extract.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.lm_data --archive {input:q} --member {params.members} --out-dir {params.out:q} "
        "> {log:q} 2>&1"


rule data_statistics:
    """Sentences, tokens and vocabularies of every prepared corpus beside what the papers state."""
    input:
        [path for *_, path in statistics_corpora()],
    output:
        csv="results/data_statistics.csv",
        md="results/data_statistics.md",
        html=report("results/data_statistics.html", caption="../report/statistics.rst", category="data"),
    params:
        corpora=json.dumps(statistics_corpora()),
        data=lambda w: data_note("data", "statistics"),
    log:
        "logs/data/statistics.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.statistics --corpora {params.corpora:q} --data-note {params.data:q} "
        "--out-prefix results/data_statistics > {log:q} 2>&1"
