RAW = "results/data/{dataset}/{src}-{tgt}/raw"
TOK = "results/data/{dataset}/{src}-{tgt}/tok"
SPLITS = ["train", "dev", "test"]


rule download:
    """Fetch one source file (resumable, retried, md5-checked when a checksum is configured)."""
    output:
        "resources/{mirror}/{path}",
    input:
        local_mirror_file,
    params:
        url=source_url,
        retry=f"--retries {config['download']['retries']} --backoff {config['download']['backoff']}",
        md5=lambda w: f"--md5 {config['checksums'][f'{w.mirror}/{w.path}']}" if f"{w.mirror}/{w.path}" in config["checksums"] else "",
    log:
        "logs/download/{mirror}/{path}.log",
    wildcard_constraints:
        mirror="|".join(re.escape(name) for name in config["mirrors"]),
    resources:
        downloads=1,
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.download --url {params.url:q} --out {output:q} {params.md5} {params.retry} > {log:q} 2>&1"


def extraction(wildcards):
    """(archives, the extraction tool and its arguments) of one pair of one data set."""
    d = config["datasets"][wildcards.dataset]
    p = pair(wildcards)
    if d["kind"] == "iwslt":
        archives = iwslt_archives(wildcards.dataset, p)
        command = (f"iwslt --pair {p} --archives {' '.join(shlex.quote(a) for a in archives)} "
                   f"--dev-sets {' '.join(d['dev_sets'])} --test-sets {' '.join(d['test_sets'])}")
        return archives, command
    if p not in d["sources"]:
        raise ValueError(f"datasets.{wildcards.dataset}.sources: no entry for the pair {p}")
    local = {split: [{**{k: v for k, v in e.items() if k != "mirror"}, "archive": resource(e["mirror"], e["archive"])}
                     for e in entries] for split, entries in d["sources"][p].items()}
    archives = sorted({e["archive"] for entries in local.values() for e in entries})
    return archives, f"wmt --pair {p} --sources {shlex.quote(json.dumps(local))}"


rule extract:
    """Plain parallel text from a data set's archives: train, dev and test (iwslt or wmt layout)."""
    input:
        lambda w: extraction(w)[0],
    output:
        expand(RAW + "/{split}.{src}", split=SPLITS, allow_missing=True),
        expand(RAW + "/{split}.{tgt}", split=SPLITS, allow_missing=True),
    params:
        command=lambda w: extraction(w)[1],
        out=RAW,
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/extract.log",
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.{params.command} --out-dir {params.out:q} > {log:q} 2>&1"


rule preprocess_parallel:
    """Moses tokenization and truecasing (sacremoses); training pairs over max_len dropped."""
    input:
        expand(RAW + "/{split}.{src}", split=SPLITS, allow_missing=True),
        expand(RAW + "/{split}.{tgt}", split=SPLITS, allow_missing=True),
    output:
        expand(TOK + "/{split}.{src}", split=SPLITS, allow_missing=True),
        expand(TOK + "/{split}.{tgt}", split=SPLITS, allow_missing=True),
        truecase_models=[TOK + "/truecase.{src}", TOK + "/truecase.{tgt}"],
        stats=TOK + "/stats.json",
    params:
        raw=RAW,
        out=TOK,
        max_len=lambda w: config["datasets"][w.dataset]["max_len"],
        max_ratio=lambda w: (f"--max-ratio {config['datasets'][w.dataset]['max_ratio']}"
                             if config["datasets"][w.dataset]["max_ratio"] else ""),
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/{src}-{tgt}/preprocess.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.preprocess parallel --pair {wildcards.src}-{wildcards.tgt} --raw-dir {params.raw:q} "
        "--out-dir {params.out:q} --max-len {params.max_len} {params.max_ratio} --threads {threads} > {log:q} 2>&1"


rule word_counts:
    """Training word counts of one side: the word vocabulary, and frequencies for analysis."""
    input:
        TOK + "/train.{lang}",
    output:
        "results/data/{dataset}/{src}-{tgt}/vocab/{lang}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/vocab.{lang}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"


rule monolingual_corpus:
    """Tokenized, truecased monolingual text for the target embeddings of one language."""
    input:
        lambda w: monolingual_resource(w.lang),
    output:
        corpus="results/embeddings/{lang}/corpus.txt",
        stats="results/embeddings/{lang}/corpus.txt.stats.json",
        truecase_model="results/embeddings/{lang}/truecase.{lang}",
    params:
        limit=lambda w: (f"--max-sentences {config['monolingual'][w.lang]['max_sentences']}"
                         if config["monolingual"][w.lang]["max_sentences"] else ""),
    resources:
        **limits("preprocess"),
    log:
        "logs/embeddings/{lang}/corpus.log",
    threads: config["threads"]["preprocess"]
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.preprocess monolingual --lang {wildcards.lang} --input {input:q} --out {output.corpus:q} "
        "--truecase-model {output.truecase_model:q} {params.limit} --threads {threads} > {log:q} 2>&1"


def datasets_of_kind(kind):
    return [name for name, d in config["datasets"].items() if d["kind"] == kind]


rule extract_lm:
    """A language-modelling corpus (PTB, WikiText-2): its splits as plain text, and statistics."""
    input:
        lambda w: resource(config["datasets"][w.dataset]["mirror"], config["datasets"][w.dataset]["archive"]),
    output:
        expand("results/data/{dataset}/{split}.txt", split=["train", "valid", "test"], allow_missing=True),
        stats="results/data/{dataset}/stats.json",
    params:
        members=lambda w: " ".join(shlex.quote(f"{split}:{member}")
                                   for split, member in config["datasets"][w.dataset]["members"].items()),
    wildcard_constraints:
        dataset="|".join(datasets_of_kind("lm")) or "^$",
    resources:
        **limits("preprocess"),
    log:
        "logs/data/{dataset}/extract.log",
    conda:
        "../envs/text.yaml"
    shell:
        "{PY}.lm_data --archive {input:q} --member {params.members} --out-dir results/data/{wildcards.dataset} > {log:q} 2>&1"


def statistics_corpora():
    """[kind, corpus, pair or language, stats.json] of every configured corpus."""
    corpora = []
    for name, d in config["datasets"].items():
        if d["kind"] == "lm":
            corpora.append(["lm", name, "-", f"results/data/{name}/stats.json"])
        else:
            corpora += [["parallel", name, p, f"results/data/{name}/{p}/tok/stats.json"] for p in d["pairs"]]
            corpora += [[f"bpe{merges}", name, p, f"results/data/{name}/{p}/bpe{merges}/vocab.{lang}.tsv"]
                        for merges in d.get("bpe_sizes", {}).values() for p in d["pairs"] for lang in p.split("-")]
    corpora += [["monolingual", "news crawl", lang, f"results/embeddings/{lang}/corpus.txt.stats.json"]
                for lang in config["monolingual"]]
    return corpora


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
        "{PY}.statistics --corpora {params.corpora:q} --data-note {params.data:q} "
        "--out-prefix results/data_statistics > {log:q} 2>&1"
