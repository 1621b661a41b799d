"""The training-diagnostics page (workflow_src/report/training_diagnostics.py): every configured
translation model gets a row from its metrics.jsonl, and the models that went wrong are listed
above the table, each with what went wrong."""

import csv
import io
import json
import math

import yaml

from tests.conftest import REPO
from workflow_src import layout, plan
from workflow_src.artefacts import Job
from workflow_src.report.training_diagnostics import write

SOFTMAX = Job("iwslt16", "fr-en", "word2word-ce", 1)
MARGIN = Job("iwslt16", "fr-en", "word2emb-fasttext-tied-smp", 1)
JOINT = Job("wmt17", "de-en", "bpe32k-joint512", 1)


def write_metrics(root, job, records):
    path = root / layout.metrics_path(job)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_the_models_that_went_wrong_are_named_above_the_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_metrics(
        tmp_path,
        SOFTMAX,
        [
            {"epoch": 1, "dev_loss": 5.0, "dev_bleu": 10.0, "bigram_dev_loss": 4.0, "best": True},
            {"epoch": 2, "dev_loss": 3.0, "dev_bleu": 30.0, "bigram_dev_loss": 4.0, "best": True},
        ],
    )
    write_metrics(
        tmp_path,
        MARGIN,
        [
            {
                "epoch": 1,
                "dev_loss": 0.2,
                "dev_bleu": 20.0,
                "best": True,
                "table_nn_cosine_median": 0.96,
                "table_neighbours_above_0_9": 8.6,
                "margin_zero_loss_share": 0.94,
                "margin_zero_loss_wrong_share": 0.42,
            },
            {
                "epoch": 2,
                "dev_loss": 0.3,
                "dev_bleu": 15.0,
                "best": False,
                "early_stop": True,
                "table_nn_cosine_median": 0.96,
                "table_neighbours_above_0_9": 8.6,
                "margin_zero_loss_share": 0.95,
                "margin_zero_loss_wrong_share": 0.5,
            },
        ],
    )
    write_metrics(
        tmp_path,
        JOINT,
        [
            {
                "epoch": 1,
                "dev_loss": 2.0,
                "dev_bleu": 5.0,
                "bigram_dev_loss": 4.0,
                "best": True,
                "g_out_mean_abs": 0.3,
                "g_out_bias_rms": 0.1,
                "g_out_shared_share": 0.05,
            }
        ],
    )
    flagged = write([SOFTMAX, MARGIN, JOINT], "test data", tmp_path / "out")
    assert len(flagged) == 3
    assert flagged[0].startswith(
        "iwslt16 fr-en word2word-ce seed 1: after epoch 1 its development perplexity "
        f"({round(math.exp(5.0), 2)}) was not below the target-side bigram's"
    )
    assert "crowded (median nearest-neighbour cosine 0.96" in flagged[1]
    assert (
        "42.0% of its development tokens have a zero margin loss and a wrong nearest word" in flagged[2]
    )  # the kept epoch's
    page = (tmp_path / "out.md").read_text()
    assert page.index("3 problem(s) in 3 models") < page.index("| dataset |")
    assert "wmt17 de-en bpe32k-joint512" not in page.split("| dataset |")[0]
    rows = (tmp_path / "out.csv").read_text().splitlines()
    assert len(rows) == 4 and "0.3" in rows[3] and "0.05" in rows[3]
    not_plateaued = [row["not plateaued"] for row in csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text()))]
    assert not_plateaued == [
        "development BLEU 10.0 → 30.0 at epoch 2",
        "",
        "development BLEU 5.0 at epoch 1",
    ]  # the early stop fired


def test_a_saturated_joint_layer_is_flagged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_metrics(
        tmp_path,
        JOINT,
        [
            {
                "epoch": 1,
                "dev_loss": 2.0,
                "dev_bleu": 5.0,
                "bigram_dev_loss": 4.0,
                "best": True,
                "g_out_mean_abs": 0.97,
                "g_out_bias_rms": 2.2,
                "g_out_shared_share": 0.95,
            }
        ],
    )
    (line,) = write([JOINT], "test data", tmp_path / "out")
    assert "word side g_out(E) is saturated (mean |g_out| 0.97, shared row 0.95" in line


def test_the_page_reads_every_translation_model_the_plan_trains():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    planned = {Job(j.dataset, j.pair, j.experiment, j.seed) for j in plan.planned_jobs(config) if j.kind == "nmt"}
    assert set(layout.translation_models(config)) == planned and len(planned) == 251
