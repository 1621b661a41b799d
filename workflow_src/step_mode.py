"""How a translation or language model's training step runs, as config `train` sets it: the spec's
`compile` (`model/compilation.py`, `train/static_step.py`) and, with `graphs`, its `length_buckets`
(`model/static_batches.py`); and what the compile setting adds to a benchmark's settings.
"""

from __future__ import annotations

COMPILE_KEY = "compile"  # config train.compile (`model/compilation.py`), and the spec's field


def compile_setting(train: dict) -> str:
    """Config train.compile: off (its default), fuse or graphs."""
    return train.get(COMPILE_KEY, "off")


def compile_spec_entry(train: dict) -> dict:
    """What config `train` adds to a benchmark's settings (`plan/benchmark.py`): {"compile": setting},
    or nothing for `off`, so that the params of eager benchmarks stay what they were."""
    setting = compile_setting(train)
    return {} if setting == "off" else {COMPILE_KEY: setting}


LENGTH_BUCKETS_KEY = "length_buckets"  # config train.length_buckets (`model/static_batches.py`), and the spec's field


def check_length_buckets(buckets) -> list[int]:
    """`buckets` if they are rising positive whole numbers, else a ValueError naming the key."""
    if not (
        isinstance(buckets, list)
        and buckets
        and all(type(b) is int and b > 0 for b in buckets)
        and buckets == sorted(set(buckets))
    ):
        raise ValueError(f"train.{LENGTH_BUCKETS_KEY}: {buckets!r} is not a rising list of positive lengths")
    return buckets


def length_buckets(train: dict) -> tuple[int, ...] | None:
    """A translation job's `length_buckets` under `train.compile: graphs`: the lengths its batches'
    S and T are padded up to; None under the other settings, which pad to each batch's longest."""
    if compile_setting(train) != "graphs":
        return None
    if LENGTH_BUCKETS_KEY not in train:
        raise ValueError(
            f"train.{LENGTH_BUCKETS_KEY}: train.compile graphs needs the lengths that batches are padded up to"
        )
    return tuple(check_length_buckets(train[LENGTH_BUCKETS_KEY]))
