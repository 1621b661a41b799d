"""Reproduce four papers on escaping the softmax bottleneck, from raw data to tables.

    snakemake --cores 8 --resources gpu=1 all                  # the papers' setup (config.yaml)
    snakemake --configfile config.demo.yaml --cores 2 all       # the embedded demo, on CPU
    snakemake results/table1.csv                                # one table and what it needs
"""

from snakemake.utils import min_version

from workflow_src.config_check import check as check_config

min_version("9.0")

# config.yaml unless --configfile names another: the two are never merged, so the demo cannot
# inherit a full-scale setting it forgot to set.
if not config:

    configfile: "config.yaml"


# One line naming the key, the value and what was expected (Snakemake's validate dumps the schema).
check_config(config, workflow.source_path("schemas/config.schema.yaml"))


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/embeddings.smk"
include: "rules/align.smk"
include: "rules/bpe.smk"
include: "rules/train.smk"
include: "rules/lm.smk"
include: "rules/decode.smk"
include: "rules/score.smk"
include: "rules/benchmark.smk"
include: "rules/report.smk"
include: "rules/demo.smk"


rule all:
    input:
        all_targets(),
