"""How a translation or language model's training step runs, as config `train` sets it, and what
that adds to a job's spec: `train.compile` (`model/compilation.py`, `train/static_step.py`) and,
with `graphs`, `train.length_buckets` (`model/static_batches.py`). Both join a spec only when they
change the arithmetic, so the specs, hashes and Snakemake params of eager jobs stay what they were.
"""

from __future__ import annotations

COMPILE_KEY = "compile"  # config train.compile (`model/compilation.py`); in a spec only when it is not `off`


def compile_spec_entry(train: dict) -> dict:
    """What config `train` adds to a job's spec: {"compile": setting}, or nothing for `off`
    (so the specs, hashes and Snakemake params of eager jobs stay what they were)."""
    setting = train.get(COMPILE_KEY, "off")
    return {} if setting == "off" else {COMPILE_KEY: setting}


LENGTH_BUCKETS_KEY = "length_buckets"  # config train.length_buckets (`model/static_batches.py`); in a spec only with graphs


def check_length_buckets(buckets) -> list[int]:
    """`buckets` if they are rising positive whole numbers, else a ValueError naming the key."""
    if not (isinstance(buckets, list) and buckets and all(type(b) is int and b > 0 for b in buckets)
            and buckets == sorted(set(buckets))):
        raise ValueError(f"train.{LENGTH_BUCKETS_KEY}: {buckets!r} is not a rising list of positive lengths")
    return buckets


def length_buckets_entry(train: dict) -> dict:
    """What config `train` adds to a translation job's spec for `train.compile: graphs`: the
    lengths its batches' S and T are padded up to; nothing for the other settings (their specs,
    hashes and params stay what they were)."""
    if train.get(COMPILE_KEY, "off") != "graphs":
        return {}
    if LENGTH_BUCKETS_KEY not in train:
        raise ValueError(f"train.{LENGTH_BUCKETS_KEY}: train.compile graphs needs the lengths that batches are padded up to")
    return {LENGTH_BUCKETS_KEY: check_length_buckets(train[LENGTH_BUCKETS_KEY])}
