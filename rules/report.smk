report: "../report/workflow.rst"


def data_note(dataset):
    if "demo" in config:
        return (f"synthetic demo world (config.demo.yaml, seed {config['demo']['seed']}), not {dataset}: "
                "the paper's numbers are shown for the layout only, and differences are not comparable")
    return f"{dataset} from mirror {config['mirrors'][config['datasets'][dataset]['mirror']]}"


rule render_table:
    """One paper table: the paper's numbers, ours, the differences, the metric's signature."""
    input:
        lambda w: table_scores(w.paper, w.table),
    output:
        csv="results/{paper}/{table}.csv",
        md="results/{paper}/{table}.md",
        html=report("results/{paper}/{table}.html", caption="../report/table.rst", category="{paper}", labels={"table": "{table}"}),
    params:
        jobs=lambda w: json.dumps([[j.dataset, j.pair, j.experiment, j.seed] for j in layout.table_jobs(config, w.paper, w.table)]),
        data=lambda w: data_note(registry.table(w.paper, w.table).dataset),
    wildcard_constraints:
        paper=r"[a-z]+",
        table=r"table\d+",
    log:
        "logs/render/{paper}/{table}.log",
    shell:
        "{PY}.render --paper {wildcards.paper} --table {wildcards.table} --jobs {params.jobs:q} "
        "--data-note {params.data:q} --out-csv {output.csv:q} --out-md {output.md:q} "
        "--out-html {output.html:q} > {log:q} 2>&1"


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
