import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL_FIXTURES = REPO.parent / "shared" / "fixtures" / "real"
sys.path.insert(0, str(REPO))


def real_fixture(*parts: str) -> Path:
    """A file of ../shared/fixtures/real, or a skip with the reason when it is absent."""
    path = REAL_FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"real-data sample {path} is absent (it lives beside the project, not in it)")
    return path


def kill_in_second_epoch(command: list[str], out_dir: Path, env: dict) -> None:
    """Start a training command and SIGKILL it shortly after its first checkpoint, before it ends."""
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while not (out_dir / "checkpoint.pt").exists() and time.time() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # into the second epoch
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (out_dir / "model.pt").exists(), "the run finished before it could be interrupted"
