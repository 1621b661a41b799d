rule gpu_check:
    """The GPU check (workflow_src/gpu_check): every model family on the training device against
    a CPU fp32 reference, output dtypes, host syncs per step, train.compile against eager (on CUDA)
    and step times; fails, before any training starts, with one line per failure and the setting
    that avoids it. The first job of `all`: training and the plan take its JSON as an ancient()
    input (`GPU_CHECK`), so they wait for it, and a rerun of the check outdates no model."""
    output:
        json="results/gpu_check.json",
        md="results/gpu_check.md",
    params:
        config=lambda w: json.dumps(config),  # a function: the config holds {src} templates
    log:
        "logs/gpu_check.log",
    priority: 1000  # the first job: everything on the device waits for it
    threads: config["threads"]["train"]
    resources:
        **limits("train"),
        gpu=PLAN_GPU_SLOTS,  # the whole training device: its step times are reported
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.gpu_check --config {params.config:q} --out results "
        "--compile cuda --threads {threads} > {log:q} 2>&1 "
        "|| {{ grep '^GPU CHECK FAILED' {log:q} >&2; echo 'the whole report: {log}' >&2; exit 1; }}"


def gpu_check_first(output):
    """An input function for a rule whose `output` (a pattern of its wildcards) should wait for
    the GPU check: results/gpu_check.json as an ancient() input while `output` does not exist,
    nothing once it does. So a job still to run waits for the check, and a finished model never
    depends on it: neither a newer gpu_check.json (ancient) nor the check's job running again in
    the same invocation (deleted, or `-R gpu_check`, which Snakemake would count as "updated by
    another job" despite ancient()) makes it out of date. (A finished model made out of date by
    something else retrains without waiting for the check; the check's priority still runs it first.)"""

    def inputs(wildcards):
        return [] if os.path.exists(output.format(**wildcards)) else [ancient("results/gpu_check.json")]

    return inputs
