"""One device per GPU job on a multi-GPU machine, tested with simulated device counts."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, TRANSLATION_SPEC, snakemake

HOLD = """
import os, sys, time
from workflow_src.model.gpu import gpu_slot
with gpu_slot(poll_seconds=0.05) as slot:
    print(f"{slot} {os.environ.get('CUDA_VISIBLE_DEVICES')} {time.time()}", flush=True)
    time.sleep(float(sys.argv[1]))
print(f"released {time.time()}", flush=True)
"""


def start(tmp_path, gpus: int, hold: float, **env):
    environment = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    environment.update(PYTHONPATH=str(REPO), REPRO_GPUS=str(gpus), REPRO_GPU_LOCK_DIR=str(tmp_path / "locks"), **env)
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(hold)],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_each_job_gets_its_own_device_and_a_third_waits(tmp_path):
    first, second = start(tmp_path, 2, 1.5), start(tmp_path, 2, 1.5)
    time.sleep(0.6)
    third = start(tmp_path, 2, 0.1)
    outputs = [p.communicate(timeout=60) for p in (first, second, third)]
    lines = [out.split("\n") for out, _ in outputs]
    slots = [line[0].split() for line in lines]
    assert sorted(s[0] for s in slots[:2]) == ["0", "1"]
    assert all(s[0] == s[1] for s in slots)  # CUDA_VISIBLE_DEVICES is the slot
    released = min(float(line[1].split()[1]) for line in lines[:2])
    assert float(slots[2][2]) >= released  # the third started only once a device was free
    assert "all 2 slots busy; waiting" in outputs[2][1]


def test_a_crashed_job_frees_its_device(tmp_path):
    crashed = start(tmp_path, 1, 30)
    time.sleep(0.8)
    crashed.kill()
    crashed.wait()
    out, _ = start(tmp_path, 1, 0).communicate(timeout=30)
    assert out.startswith("0 0 ")


def test_no_gpu_runs_on_the_cpu_and_says_so(tmp_path):
    out, err = start(tmp_path, 0, 0).communicate(timeout=30)
    assert out.startswith("None None") and "none on this machine; running on the CPU" in err


def test_a_device_chosen_elsewhere_is_kept(tmp_path):
    out, err = start(tmp_path, 4, 0, CUDA_VISIBLE_DEVICES="3").communicate(timeout=30)
    assert out.startswith("None 3") and "was set for this job; keeping it" in err


def test_several_jobs_share_a_device_up_to_its_slots(tmp_path):
    """gpu.jobs_per_device 2 on one GPU: two jobs run on device 0 at once, a third waits."""
    first, second = (start(tmp_path, 1, 1.5, REPRO_GPU_JOBS_PER_DEVICE="2") for _ in range(2))
    time.sleep(0.6)
    third = start(tmp_path, 1, 0.1, REPRO_GPU_JOBS_PER_DEVICE="2")
    outputs = [p.communicate(timeout=60) for p in (first, second, third)]
    lines = [out.split("\n") for out, _ in outputs]
    starts = [float(line[0].split()[2]) for line in lines]
    assert all(line[0].split()[:2] == ["0", "0"] for line in lines)
    assert abs(starts[0] - starts[1]) < 1.0  # the first two shared the device
    released = min(float(line[1].split()[1]) for line in lines[:2])
    assert starts[2] >= released and "all 2 slots busy; waiting" in outputs[2][1]


def test_a_timed_job_gets_the_device_to_itself(tmp_path):
    """A job asking for all of a device's slots (REPRO_GPU_SLOTS = jobs_per_device) waits for the
    device to empty, and no job shares it while it runs."""
    shared = start(tmp_path, 1, 1.5, REPRO_GPU_JOBS_PER_DEVICE="3")
    time.sleep(0.6)
    timed = start(tmp_path, 1, 1.0, REPRO_GPU_JOBS_PER_DEVICE="3", REPRO_GPU_SLOTS="3")
    time.sleep(0.3)
    late = start(tmp_path, 1, 0.1, REPRO_GPU_JOBS_PER_DEVICE="3")
    (shared_out, _), (timed_out, timed_err), (late_out, _) = (p.communicate(timeout=60) for p in (shared, timed, late))
    shared_released = float(shared_out.split("\n")[1].split()[1])
    timed_started = float(timed_out.split()[2])
    timed_released = float(timed_out.split("\n")[1].split()[1])
    late_started = float(late_out.split()[2])
    assert timed_started >= shared_released
    assert "3 of the 3 slots of device 0" in timed_err and "no device of 1 has 3 free slots" in timed_err
    assert not timed_started <= late_started < timed_released  # nobody ran beside the timed job


def test_a_bad_slot_setting_is_named(tmp_path):
    out, err = start(tmp_path, 1, 0, REPRO_GPU_JOBS_PER_DEVICE="zero").communicate(timeout=30)
    assert "REPRO_GPU_JOBS_PER_DEVICE='zero'" in err


@pytest.mark.workflow
def test_jobs_behind_reported_times_ask_for_a_whole_device(tmp_path):
    """With gpu.jobs_per_device 3, a training job timed by vMF Table 3 and a benchmark ask
    Snakemake for 3 slots and tell the job so (REPRO_GPU_SLOTS); another training asks for 1."""

    config = tmp_path / "config.yaml"
    text = (REPO / "config.yaml").read_text()
    assert len(re.findall(r"\n  jobs_per_device: \d+\n", text)) == 1
    config.write_text(re.sub(r"\n  jobs_per_device: \d+\n", "\n  jobs_per_device: 3\n", text))
    timed, untimed = (
        f"results/models/iwslt16/fr-en/{e}/seed1/model.pt" for e in ("word2word-ce", "word2emb-word2vec-l2")
    )
    out = snakemake(
        tmp_path,
        timed,
        untimed,
        "results/benchmarks/vmf/table4.json",
        "--configfile",
        str(config),
        "-n",
        "-p",
        "--cores",
        "4",
        "--resources",
        "gpu=3",
    ).stdout
    slots = {}
    for block in out.split("\nrule "):
        for target in (timed, untimed, "results/benchmarks/vmf/table4.json"):
            if f"--out-dir {target.rsplit('/', 1)[0]} " in block or f"--out {target} " in block:
                slots[target] = (block.split("gpu=")[1].split(",")[0], block.split("REPRO_GPU_SLOTS=")[1].split()[0])
    assert slots == {timed: ("3", "3"), untimed: ("1", "1"), "results/benchmarks/vmf/table4.json": ("3", "3")}


def test_devices_are_counted_without_starting_cuda_in_the_job(monkeypatch):
    """Where NVML is missing, torch.cuda.device_count() starts CUDA, which reads
    CUDA_VISIBLE_DEVICES then and never again: counting so before `gpu_slot` sets it would put
    every job on device 0. A child process counts instead."""
    import torch

    from workflow_src.model import gpu

    def started_cuda():
        raise AssertionError("CUDA started in the job's process before CUDA_VISIBLE_DEVICES was set")

    monkeypatch.delenv("REPRO_GPUS", raising=False)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: -1)  # no NVML
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", started_cuda, raising=False)  # absent from CPU builds
    children = []

    def child(command, **kwargs):
        children.append(command)
        return subprocess.CompletedProcess(command, 0, stdout="3\n", stderr="")

    monkeypatch.setattr(gpu.subprocess, "run", child)
    assert gpu.device_count() == 3
    assert children and children[0][0] == sys.executable
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 2)  # NVML counts without starting CUDA
    assert gpu.device_count() == 2 and len(children) == 1


def no_cuda(monkeypatch, *, cuda_version="12.4", count=1):
    """CUDA that fails to start, as in the test above: a CUDA build of torch on a machine whose
    driver it cannot use (NVML counts the GPUs, torch.cuda.is_available() says no)."""
    import torch

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("REPRO_GPUS", raising=False)
    monkeypatch.setenv("REPRO_GPU_LOCK_DIR", str(os.environ.get("TMPDIR", "/tmp")) + f"/repro-gpu-test-{os.getpid()}")
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: count)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", cuda_version)


def test_a_job_holding_gpu_slots_refuses_the_cpu(monkeypatch, capsys):
    """train.device auto (or cuda) in a job that holds a GPU slot: one line naming the setting and
    what torch reported, exit status 1, before any training; never `device: cpu` for weeks."""
    import pytest

    from workflow_src.model import gpu
    from workflow_src.train import train

    no_cuda(monkeypatch)
    monkeypatch.setenv("REPRO_GPU_SLOTS", "1")
    for setting in ("auto", "cuda"):
        with pytest.raises(SystemExit) as stopped, gpu.job_device(setting, key="train.device"):
            raise AssertionError("the job got a device")
        message = str(stopped.value)
        assert stopped.value.code == message and "\n" not in message  # Python prints it, exits 1
        assert message.startswith(f"train.device: {setting}, but this job holds 1 GPU slot and torch sees no GPU (")
        assert "torch.version.cuda 12.4" in message and "torch.cuda.is_available() False" in message
        assert "devices counted 1" in message and message.endswith("or set train.device: cpu")
    # the training command stops the same way, before it reads its inputs
    spec = json.dumps({**TRANSLATION_SPEC, "device": "auto"})
    args = [
        f"--{name}=/nonexistent"
        for name in (
            "train-src",
            "train-tgt",
            "dev-src",
            "dev-tgt",
            "dev-src-words",
            "dev-ref",
            "src-vocab",
            "tgt-vocab",
            "out-dir",
        )
    ]
    with pytest.raises(SystemExit, match=r"^train\.device: auto, but this job holds 1 GPU slot"):
        train.main(["--spec", spec, *args])


def test_the_cpu_is_used_where_asked_or_no_slot_is_held(monkeypatch):
    """train.device cpu holds no slot (the demo); a command typed by hand holds none either; and
    REPRO_GPUS=0 declares a GPU-less machine whose slots stand in for CPU work (tests)."""
    from workflow_src.model import gpu

    no_cuda(monkeypatch)
    monkeypatch.setenv("REPRO_GPU_SLOTS", "0")
    with gpu.job_device("cpu", key="train.device") as device:
        assert device.type == "cpu"
    with gpu.job_device("auto", key="train.device") as device:
        assert device.type == "cpu"
    monkeypatch.delenv("REPRO_GPU_SLOTS")
    with gpu.job_device("auto", key="train.device") as device:
        assert device.type == "cpu"
    monkeypatch.setenv("REPRO_GPU_SLOTS", "1")
    monkeypatch.setenv("REPRO_GPUS", "0")
    with gpu.job_device("auto", key="train.device") as device:
        assert device.type == "cpu"


@pytest.mark.workflow
def test_the_training_rules_tell_the_job_its_slots(tmp_path):
    """Both training rules pass their gpu resource on (REPRO_GPU_SLOTS), which is how the job knows
    it holds a GPU: 1 with train.device auto, 0 with cpu (the demo)."""

    targets = (
        "results/models/iwslt16/fr-en/word2emb-word2vec-l2/seed1/model.pt",
        "results/lm/ptb/lm-small-vd/seed1/model.pt",
    )
    for device, slots in (("auto", "1"), ("cpu", "0")):
        out = snakemake(
            tmp_path,
            *targets,
            "--configfile",
            str(REPO / "config.yaml"),
            "-n",
            "-p",
            "--cores",
            "2",
            "--resources",
            "gpu=1",
            "--config",
            f"train={{device: {device}}}",
        ).stdout
        shells = [line for line in out.splitlines() if "python -m workflow_src.train.train" in line]
        assert {line.split("REPRO_GPU_SLOTS=")[1].split()[0] for line in shells} == {slots}, out[-3000:]
        assert any("workflow_src.train.train_lm" in line for line in shells) and any(
            "workflow_src.train.train " in line for line in shells
        )
