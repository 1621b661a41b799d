rule gpu_check:
    """The GPU check (workflow_src/gpu_check): every model family on the training device against
    a CPU fp32 reference, output dtypes, host syncs per step, peak memory and step times, decoding,
    jobs sharing the device, the configured train.compile; fails, before any training starts,
    with one line per failure and the setting that avoids it. The first job of `all`: training and
    the plan take its JSON as an ancient() input, so they wait for it, and a rerun of the check (a
    newer JSON, `-R gpu_check`, the JSON deleted) outdates no model."""
    input:
        config=RESOLVED_CONFIG,
    output:
        json="results/gpu_check.json",
        md="results/gpu_check.md",
    log:
        "logs/gpu_check.log",
    priority: 1000  # the first job: everything on the device waits for it
    threads: config["threads"]["train"]
    resources:
        **limits("check"),  # minutes, not a training's hours: a partition with a short limit takes it
        gpu=PLAN_GPU_SLOTS,  # the whole training device: its step times are reported
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.gpu_check --config {input.config:q} --out results "
        "--threads {threads} > {log:q} 2>&1 "
        "|| {{ grep ': FAILED: ' {log:q} >&2; echo 'the whole report: {log}' >&2; exit 1; }}"
