report: "../report/workflow.rst"


rule render_table:
    """A paper table: the paper's numbers beside ours, with signatures and notes."""
    input:
        artefact_inputs,
    output:
        csv="results/{paper}/{artefact}.csv",
        md="results/{paper}/{artefact}.md",
        html=report("results/{paper}/{artefact}.html", caption="../report/artefact.rst", category="{paper}",
                    labels=lambda w: {"artefact": render.report_label(w.artefact)}),
        evidence="results/{paper}/{artefact}.evidence.json",
    params:
        code=REPORT_CODE,
        context=lambda w: render.context_argument(config, w.paper, w.artefact),
        data=lambda w: data_note(w.paper, w.artefact),
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"table\d+",
    log:
        "logs/render/{paper}/{artefact}.log",
    conda:
        "../envs/text.yaml"
    shell:
        RENDER


rule render_figure:
    """A paper figure, as PNG and PDF, its data as CSV and its per-unit evidence (none for a figure
    of values; workflow_src/score/evidence.py)."""
    input:
        artefact_inputs,
    output:
        png=report("results/{paper}/{artefact}.png", caption="../report/artefact.rst", category="{paper}",
                   labels=lambda w: {"artefact": render.report_label(w.artefact)}),
        pdf="results/{paper}/{artefact}.pdf",
        data="results/{paper}/{artefact}.csv",
        evidence="results/{paper}/{artefact}.evidence.json",
    params:
        code=REPORT_CODE,
        context=lambda w: render.context_argument(config, w.paper, w.artefact),
        data=lambda w: data_note(w.paper, w.artefact),
    wildcard_constraints:
        paper=r"[a-z]+",
        artefact=r"figure\d+",
    log:
        "logs/render/{paper}/{artefact}.log",
    conda:
        "../envs/text.yaml"
    shell:
        RENDER


rule vmf_shortcut:
    """results/table1.csv and the like name the vMF paper's artefacts."""
    input:
        "results/vmf/{name}",
    output:
        "results/{name}",
    wildcard_constraints:
        name=r"(table|figure)\d+\.(csv|md|html|png|pdf)",
    log:
        "logs/vmf_shortcut/{name}.log",
    conda:
        "../envs/text.yaml"
    shell:
        "cp {input:q} {output:q} 2> {log:q}"


rule deviations:
    """A paper's deviations ledger (its module's DEVIATIONS), which its tables' footers cite."""
    output:
        csv="results/{paper}/deviations.csv",
        md="results/{paper}/deviations.md",
        html=report("results/{paper}/deviations.html", caption="../report/deviations.rst", category="{paper}",
                    labels={"artefact": "deviations"}),
    params:
        code=REPORT_CODE,
        data=lambda w: data_note(w.paper, "deviations"),
    wildcard_constraints:
        paper=r"[a-z]+",
    log:
        "logs/render/{paper}/deviations.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.report.deviations --paper {wildcards.paper} --data-note {params.data:q} "
        "--out-prefix results/{wildcards.paper}/deviations > {log:q} 2>&1"


rule claims:
    """Each paper's headline claims, decided by the evidence of the tables and figures this run builds."""
    input:
        claims_evidence(),
    output:
        csv="results/claims.csv",
        md="results/claims.md",
        html=report("results/claims.html", caption="../report/claims.rst", category="Claims"),
    params:
        code=REPORT_CODE,
        papers=list(config["papers"]),
        notes=json.dumps({paper: data_note(paper, "claims") for paper in config["papers"]}),
        synthetic="--synthetic-data" if "demo" in config else "",
    log:
        "logs/render/claims.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.report.claims_page --papers {params.papers} --evidence {input:q} --data-notes {params.notes:q} "
        "{params.synthetic} --out-prefix results/claims > {log:q} 2>&1"


rule training_diagnostics:
    """Every translation model's first epoch against the target-side bigram, its target table's
    crowding, its margin loss's uncorrected tokens and its joint layer's saturation; the models
    that went wrong first, loudly."""
    input:
        translation_metrics(),
        config=RESOLVED_CONFIG,  # the models to read: layout.translation_models
    output:
        csv="results/training_diagnostics.csv",
        md="results/training_diagnostics.md",
        html=report("results/training_diagnostics.html", caption="../report/diagnostics.rst", category="Claims"),
    params:
        code=REPORT_CODE,
        data=lambda w: data_note("data", "training diagnostics"),
    log:
        "logs/render/training_diagnostics.log",
    conda:
        "../envs/text.yaml"
    shell:
        "python -m workflow_src.report.training_diagnostics --config {input.config:q} --data-note {params.data:q} "
        "--out-prefix results/training_diagnostics > {log:q} 2>&1; cat {log:q}"
