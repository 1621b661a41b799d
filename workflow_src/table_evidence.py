"""The evidence behind the analysis tables' numbers (`workflow_src/evidence.py`): per seed, or per
timed repeat, the measurements that a claim on the table is decided by. A table type without a
builder here writes no evidence (its claims, if any, say so)."""

from __future__ import annotations

import functools

from workflow_src.evidence import Cell
from workflow_src.registry import Context


@functools.singledispatch
def cells(artefact, ctx: Context, paper: str, artefact_id: str) -> list[Cell]:
    return []
