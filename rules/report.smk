report: "../report/workflow.rst"


def data_note(paper, artefact_id):
    """Where an artefact's numbers come from, printed with it (today: every configured corpus)."""
    if "demo" in config:
        return (f"synthetic demo world (config.demo.yaml, seed {config['demo']['seed']}), not the paper's data: "
                "the paper's numbers are shown for the layout only, and differences are not comparable")
    return "; ".join(f"{name}: {d['note']}" if "note" in d else f"{name} from {', '.join(sorted(dataset_hosts(d)))}"
                     for name, d in config["datasets"].items())


def dataset_sources(d):
    """The `sources` keys a data set reads (every direction)."""
    if d["kind"] == "lm":
        return {d["archive"]}
    if d["kind"] == "iwslt":
        return {a["source"].format(src=s, tgt=t) for a in d["archives"] for p in d["pairs"] for s, t in [p.split("-")]}
    return {e["archive"] for splits in d["sources"].values() for es in splits.values() for e in es}


def dataset_hosts(d):
    """Where a data set's files come from: the host (or local directory) of each source's first URL."""
    from urllib.parse import urlparse

    return {urlparse(url).netloc or url.rsplit("/", 1)[0]
            for key in dataset_sources(d) for url in source_urls(key)[:1]}


def artefact_inputs(wildcards):
    a = registry.artefact(wildcards.paper, wildcards.artefact)
    return layout.inputs(a, layout.context(config, wildcards.paper, wildcards.artefact), wildcards.paper, wildcards.artefact)


RENDER = (
    "{PY}.render --paper {wildcards.paper} --artefact {wildcards.artefact} --context {params.context:q} "
    "--data-note {params.data:q} --out-prefix results/{wildcards.paper}/{wildcards.artefact} > {log:q} 2>&1"
)


rule render_table:
    """A paper table: the paper's numbers beside ours, with signatures and notes."""
    input:
        artefact_inputs,
    output:
        csv="results/{paper}/{artefact}.csv",
        md="results/{paper}/{artefact}.md",
        html=report("results/{paper}/{artefact}.html", caption="../report/artefact.rst", category="{paper}",
                    labels={"artefact": "{artefact}"}),
    params:
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
    """A paper figure, as PNG and PDF."""
    input:
        artefact_inputs,
    output:
        png=report("results/{paper}/{artefact}.png", caption="../report/artefact.rst", category="{paper}",
                   labels={"artefact": "{artefact}"}),
        pdf="results/{paper}/{artefact}.pdf",
    params:
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
    shell:
        "cp {input:q} {output:q}"
