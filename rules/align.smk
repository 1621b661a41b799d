rule align_dictionary:
    """Word-align the training corpus, symmetrise, keep each source word's most frequent translation."""
    input:
        src=lambda w: training_files(w, "word", "src")["train"],
        tgt=lambda w: training_files(w, "word", "tgt")["train"],
    output:
        "results/align/{dataset}/{src}-{tgt}/dict.tsv",
    params:
        aligner=f"--fast-align {shlex.quote(config['align']['fast_align'])}" if config["align"]["fast_align"] else "",
    resources:
        **limits("align"),
    log:
        "logs/align/{dataset}/{src}-{tgt}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.data.align --src {input.src:q} --tgt {input.tgt:q} --out {output:q} {params.aligner} > {log:q} 2>&1"
