"""The GPU check's report (`workflow_src.gpu_check`), written as it goes: every check gives one
console line, `<subject>: passed (<measures>)` or, per problem, `<subject>: FAILED: <reason>
(avoid with <setting>)`, and after each `gpu_check.json` and `gpu_check.md` are rewritten
atomically with everything so far, so a check cut short still leaves a valid report that names
what it did not reach."""

from __future__ import annotations

import json
from pathlib import Path

from workflow_src.atomic import write_text

GIB = 2**30


def one_line(error: Exception) -> str:
    """An error's type and the first lines of its message, on one line (torch's reason, for one)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {' / '.join(lines[:3])}"[:400]


def verdict(problems: list[tuple[str, str]]) -> str:
    """`passed`, or `FAILED: <reason> (avoid with <setting>)` per problem, joined by `; `."""
    return "; ".join(f"FAILED: {reason} (avoid with {avoid})" for reason, avoid in problems) or "passed"


class Report:
    def __init__(self, out: Path, data: dict, log=print):
        self.out, self.data, self.log = out, data, log
        self.data |= {"status": "running", "not_reached": [], "lines": [], "failures": [], "passed": None}
        self.snapshot = "{}"

    def check(self, subject: str, problems: list[tuple[str, str]], measures: str) -> str:
        """Log and keep the check's lines; its verdict (`verdict`)."""
        lines = [f"{subject}: FAILED: {reason} (avoid with {avoid})" for reason, avoid in problems] or [
            f"{subject}: passed ({measures})"
        ]
        for line in lines:
            self.log(line)
        self.data["lines"] += lines
        self.data["failures"] += lines if problems else []
        return verdict(problems)

    def not_reached(self, items: list[str], why: str) -> None:
        self.data["not_reached"] += [f"{item} ({why})" for item in items]

    def write(self, status: str = "running") -> None:
        d = self.data
        d["status"] = status
        d["passed"] = not d["failures"] and not d["not_reached"] and status == "complete"
        self.snapshot = json.dumps(d, indent=1) + "\n"
        write_text(self.out / "gpu_check.json", self.snapshot)
        write_text(self.out / "gpu_check.md", markdown(d))

    def summary(self) -> str:
        """The last console line: the check's verdict over everything."""
        d, where = self.data, self.out / "gpu_check.md"
        if d["passed"]:
            return f"GPU check: passed ({len(d['lines'])} checks; report {where})"
        parts = [
            f"{len(d['failures'])} checks failed" if d["failures"] else "",
            f"{len(d['not_reached'])} not reached before the deadline" if d["not_reached"] else "",
        ]
        return (
            f"GPU check: FAILED: {', '.join(p for p in parts if p)} (avoid with the settings named above, "
            f"and a later --deadline for what was not reached; report {where})"
        )


# -- Markdown -------------------------------------------------------------------------------------
CHECKS = ("family", "decoding", "sharing", "compile", "retime")  # the kinds of item, in the order they run


def refused(checks) -> str | None:
    """Why these kinds of check cannot run (None: they can)."""
    unknown = set(checks) - set(CHECKS)
    if unknown:
        return f"unknown checks {sorted(unknown)}: choose among {', '.join(CHECKS)}"
    if "retime" in checks and "family" not in checks:
        return "--checks retime times each family's step a second time: it runs with family (--checks family retime)"
    return None


def cell(value, scale: float = 1.0, digits: str = ".4g") -> str:
    if value is None or isinstance(value, str):
        return value or ""
    return format(value * scale, digits)


def table(columns: list[str], rows: list[list]) -> list[str]:
    return (
        ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        + ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
        + [""]
    )


def memory_cell(memory) -> str:
    if isinstance(memory, str):
        return memory
    return (
        f"{memory['peak_allocated_bytes'] / GIB:.2f} / {memory['peak_reserved_bytes'] / GIB:.2f} GiB"
        f" x {memory['jobs_per_device']} of {memory['device_bytes'] / GIB:.1f}; headroom "
        f"{memory['headroom_bytes'] / GIB:.1f} GiB"
    )


def step_cell(timed: dict, key: str = "step_seconds") -> str:
    """`timed[key]` in ms, the one kept, and each round's where it was timed more than once."""
    rounds = timed.get(f"{key}_rounds", [])
    kept = cell(timed.get(key), 1000, ".1f")
    return kept if len(rounds) < 2 else f"{kept} ({', '.join(cell(r, 1000, '.1f') for r in rounds)})"


def family_rows(d: dict) -> list[list]:
    rows = []
    for name, e in d["families"].items():
        speed, modelled = e.get("speed", {}), e.get("modelled", {})
        rows.append(
            [
                name,
                e["jobs"],
                step_cell(speed),
                cell(speed.get("tokens_per_second")),
                memory_cell(speed.get("memory", "")),
                cell(speed.get("syncs_per_step")),
                e.get("compared", ""),
                cell(modelled.get("alone_seconds"), 1000, ".2f") if isinstance(modelled, dict) else modelled,
                cell(e.get("measured_over_modelled"), 1, ".2f"),
                e["verdict"],
            ]
        )
    return rows


def markdown(d: dict) -> str:
    env = d["environment"]
    state = {"complete": "", "running": " (running: a partial report)"}.get(d["status"], f" ({d['status']})")
    head = "**passed**" if d["passed"] else ("**FAILED**" if d["failures"] else "**incomplete**")
    lines = [
        "# GPU check",
        "",
        f"{head}{state} on {env['device']} ({env['device_name']}): torch {env['torch']}, CUDA {env['cuda'] or 'none'}, "
        f"cuDNN {env['cudnn'] or 'none'}, Python {env['python']}; MPS {'on' if env['mps']['on'] else 'off'} "
        f"({env['mps']['how']}); {env['date']}; {d['elapsed_seconds']:.0f} s"
        + (f" of a {d['deadline_seconds']:g} s deadline" if d["deadline_seconds"] else "")
        + ".",
        "",
        *(
            [f"Checks run: {', '.join(d['checks'])} only (`--checks`); the others were not asked for.", ""]
            if set(d.get("checks", CHECKS)) != set(CHECKS)
            else []
        ),
        f"Precision: config `train.precision` {d['precision']['setting']} = {d['precision']['resolved']} here; the "
        f"full comparisons in {', '.join(d['precision']['checked'])}. Config `train.compile`: {d['compile_setting']}; "
        f"`gpu.jobs_per_device`: {d['jobs_per_device_configured']}.",
        "",
    ]
    if d["not_reached"]:
        lines += ["## Not reached", "", *[f"- {item}" for item in d["not_reached"]], ""]
    if d["failures"]:
        lines += ["## Failures", "", *[f"- {line}" for line in d["failures"]], ""]
    lines += ["## Families", "", d["notes"]["families"], ""]
    lines += table(
        [
            "family",
            "jobs",
            "step ms (rounds)",
            "target tokens/s",
            "peak memory (allocated / reserved)",
            "host syncs per step",
            "compared with the CPU",
            "modelled H100 step ms (alone)",
            "measured / modelled",
            "verdict",
        ],
        family_rows(d),
    )
    full = [
        [
            name,
            precision,
            cell(c["loss_relative"], 1, ".2e"),
            f"{cell(c['min_gradient_cosine'], 1, '.7f')} ({c['min_gradient_cosine_group']})",
            cell(c["words"], 100, ".0f") + "%",
            "ok" if not c["dtype_problems"] else "; ".join(c["dtype_problems"]),
            c["verdict"],
        ]
        for name, e in d["families"].items()
        if e.get("full") and "correctness" in e
        for precision, c in e["correctness"].items()
    ]
    lines += ["## Full comparisons", "", d["notes"]["correctness"], ""]
    lines += table(
        [
            "family",
            "precision",
            "loss relative difference",
            "min gradient cosine (group)",
            "words agreeing",
            "dtypes",
            "verdict",
        ],
        full,
    )
    lines += ["## Decoding", "", d["notes"]["decoding"], ""]
    lines += table(
        ["family", "search", "words agreeing", "ms per sentence", "verdict"],
        [
            [
                name,
                search,
                cell(s.get("words"), 100, ".0f") + "%",
                cell(s.get("seconds_per_sentence"), 1000, ".2f"),
                s["verdict"],
            ]
            for name, e in d["decoding"].items()
            for search, s in e.items()
        ],
    )
    lines += ["## Jobs sharing the device", "", d["notes"]["sharing"], ""]
    if isinstance(d["sharing"], str) and d["environment"]["device"] != "cpu":
        lines += [f"Sharing: {d['sharing']}.", ""]
    elif isinstance(d["sharing"], dict):
        lines += table(
            [
                "family",
                "step ms alone",
                f"step ms at {d['sharing']['jobs']} jobs",
                "slowdown",
                "GPU busy share of a step alone",
                "verdict",
            ],
            [
                [
                    name,
                    cell(s.get("alone_seconds"), 1000, ".1f"),
                    cell(s.get("shared_seconds"), 1000, ".1f"),
                    cell(s.get("slowdown"), 1, ".2f"),
                    cell(s.get("busy_share"), 100, ".0f") + "%"
                    if isinstance(s.get("busy_share"), float)
                    else cell(s.get("busy_share")),
                    s["verdict"],
                ]
                for name, s in d["sharing"]["families"].items()
            ],
        )
    lines += ["## train.compile", "", d["notes"]["compile"], ""]
    if isinstance(d["compile"], str):
        lines += [d["compile"] + ".", ""]
    else:
        lines += table(
            [
                "architecture (family)",
                "mode",
                "phase",
                "graphs compiled",
                "seconds",
                "loss relative to eager",
                "compiled step ms (rounds)",
                "eager step ms (rounds)",
                "speed-up",
                "verdict",
            ],
            [
                [
                    f"{c['architecture']} ({c['family']})",
                    c["mode"],
                    phase,
                    p.get("graphs"),
                    cell(p.get("seconds"), 1, ".1f"),
                    cell(p.get("loss_relative"), 1, ".2e"),
                    step_cell(p),
                    step_cell(p, "eager_step_seconds"),
                    cell(p.get("speedup"), 1, ".2f"),
                    p["verdict"],
                ]
                for c in d["compile"]
                for phase, p in c["phases"].items()
            ],
        )
    return "\n".join(lines)
