"""workflow_src/plan/benchmark.py on the CPU at tiny sizes: training steps run in config
`train.precision` and decoding in fp32 (as decode jobs), every result is stamped with where, in what
and when it ran, and vMF Table 4's rows carry target tokens per second."""

import json
import statistics
from datetime import datetime, timedelta, timezone

import pytest
import torch

from workflow_src.plan import benchmark

SETTINGS = {
    "device": "cpu",
    "encoder_layers": 1,
    "decoder_layers": 1,
    "hidden": 16,
    "src_embedding": 8,
    "tgt_embedding": 8,
    "dim": 8,
    "vocab": 60,
    "bpe_vocab": 40,
    "batch_size": 4,
    "length": 5,
    "warmup": 1,
    "steps": 2,
    "batch_sizes": [2, 4],
    "max_batch": 4,
    "sampling_vocab": 50,
    "sample_shares": [0.5],
}
EXPERIMENTS = {
    "output-layers": ["word2word-ce", "word2emb-fasttext-tied-nllvmf_reg1reg2"],
    "throughput": ["word2word-ce"],
    "decoding": ["word2word-ce", "word2emb-fasttext-tied-nllvmf_reg1reg2"],
    "sampling": ["bpe128k-nmt", "bpe128k-joint512"],
    "log-cm": [],
}


def run(kind: str, precision: str, out) -> dict:
    benchmark.main(
        [
            kind,
            "--settings",
            json.dumps({**SETTINGS, "precision": precision}),
            "--experiments",
            *EXPERIMENTS[kind],
            "--out",
            str(out),
        ]
    )
    return json.loads(out.read_text())


@pytest.mark.parametrize("kind", ["output-layers", "decoding"])
@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_steps_run_in_the_configured_precision_and_decoding_in_fp32(kind, precision, tmp_path):
    """Training steps as train.py runs them; decoding as decode.py does, in fp32 whatever the precision."""
    linear_outputs = set()

    def record(module, inputs, output):
        if isinstance(module, torch.nn.Linear):
            linear_outputs.add(output.dtype)

    hook = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        result = run(kind, precision, tmp_path / "result.json")
    finally:
        hook.remove()
    assert result["settings"]["precision"] == precision
    in_bf16 = precision == "bf16" and kind != "decoding"
    # bf16: the output layers' products; the encoder's and decoder's layers stay fp32 (precision.full_precision)
    assert linear_outputs == ({torch.bfloat16, torch.float32} if in_bf16 else {torch.float32})


@pytest.mark.parametrize("kind", sorted(EXPERIMENTS))
def test_every_result_is_stamped_with_device_name_precision_torch_and_date(kind, tmp_path):
    settings = run(kind, "auto", tmp_path / "result.json")["settings"]
    assert settings["device"] == "cpu" and settings["precision"] == "fp32"  # auto resolves to fp32 off CUDA
    model, _, threads = settings["device_name"].rpartition(" (")
    assert model and threads == "1 threads)"
    assert settings["torch"] == torch.__version__
    date = datetime.fromisoformat(settings["date"])
    assert date.utcoffset() == timedelta(0) and abs(datetime.now(timezone.utc) - date) < timedelta(minutes=5)


def test_output_layer_rows_carry_target_tokens_per_second_and_decoding_time(tmp_path):
    rows = run("output-layers", "fp32", tmp_path / "result.json")["rows"]
    assert list(rows) == EXPERIMENTS["output-layers"]
    tokens = SETTINGS["batch_size"] * SETTINGS["length"]
    for row in rows.values():
        expected = tokens / (row["ms"] / 1000)
        # ms is rounded to 0.01, tokens_per_second to 0.1, both from the same unrounded step time
        assert row["tokens_per_second"] == pytest.approx(expected, abs=0.05 + expected * 0.005 / (row["ms"] - 0.005))
        # vMF C21's evidence: a batch's greedy decoding, timed in repeats as the training step is
        assert len(row["decode_ms_repeats"]) == len(row["ms_repeats"]) == benchmark.REPEATS
        assert row["decode_ms"] == pytest.approx(statistics.fmean(row["decode_ms_repeats"]), abs=0.01)
    decoding = run("decoding", "fp32", tmp_path / "decoding.json")
    assert decoding["settings"]["repeats"] == benchmark.REPEATS
    for experiment, speed in decoding["sentences_per_second"].items():
        seconds = [SETTINGS["batch_size"] / rate for rate in decoding["repeats"][experiment]]
        assert speed == pytest.approx(SETTINGS["batch_size"] / statistics.fmean(seconds), rel=0.01)
