rule benchmark_artefact:
    """Model size and training speed behind an artefact (vMF Table 4, Figure 1 left, joint Table 4)."""
    output:
        layout.benchmark_path("{paper}", "{artefact}"),
    params:
        kind=lambda w: benchmark_kind(w.paper, w.artefact),
        experiments=lambda w: benchmark_experiments(w.paper, w.artefact),
        # an experiment's architecture (the joint paper's 2 x 512) replaces the benchmark's sizes
        settings=benchmark_settings(architectures=config.get("architectures", {})),
    wildcard_constraints:
        artefact=r"(table|figure)\d+",
    log:
        "logs/benchmarks/{paper}/{artefact}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("train"),
        gpu=BENCHMARK_GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.plan.benchmark {params.kind} --experiments {params.experiments} --settings {params.settings:q} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"


rule benchmark_extra:
    """log C_m in torch against scipy's round trip; decoding speed of continuous and softmax models."""
    output:
        layout.benchmark_path("vmf", "{kind}"),
    params:
        settings=benchmark_settings(),
        experiments="word2word-ce word2emb-fasttext-tied-nllvmf_reg1reg2",
    wildcard_constraints:
        kind="log-cm|decoding",
    log:
        "logs/benchmarks/vmf/{kind}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("train"),
        gpu=BENCHMARK_GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.plan.benchmark {wildcards.kind} --experiments {params.experiments} --settings {params.settings:q} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"


rule benchmark_data:
    """Lines per second and peak memory of extraction, tokenisation, truecasing and BPE on a
    generated corpus of benchmarks.data_lines lines (not part of `all`)."""
    output:
        "results/benchmarks/data.json",
    params:
        lines=lambda w: data_benchmark_lines(),
    log:
        "logs/benchmarks/data.log",
    threads: config["threads"]["preprocess"]
    resources:
        **limits("preprocess"),
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.plan.data_benchmark --lines {params.lines} --threads {threads} --out {output:q} > {log:q} 2>&1"
