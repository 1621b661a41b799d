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
SLOW = Job("iwslt16", "de-en", "word2word-ce", 1)
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
            {"epoch": 2, "dev_loss": 4.5, "dev_bleu": 30.0, "bigram_dev_loss": 4.0, "best": True},
        ],
    )
    write_metrics(  # above the bigram after epoch 1, below it at the kept epoch: a slow start, not a problem
        tmp_path,
        SLOW,
        [
            {"epoch": 1, "dev_loss": 5.0, "dev_bleu": 10.0, "bigram_dev_loss": 4.0, "best": True},
            {"epoch": 2, "dev_loss": 3.0, "dev_bleu": 30.0, "bigram_dev_loss": 4.0, "best": True},
            {"epoch": 3, "dev_loss": 3.5, "dev_bleu": 29.0, "bigram_dev_loss": 4.0, "best": False},
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
    flagged = write([SOFTMAX, MARGIN, JOINT, SLOW], "test data", tmp_path / "out")
    assert len(flagged) == 3
    assert flagged[0] == (
        f"iwslt16 fr-en word2word-ce seed 1: after epoch 1 its development perplexity ({round(math.exp(5.0), 2)}) "
        f"was not below the target-side bigram's ({round(math.exp(4.0), 2)}), and at its kept epoch 2 still "
        f"{round(math.exp(4.5), 2)}: it learned nothing from the source"
    )
    assert "crowded (median nearest-neighbour cosine 0.96" in flagged[1]
    assert (
        "42.0% of its development tokens have a zero margin loss and a wrong nearest word" in flagged[2]
    )  # the kept epoch's
    page = (tmp_path / "out.md").read_text()
    above_the_table = page.split("| dataset |")[0]
    assert above_the_table.index("3 problem(s) in 4 models") < above_the_table.index("1 slow start(s), not problems")
    assert (
        f"- iwslt16 de-en word2word-ce seed 1: after epoch 1 its development perplexity ({round(math.exp(5.0), 2)}) "
        f"was not below the target-side bigram's ({round(math.exp(4.0), 2)}); at its kept epoch 2 it was "
        f"{round(math.exp(3.0), 2)}\n" in above_the_table
    )
    assert "wmt17 de-en bpe32k-joint512" not in above_the_table
    assert "slow start, not a problem: iwslt16 de-en word2word-ce" in (tmp_path / "out.html").read_text()
    rows = (tmp_path / "out.csv").read_text().splitlines()
    assert len(rows) == 5 and "0.3" in rows[3] and "0.05" in rows[3]
    not_plateaued = [row["not plateaued"] for row in csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text()))]
    assert not_plateaued == [
        "development BLEU 10.0 → 30.0 at epoch 2",
        "",
        "development BLEU 5.0 at epoch 1",
        "",
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
