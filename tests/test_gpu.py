"""One device per GPU job on a multi-GPU machine, tested with simulated device counts."""

import os
import subprocess
import sys
import time

from tests.conftest import REPO

HOLD = """
import os, sys, time
from workflow_src.gpu import gpu_slot
with gpu_slot(poll_seconds=0.05) as slot:
    print(f"{slot} {os.environ.get('CUDA_VISIBLE_DEVICES')} {time.time()}", flush=True)
    time.sleep(float(sys.argv[1]))
print(f"released {time.time()}", flush=True)
"""


def start(tmp_path, gpus: int, hold: float, **env):
    environment = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    environment.update(PYTHONPATH=str(REPO), REPRO_GPUS=str(gpus), REPRO_GPU_LOCK_DIR=str(tmp_path / "locks"), **env)
    return subprocess.Popen([sys.executable, "-c", HOLD, str(hold)], env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


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


def test_jobs_behind_reported_times_ask_for_a_whole_device(tmp_path):
    """With gpu.jobs_per_device 3, a training job timed by vMF Table 3 and a benchmark ask
    Snakemake for 3 slots and tell the job so (REPRO_GPU_SLOTS); another training asks for 1."""
    from tests.test_workflow import snakemake

    config = tmp_path / "config.yaml"
    text = (REPO / "config.yaml").read_text()
    assert "  jobs_per_device: 1\n" in text
    config.write_text(text.replace("  jobs_per_device: 1\n", "  jobs_per_device: 3\n"))
    timed, untimed = (f"results/models/iwslt16/fr-en/{e}/seed1/model.pt" for e in ("word2word-ce", "word2emb-word2vec-l2"))
    out = snakemake(tmp_path, timed, untimed, "results/benchmarks/vmf/table4.json", "--configfile", str(config),
                    "-n", "-p", "--cores", "4", "--resources", "gpu=3").stdout
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

    from workflow_src import gpu

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
