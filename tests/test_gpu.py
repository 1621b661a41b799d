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
