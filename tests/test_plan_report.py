"""The cost plan's sentences on the 5-day goal: which paper keeps a run above it, and how much of it
rests on the fitted share of the peak carried beyond the steps a GPU timed."""

import pytest

from workflow_src.plan import costmodel, report, tables


def job(family: str, paper: str, alone: float, busy: float, flops: float, launch_bound: float = 0.0) -> dict:
    """A job row as tables.job_rows writes it, the same hours eager and as graphs."""
    row = {"family": family, "artefacts": f"{paper}/table1", "exclusive": False}
    for mode in costmodel.MODES:
        row |= {
            tables.named("h100_modelled_hours", mode): alone,
            tables.named("h100_busy_hours", mode): busy,
            tables.named("h100_flop_hours", mode): flops,
            tables.named("h100_memory_hours", mode): 0.0,
            tables.named("h100_latency_hours", mode): busy - flops,
            tables.named("h100_recurrent_hours", mode): 0.0,
            tables.named("h100_launch_bound_hours", mode): launch_bound,
        }
    return row


def test_flops_at_another_share_move_only_the_named_families_and_not_a_host_bound_time():
    rows = [
        job("large", "joint", 100.0, 100.0, 80.0),
        job("host", "joint", 50.0, 30.0, 20.0, 50.0),
        job("small", "vmf", 10.0, 10.0, 5.0),
    ]
    moved = report.with_flop_share(rows, {"large", "host"}, share=0.4, achieved=0.04, mode="graphs")
    # Δ = FLOP hours · (1 - 0.04 / 0.4) = 0.9 · FLOP hours
    assert moved[0]["h100_graphs_busy_hours"] == pytest.approx(100 - 72)
    assert moved[0]["h100_graphs_modelled_hours"] == pytest.approx(100 - 72)
    assert moved[1]["h100_graphs_busy_hours"] == pytest.approx(30 - 18)
    assert moved[1]["h100_graphs_modelled_hours"] == 50.0  # its host bounds it
    assert moved[2] == rows[2] and moved[0]["h100_busy_hours"] == 100.0  # another family; the eager columns


def test_the_goal_sentence_names_the_paper_that_keeps_the_run_above_it_and_what_the_rest_take():
    rows = [job(f"joint-{i}", "joint", 60.0, 60.0, 50.0) for i in range(4)] + [job("vmf", "vmf", 48.0, 48.0, 10.0)]
    summary = tables.summary_rows({"papers": {"joint": {}, "vmf": {}}}, rows)
    families = [
        {"family": r["family"], "jobs": 1, **{k: v for k, v in r.items() if k.startswith("h100_")}} for r in rows
    ]
    days = tables.h100_days(rows, 1, "graphs")
    assert days == pytest.approx(288 / 24)
    sentence = report.goal_sentence(rows, families, summary, 1, days, "graphs")
    assert "The joint paper's 4 models are 240 hours of it" in sentence
    assert "without them the other papers' jobs would take 2 days" in sentence  # vMF's 48 hours
    assert "FLOPs, would have to lose 168 of its 210 hours" in sentence  # 288 - 120 hours to lose
    assert "%" not in sentence


def test_the_flop_share_sentence_names_the_families_beyond_the_timed_steps_and_the_days_at_the_floor_share(
    monkeypatch,
):
    rows = [job("large", "joint", 100.0, 100.0, 80.0), job("timed-like", "vmf", 40.0, 40.0, 30.0)]
    families = [
        {"family": "large", "jobs": 1, "step_gflop": 2500.0, "h100_graphs_flop_hours": 80.0},
        {"family": "timed-like", "jobs": 1, "step_gflop": 900.0, "h100_graphs_flop_hours": 30.0},
    ]
    model = costmodel.CostModel(costmodel.H100, 2e-5, 4e-6, 2.5e-6, 2.5e-6, 0.05)
    fitting = report.Fitting([], {}, model, model)
    monkeypatch.setattr(report, "largest_timed_graph_flops", lambda fitting: 500e9)
    sentence = report.flop_share_sentence(rows, families, fitting, 1, "graphs")
    assert "fitted 5.0% of the peak" in sentence and "largest step timed as a graph: 500 GFLOP" in sentence
    assert "1 family has a step of more than 2 times that" in sentence
    assert "`large`, 2.5 TFLOP a step" in sentence and "timed-like" not in sentence
    # 80 FLOP hours at 5% are 10 at 40%: the run loses 70 of its 140 hours
    assert "80 hours of FLOPs at the fitted share; at the floor's 40% of the peak they would be 10" in sentence
    assert f"the whole run {70 / 24:.3g} days" in sentence
    monkeypatch.setattr(report, "largest_timed_graph_flops", lambda fitting: 2000e9)
    assert "no family's step has more than 2 times its FLOPs" in report.flop_share_sentence(
        rows, families, fitting, 1, "graphs"
    )


def test_the_fit_says_how_far_apart_one_steps_rounds_lay_and_reads_their_fastest():
    """A GPU check's steps timed in rounds (model/timing.py's ROUNDS): the fit reads the kept, fastest
    median with each round beside it, and the plan says how far apart one step's rounds lay; for a
    report of one round per step it says that spread shows only across steps of equal counts."""
    from workflow_src.plan import fit

    speed = {"precision": "bf16", "length": 26, "target_tokens_per_step": 2496}
    check = {
        "families": {
            "a": {
                "experiment": "a",
                "kind": "nmt",
                "speed": {**speed, "step_seconds": 0.02, "step_seconds_rounds": [0.03, 0.02]},
            },
            "b": {
                "experiment": "b",
                "kind": "nmt",
                "speed": {**speed, "step_seconds": 0.04, "step_seconds_rounds": [0.04, 0.05]},
            },
            "c": {"experiment": "c", "kind": "nmt", "speed": {**speed, "step_seconds": 0.01}},
        }
    }
    read = {m.name: m for m in fit.measured_steps(check)}
    assert {n: (m.seconds, m.rounds) for n, m in read.items()} == {
        "a": (0.02, (0.03, 0.02)),
        "b": (0.04, (0.04, 0.05)),
        "c": (0.01, ()),
    }
    phase = {"step_seconds": 0.008, "step_seconds_rounds": [0.008, 0.009], "eager_step_seconds": 0.02}
    graphs = {
        "precision": {"resolved": "bf16"},
        "compile": [{"family": "a", "mode": "graphs", "phases": {"graphs against eager": phase}}],
    }
    replayed = {m.mode: (m.seconds, m.rounds) for m in fit.graph_steps(graphs, read)}
    assert replayed == {"graphs": (0.008, (0.008, 0.009)), "eager": (0.02, ())}
    rows = [{"rounds": m.rounds, "mode": m.mode} for m in read.values()]
    assert report.rounds_sentence(rows) == (
        "2 of the 3 steps were timed in rounds (each from a fresh build, in one run or in several reports), and the "
        "fastest kept: one step's rounds lay apart by up to 1.5x eager (median 1.38x over 2 steps), the spread of "
        "its time between moments of a run or between runs. "
    )
    replayed_rows = [{"rounds": m.rounds, "mode": m.mode} for m in fit.graph_steps(graphs, read)]
    assert "by up to 1.5x eager (median 1.38x over 2 steps) and 1.12x graphs (median 1.12x over 1 step)," in (
        report.rounds_sentence(rows + replayed_rows)
    )
    assert report.rounds_sentence(rows[2:]).startswith("Each step here is one round's median")


def test_a_step_that_several_reports_timed_is_one_measurement_its_fastest_with_each_timing_a_round():
    """The 2026-11-27 graph check timed four targets again in a second report: the fit reads each
    step once, the fastest of its timings, each a round, as the GPU check keeps one step's rounds."""
    from workflow_src.plan import fit

    speed = {"precision": "bf16", "length": 26, "target_tokens_per_step": 2496}
    check = {"families": {n: {"experiment": n, "kind": "nmt", "speed": {**speed, "step_seconds": 0.05}} for n in "ab"}}

    def graph_report(family, graphs_seconds, eager_seconds):
        phase = {"step_seconds": graphs_seconds, "eager_step_seconds": eager_seconds}
        return {
            "families": {},  # `--checks compile` alone
            "precision": {"resolved": "bf16"},
            "compile": [{"family": family, "mode": "graphs", "phases": {"graphs against eager": phase}}],
        }

    found = fit.measurements([check, graph_report("a", 0.012, 0.06), graph_report("a", 0.011, 0.04)])
    timed = {(m.name, m.source, m.mode): (m.seconds, m.rounds) for m in found}
    assert timed == {
        ("a", "check", "eager"): (0.05, ()),
        ("b", "check", "eager"): (0.05, ()),
        ("a", "graph check", "eager"): (0.04, (0.06, 0.04)),
        ("a", "graph check", "graphs"): (0.011, (0.012, 0.011)),
    }
    # a report in rounds and another of one: every round kept, the fastest read
    again = {
        **check,
        "families": {
            "a": {
                **check["families"]["a"],
                "speed": {**speed, "step_seconds": 0.03, "step_seconds_rounds": [0.04, 0.03]},
            }
        },
    }
    (a,) = [m for m in fit.measurements([check, again]) if m.name == "a"]
    assert (a.seconds, a.rounds) == (0.03, (0.05, 0.04, 0.03))


def test_the_committed_plans_fit_section_is_what_the_code_writes_from_the_stored_reports():
    """docs/plan_modelled.md's fit (terms, sentences, one row per measured step) is regenerated with
    any change to the measurements or the fit: its section is fit_section's from plan.fit.MEASURED
    and COUNTED, line for line, as `plan --model-only` writes it (each number within 1%)."""
    from pathlib import Path

    from workflow_src.plan import fit

    import re

    reports, counts, fitted = fit.load()
    lines = report.fit_section(fit.Fitting(reports, counts, fitted, fitted.on(costmodel.H100)))
    committed = (Path(__file__).resolve().parents[1] / "docs" / "plan_modelled.md").read_text().splitlines()
    start = committed.index(lines[0])
    number = re.compile(r"\d+(?:\.\d+)?(?:e[+-]\d+)?")

    def close(a: str, b: str) -> bool:
        """Equal, or within 1% (the fit's last digit moves with the BLAS threads' rounding)."""
        x, y = float(a), float(b)
        return a == b or abs(x - y) <= 0.01 * max(abs(x), abs(y))

    for written, stored in zip(lines, committed[start : start + len(lines)], strict=True):
        assert number.sub("#", written) == number.sub("#", stored), (written, stored)
        assert all(map(close, number.findall(written), number.findall(stored))), (written, stored)
