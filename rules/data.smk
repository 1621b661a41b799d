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
        md5=lambda w: f"--md5 {config['checksums'][f'{w.mirror}/{w.path}']}" if f"{w.mirror}/{w.path}" in config["checksums"] else "",
    log:
        "logs/download/{mirror}/{path}.log",
    wildcard_constraints:
        mirror="|".join(re.escape(name) for name in config["mirrors"]),
    resources:
        downloads=1,
    shell:
        "{PY}.download --url {params.url:q} --out {output:q} {params.md5} > {log:q} 2>&1"


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
    archives, command = [], f"wmt --pair {p}"
    for split in ("train", "dev", "test"):
        entries = d["sources"][p][split]
        archives += [resource(e["mirror"], e["archive"]) for e in entries]
        command += f" --{split} " + " ".join(
            shlex.quote(f"{resource(e['mirror'], e['archive'])}:{e['source']}:{e['target']}") for e in entries)
    return archives, command


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
    log:
        "logs/data/{dataset}/{src}-{tgt}/extract.log",
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
    log:
        "logs/data/{dataset}/{src}-{tgt}/preprocess.log",
    threads: config["threads"]["preprocess"]
    shell:
        "{PY}.preprocess parallel --pair {wildcards.src}-{wildcards.tgt} --raw-dir {params.raw:q} "
        "--out-dir {params.out:q} --max-len {params.max_len} --threads {threads} > {log:q} 2>&1"


rule word_counts:
    """Training word counts of one side: the word vocabulary, and frequencies for analysis."""
    input:
        TOK + "/train.{lang}",
    output:
        "results/data/{dataset}/{src}-{tgt}/vocab/{lang}.tsv",
    log:
        "logs/data/{dataset}/{src}-{tgt}/vocab.{lang}.log",
    shell:
        "{PY}.vocab --input {input:q} --out {output:q} > {log:q} 2>&1"


rule monolingual_corpus:
    """Tokenized, truecased monolingual text for the target embeddings of one language."""
    input:
        lambda w: monolingual_resource(w.lang),
    output:
        corpus="results/embeddings/{lang}/corpus.txt",
        truecase_model="results/embeddings/{lang}/truecase.{lang}",
    params:
        limit=lambda w: (f"--max-sentences {config['monolingual'][w.lang]['max_sentences']}"
                         if config["monolingual"][w.lang]["max_sentences"] else ""),
    log:
        "logs/embeddings/{lang}/corpus.log",
    threads: config["threads"]["preprocess"]
    shell:
        "{PY}.preprocess monolingual --lang {wildcards.lang} --input {input:q} --out {output.corpus:q} "
        "--truecase-model {output.truecase_model:q} {params.limit} --threads {threads} > {log:q} 2>&1"
