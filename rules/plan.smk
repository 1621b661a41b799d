rule resolved_config:
    """The resolved config as JSON (rules/common.smk's RESOLVED_CONFIG), for the jobs that read all
    of it: written by a job, so that building the DAG (a dry run too) writes nothing."""
    output:
        RESOLVED_CONFIG,
    log:
        "logs/resolved_config.log",
    run:
        write_text(output[0], RESOLVED_CONFIG_TEXT)
        write_text(log[0], f"wrote {output[0]}\n")


rule plan:
    """The cost plan: measured step times of every model family, times the corpus and the
    schedule: device-hours per table, per paper and in total, and wall hours on N GPUs (jobs
    sharing a device slowed as the GPU check measured it, when it did)."""
    input:
        ancient("results/gpu_check.json"),  # waits for the GPU check; a newer or rerun check outdates nothing
        plan_statistics(),
        config=RESOLVED_CONFIG,
    output:
        csv="results/plan.csv",
        md="results/plan.md",
        jobs="results/plan.jobs.csv",
        families="results/plan.families.csv",
    log:
        "logs/plan.log",
    priority: 100  # before the training it plans
    threads: config["threads"]["train"]
    resources:
        **limits("check"),  # minutes: a few timed steps of each model family
        gpu=PLAN_GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.plan plan --config {input.config:q} --threads {threads} "
        "--gpu-check results/gpu_check.json --out-prefix results/plan > {log:q} 2>&1"


rule plan_vs_actual:
    """The plan's predicted training time of each model beside the time its metrics.jsonl records."""
    input:
        jobs="results/plan.jobs.csv",
        metrics=planned_metrics(),
    output:
        csv="results/plan_vs_actual.csv",
        md="results/plan_vs_actual.md",
        html=report("results/plan_vs_actual.html", caption="../report/plan.rst", category="plan"),
    params:
        code=REPORT_CODE,
    log:
        "logs/plan_vs_actual.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.plan compare --jobs {input.jobs:q} --out-prefix results/plan_vs_actual > {log:q} 2>&1"


rule plan_modelled:
    """The H100 model of the cost plan without timing anything: FLOPs and kernels of every model
    family counted on the CPU (minutes, no GPU, no data), before a run is started. Not part of `all`."""
    input:
        config=RESOLVED_CONFIG,
    output:
        csv="results/plan_modelled.csv",
        md="results/plan_modelled.md",
        jobs="results/plan_modelled.jobs.csv",
        families="results/plan_modelled.families.csv",
    log:
        "logs/plan_modelled.log",
    threads: config["threads"]["train"]
    resources:
        **limits("check"),
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m workflow_src.plan plan --config {input.config:q} --threads {threads} --model-only "
        "--out-prefix results/plan_modelled > {log:q} 2>&1"
