rule bleu:
    """sacrebleu on detokenized output against the untokenized references, with its signature."""
    input:
        hyp=MODEL + "/test.hyp",
        ref="results/data/{dataset}/{src}-{tgt}/raw/test.{tgt}",
    output:
        MODEL + "/test.bleu.json",
    log:
        "logs/score/{dataset}/{src}-{tgt}/{experiment}/seed{seed}.bleu.log",
    shell:
        "{PY}.score bleu --hyp {input.hyp:q} --ref {input.ref:q} --out {output:q} > {log:q} 2>&1"
