rule decode:
    """Decode the test set (greedy / nearest neighbour, or beam search), <unk> replaced, detokenized."""
    input:
        model=f"{MODEL_DIR}/model.pt",
        src=lambda w: side_files(w, "src")["test"],
        src_words=f"{DATA_DIR}/tok/test.{{src}}",
        dictionary="results/align/{dataset}/{src}-{tgt}/dict.tsv",
    output:
        tok=HYPOTHESIS_TOK,
        detok=HYPOTHESIS,
    params:
        device=config["train"]["device"],
        batch_size=config["decode"]["batch_size"],
        beam=lambda w: 1 if w.search == "greedy" else int(w.search.removeprefix("beam")),
    log:
        "logs/decode/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{search}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("decode"),
        gpu=GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m workflow_src.decode.decode --model {input.model:q} --src {input.src:q} --src-words {input.src_words:q} "
        "--dictionary {input.dictionary:q} --tgt-lang {wildcards.tgt} --out-tok {output.tok:q} "
        "--out {output.detok:q} --device {params.device} --batch-size {params.batch_size} "
        "--beam {params.beam} --threads {threads} > {log:q} 2>&1"
