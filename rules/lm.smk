rule lm_partition:
    """One of two equal line ranges of a language-modelling corpus's training text (tying Table 2)."""
    input:
        expand(f"{layout.lm_data_dir('{corpus}')}/{{split}}.txt", split=LM_SPLITS, allow_missing=True),
    output:
        expand(f"{layout.lm_data_dir('{corpus}part{part}')}/{{split}}.txt", split=LM_SPLITS, allow_missing=True),
    params:
        corpus=lambda w, input: os.path.dirname(input[0]),
        out=lambda w, output: os.path.dirname(output[0]),
    wildcard_constraints:
        corpus="|".join(datasets_of_kind("lm")) or "^$",
        part=r"[12]",
    log:
        "logs/data/{corpus}part{part}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.lm_partition --corpus {params.corpus:q} --part {wildcards.part} --parts 2 "
        "--out-dir {params.out:q} > {log:q} 2>&1"


rule lm_training_spec:
    """The spec the config asks of one language model's training: as rules/train.smk's training_spec."""
    output:
        layout.requested_spec_path(LM_DIR),
    params:
        text=lambda w: json.dumps(lm_specs.resolve_lm_spec(config, w.dataset, w.experiment, int(w.seed))),
    log:
        "logs/lm/{dataset}/{experiment}/seed{seed}.spec.log",
    conda:
        "../envs/text.yaml"
    shell:
        WRITE_PARAM


rule train_lm:
    """Train one language model of the tying paper on one corpus with one seed (checkpointed)."""
    input:
        ancient("results/gpu_check.json"),  # waits for the GPU check; a newer or rerun check outdates nothing
        unpack(lm_corpus),
        spec_file=layout.requested_spec_path(LM_DIR),
    output:
        model=f"{LM_DIR}/model.pt",
        metrics=update(f"{LM_DIR}/metrics.jsonl"),  # kept: as in rules/train.smk
        perplexity=f"{LM_DIR}/perplexity.json",
    params:
        inputs=lambda w, input: cli_args(dict(input.items())),
        out_dir=lambda w, output: os.path.dirname(output.model),
    log:
        "logs/lm/{dataset}/{experiment}/seed{seed}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("train"),
        gpu=GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.train.train_lm {params.inputs} --out-dir {params.out_dir:q} "
        "--threads {threads} > {log:q} 2>&1"


rule lm_phrases:
    """The phrases (and the words that follow them) a next-word table asks about, from the registry."""
    output:
        "results/{paper}/{artefact}.phrases.tsv",
    params:
        lines=lambda w: " ".join(shlex.quote(f"{phrase}\t{following}")
                                 for phrase, following in registry.artefact(w.paper, w.artefact).phrases),
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"table\d+",
    log:
        "logs/{paper}/{artefact}.phrases.log",
    conda:
        "../envs/text.yaml"
    shell:
        "printf '%s\\n' {params.lines} > {output:q} 2> {log:q}"


rule lm_next_words:
    """A language model's top next-word predictions after each phrase of a table (read in the
    corpus's text where the table says so), and the per-block sums of the probability it gives the
    table's `mean_probability_of` words over that text."""
    input:
        model=f"{LM_DIR}/model.pt",
        phrases="results/{paper}/{artefact}.phrases.tsv",
        context=lambda w: (f"{layout.lm_data_dir(w.dataset)}/{registry.artefact(w.paper, w.artefact).context}.txt"
                           if registry.artefact(w.paper, w.artefact).context else []),
    output:
        predictions=layout.next_words_path(LM_JOB, "{paper}", "{artefact}"),
        mean_probability=layout.mean_probability_path(LM_JOB, "{paper}", "{artefact}"),
    params:
        top=lambda w: registry.artefact(w.paper, w.artefact).top,
        context=lambda w, input: f"--context {shlex.quote(str(input.context))}" if input.context else "",
        words=lambda w: " ".join(shlex.quote(word) for word in registry.artefact(w.paper, w.artefact).mean_probability_of),
        block=evidence.BLOCK_TOKENS,
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"table\d+",
    log:
        "logs/lm/{dataset}/{experiment}/seed{seed}.{paper}-{artefact}.next_words.log",
    resources:
        **limits("default"),
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m workflow_src.decode.lm_predict --model {input.model:q} --phrases {input.phrases:q} --top {params.top} {params.context} "
        "--mean-probability-of {params.words} --block-tokens {params.block} --mean-probability-out {output.mean_probability:q} --out {output.predictions:q} > {log:q} 2>&1"
