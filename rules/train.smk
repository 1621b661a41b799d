

rule training_spec:
    """The spec the config asks of one training, as the file it reads (`layout.requested_spec_path`).
    Its params are the spec, so a changed spec reruns this job and the training after it: the
    training's own params would go unread behind a rerun GPU check (docs/architecture.md). Its body
    is part of every training's provenance: a changed body reruns them all."""
    output:
        layout.requested_spec_path(MODEL_DIR),
    params:
        text=lambda w: json.dumps(spec(w)),
    log:
        "logs/train/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.spec.log",
    conda:
        "../envs/text.yaml"
    shell:
        WRITE_PARAM


rule train:
    """Train one experiment on one pair with one seed (checkpointed; a rerun resumes)."""
    input:
        ancient("results/gpu_check.json"),  # waits for the GPU check; a newer or rerun check outdates nothing
        unpack(train_inputs),
        spec_file=layout.requested_spec_path(MODEL_DIR),
    output:
        model=f"{MODEL_DIR}/model.pt",
        # the training history: update(), so Snakemake neither deletes it before a rerun nor after a
        # failed one (it restores it); the job replaces it only once training has ended
        # (workflow_src/train/checkpoints.py)
        metrics=update(layout.metrics_path(MODEL_JOB)),
    params:
        inputs=lambda w, input: cli_args(dict(input.items())),
        out_dir=lambda w, output: os.path.dirname(output.model),
    log:
        "logs/train/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("train"),
        gpu=training_gpu_slots,
    conda:
        "../envs/torch.yaml"
    shell:
        "REPRO_GPU_SLOTS={resources.gpu} python -m workflow_src.train.train {params.inputs} --out-dir {params.out_dir:q} "
        "--threads {threads} > {log:q} 2>&1"
