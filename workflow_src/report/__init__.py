"""Stage `report` (rules/report.smk): the papers' tables and figures from the trained models'
outputs, the claims table, the deviations ledger and the training diagnostics."""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # workflow_src


def code_version(root: Path = PACKAGE) -> str:
    """The first 16 hex digits of sha256 over every Python source under `root` (its path and
    contents, in path order): the report rules' `code` param, so that after the pipeline's code
    changes Snakemake renders the tables, figures and claims again ("Params have changed"), where
    their inputs alone would keep what an older version rendered. They take seconds to minutes;
    the trainings behind them rerun only where their spec changes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.py") if p.is_file()):  # not an editor's dangling lock link
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
