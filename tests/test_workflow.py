"""The Snakemake DAG of the full configuration: its dry run plans every job, a bad key is named;
a dry run writes nothing."""

import hashlib
import json
import re

import yaml

from tests.conftest import REPO, snakemake
from workflow_src import artefacts, layout, registry
from workflow_src.papers import tying


def test_full_config_dry_run_builds_every_training_job(tmp_path, full_config_outputs):
    result = snakemake(
        tmp_path, "--configfile", str(REPO / "config.yaml"), "--cores", "8", "--resources", "gpu=1", "-n", "all"
    )
    assert "This was a dry-run" in result.stdout
    planned = full_config_outputs  # planned_outputs of config.yaml, shared with tests/test_plan.py
    table = registry.artefact("vmf", "table1")
    for experiment in table.row_experiments():
        for pair in ("fr-en", "de-en", "en-fr"):
            assert layout.model_dir("iwslt16", pair, experiment, 1) + "/model.pt" in planned
            assert layout.score_path("iwslt16", pair, experiment, 1) in planned
    assert layout.score_path("iwslt16", "fr-en", "bpe2bpe-ce", 1, search="beam5") in planned
    assert "results/benchmarks/vmf/table4.json" in planned and "results/vmf/figure2.png" in planned
    assert "resources/iwslt16/2016-01.tgz" in planned
    assert "resources/wit3/2017-01-trnted/texts/fr/en/fr-en.tgz" in planned  # tst2015
    assert "resources/wit3/2017-01-ted-test/texts/en/fr/en-fr.tgz" in planned  # tst2016's fr-en references
    assert "resources/wmt13/training-parallel-europarl-v7.tgz" in planned
    assert "resources/wmt15/wiki-titles.tgz" in planned
    assert layout.score_path("wmt16", "de-en", "bpe2emb-fasttext-tied-nllvmf_reg1reg2", 1, metric="meteor") in planned
    assert "results/embeddings/en/fasttext.vec" in planned
    assert not any(p.startswith(("demo/", "mirror/")) for p in planned)
    # the syn-margin paper: 4 seeds per system, every margin of the grid, the vMF paper's jobs shared
    for row in registry.artefact("synmargin", "table1").rows:
        for seed in (1, 2, 3, 4):
            for pair in ("fr-en", "de-en"):
                for gamma in (0.2, 0.5, 0.8) if row.tune else (None,):
                    name = registry.variant(row.experiment, "gamma", gamma) if row.tune else row.experiment
                    assert layout.hypothesis_path("iwslt16", pair, name, seed) in planned
    assert (
        layout.neighbours_path(artefacts.Job("iwslt16", "fr-en", "word2emb-fasttext-tied-smp@gamma=0.8", 4)) in planned
    )
    assert "results/benchmarks/synmargin/figure2.json" in planned and "results/synmargin/table2.md" in planned
    # the tying paper: every size and variant on PTB, all but large on WikiText-2, small on its halves;
    # AL models once per γ of appendix A's range for the corpus, and never at the untuned lm.gamma
    gammas = {"ptb": (0.5, 0.6, 0.7, 0.8), "wikitext2": (1.0, 1.25, 1.5)}
    for experiment in set(registry.language_models()) - {tying.SUBSPACE}:  # Figure 1's: below
        for corpus in ("ptb", "wikitext2", "wikitext2part1", "wikitext2part2"):
            expected = corpus == "ptb" or (corpus == "wikitext2" and "large" not in experiment) or "small" in experiment
            augmented = registry.language_model(experiment).augmented
            names = (
                [registry.variant(experiment, "gamma", g) for g in gammas[corpus[:9]]] if augmented else [experiment]
            )
            for name in names:
                path = layout.lm_dir(artefacts.Job(corpus, "lm", name, 1)) + "/perplexity.json"
                assert (path in planned) == expected, path
            if augmented:
                assert layout.lm_dir(artefacts.Job(corpus, "lm", experiment, 1)) + "/perplexity.json" not in planned
    assert "results/tying/figure2.png" in planned and "results/tying/table3.csv" in planned
    assert "results/lm/ptb/lm-large-real@gamma=0.7/seed1/tying-table4.next_words.json" in planned
    for panel in registry.artefact("tying", "figure1").panels:  # every point of both sweeps, 10 runs each
        for value in panel.values:
            for seed in range(1, 11):
                name = registry.variant(panel.model, panel.parameter, value)
                assert layout.lm_dir(artefacts.Job("ptb", "lm", name, seed)) + "/perplexity.json" in planned
    assert "results/tying/figure1.pdf" in planned
    # the joint paper: three models and every candidate d_j per vocabulary and direction, scored on
    # tokenized text; the ablations and depths on De-En 32K
    for row in registry.artefact("joint", "table2").rows:
        for candidate in row.tune or (row.experiment,):
            for pair in ("en-fi", "fi-en", "en-de", "de-en"):
                assert layout.score_path("wmt17", pair, candidate, 1, "beam5", "bleu_tok") in planned
    for table_id in ("table3", "table5"):
        for experiment in registry.artefact("joint", table_id).row_experiments():
            assert layout.hypothesis_path("wmt17", "de-en", experiment, 1, "beam5", tokenized=True) in planned
    assert (
        layout.representations_path(artefacts.Job("wmt17", "de-en", "bpe32k-joint512", 1), "joint", "table1") in planned
    )
    assert "results/benchmarks/joint/table4.json" in planned
    assert "results/joint/figure2.png" in planned
    # both directions of a WMT17 corpus read one extraction, tokenisation and BPE of its training
    # text, in the folder of the direction `pairs` names first; evaluation sets stay per direction
    assert (
        "results/data/wmt17/en-fi/bpe128000/train.fi" in planned
        and "results/data/wmt17/fi-en/bpe128000/test.fi" in planned
    )
    assert not any(p.startswith("results/data/wmt17/fi-en/") and "/train." in p for p in planned)
    # Figure 3: METEOR by frequency bin of every model it shows (each candidate d_j), both directions of de-en
    for pair in ("en-de", "de-en"):
        for experiment in ("bpe32k-nmt", "bpe32k-tied", "bpe32k-joint512", "bpe32k-joint2048", "bpe32k-joint4096"):
            job = artefacts.Job("wmt17", pair, experiment, 1)
            assert layout.meteor_bins_path(job, "joint", "figure3", "beam5") in planned
    assert "results/joint/figure3.png" in planned


def test_bad_config_key_is_named(tmp_path):
    text = (REPO / "config.yaml").read_text()
    config = text.replace("\ntrain:\n", "\ntrain:\n  batch_sise: 64\n", 1)
    assert config != text
    (tmp_path / "bad.yaml").write_text(config)
    result = snakemake(tmp_path, "--configfile", str(tmp_path / "bad.yaml"), "-n", "all", check=False)
    assert result.returncode != 0
    assert "batch_sise" in result.stdout + result.stderr


def test_a_dry_run_writes_nothing_and_a_job_writes_the_resolved_config(tmp_path):
    """Building the DAG writes no file (`-n` included): the resolved config that the GPU check, the
    plans and the diagnostics read is the output of a job (rule resolved_config), named by the
    hash of what it holds."""
    demo = REPO / "config.demo.yaml"
    result = snakemake(tmp_path, "--configfile", str(demo), "-n", "all")
    assert [p for p in tmp_path.rglob("*") if p.is_file() and ".snakemake" not in p.relative_to(tmp_path).parts] == []
    path = re.search(r"rule resolved_config:\n\s+output: (results/config/[0-9a-f]+\.json)\n", result.stdout).group(1)
    snakemake(tmp_path, "--configfile", str(demo), "--cores", "1", path)
    text = (tmp_path / path).read_text()
    assert path == f"results/config/{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    assert json.loads(text)["papers"] == yaml.safe_load(demo.read_text())["papers"]
