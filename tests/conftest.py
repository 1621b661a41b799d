import sys
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
