"""The claims table: verdicts on small hand-made tables (a clear win, a clear loss, within noise),
claims that name real rows of their papers' tables, and the rule in the DAG of `all`."""

import csv

import pytest

from tests.conftest import REPO
from workflow_src import claims, layout, registry
from workflow_src.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Check, Claim


def table(*rows: tuple) -> list[dict]:
    """A table as the CSV reader gives it: (experiment, ours, sd, seeds, significance, Δ) per row."""
    return [{"experiment": e, "fr-en ours": ours, "fr-en sd": sd, "seeds": seeds, "fr-en significance": mark,
             "fr-en Δ": delta, "note": ""} for e, ours, sd, seeds, mark, delta in rows]


SPREAD = Check("table1", "fr-en ours", "a", than="b")


@pytest.mark.parametrize("a, b, expected", [
    (("32.0", "0.2"), ("31.0", "0.2"), REPRODUCED),  # d = 1.0, 2 se = 0.28
    (("30.0", "0.2"), ("31.0", "0.2"), NOT_REPRODUCED),
    (("31.1", "0.4"), ("31.0", "0.4"), INCONCLUSIVE),  # d = 0.1, 2 se = 0.57
])
def test_seed_spread_decides_win_loss_and_noise(a, b, expected):
    rows = table(("a", *a, "1 2 3 4", "", ""), ("b", *b, "1 2 3 4", "", ""))
    assert claims.decide(SPREAD, rows).verdict == expected


def test_one_seed_or_no_sd_column_is_inconclusive():
    one_seed = claims.decide(SPREAD, table(("a", "40.0", "", "1", "", ""), ("b", "10.0", "", "1", "", "")))
    assert one_seed.verdict == INCONCLUSIVE and "fewer than 2 seeds" in one_seed.reason
    rows = [{k: v for k, v in r.items() if k != "fr-en sd"} for r in table(("a", "40", "", "1 2", "", ""), ("b", "10", "", "1 2", "", ""))]
    no_sd = claims.decide(SPREAD, rows)
    assert no_sd.verdict == INCONCLUSIVE and "no 'fr-en sd' column" in no_sd.reason


def test_within_a_margin_and_below_a_threshold():
    within = Check("table1", "fr-en ours", "a", than="b", margin=1.0)
    rows = table(("a", "30.5", "0.1", "1 2 3 4", "", ""), ("b", "31.0", "0.1", "1 2 3 4", "", ""))
    assert claims.decide(within, rows).verdict == REPRODUCED  # 0.5 behind, within 1 beyond the noise
    assert claims.decide(SPREAD, rows).verdict == NOT_REPRODUCED  # but it does not beat b
    below = Check("table1", "fr-en ours", "a", threshold=0.2, lower_is_better=True)
    assert claims.decide(below, table(("a", "0.06", "0.02", "1 2 3", "", ""))).verdict == REPRODUCED
    assert claims.decide(below, table(("a", "0.19", "0.05", "1 2 3", "", ""))).verdict == INCONCLUSIVE
    assert claims.decide(below, table(("a", "0.5", "0.05", "1 2 3", "", ""))).verdict == NOT_REPRODUCED


def test_bootstrap_marks():
    marks = Check("table1", "fr-en ours", "a", than="b", test="marks", mark="†")
    win = table(("a", "32.3", "0.2", "1 2 3 4", "*†", ""), ("b", "32.0", "0.2", "1 2 3 4", "", ""))
    assert claims.decide(marks, win).verdict == REPRODUCED
    noise = table(("a", "32.3", "0.2", "1 2 3 4", "*", ""), ("b", "32.0", "0.2", "1 2 3 4", "", ""))
    assert claims.decide(marks, noise).verdict == INCONCLUSIVE  # no † even though the mean is higher
    loss = table(("a", "30.0", "0.2", "1 2 3 4", "", ""), ("b", "32.0", "0.2", "1 2 3 4", "", ""))
    assert claims.decide(marks, loss).verdict == NOT_REPRODUCED


def test_bootstrap_levels_decide_by_the_sign_of_a_significant_difference():
    levels = Check("table2", "fr-en ours", "a", than="b", test="levels")
    base = ("b", "15.0", "", "1", "", "")
    assert claims.decide(levels, table(("a", "18.0", "", "1", "‡", "3.0"), base)).verdict == REPRODUCED
    assert claims.decide(levels, table(("a", "12.0", "", "1", "*", "-3.0"), base)).verdict == NOT_REPRODUCED
    assert claims.decide(levels, table(("a", "15.2", "", "1", "", "0.2"), base)).verdict == INCONCLUSIVE


def test_missing_inputs_are_inconclusive_with_the_reason():
    assert claims.decide(SPREAD, None, "not built").reason == "not built"
    empty = table(("a", "", "", "", "", ""), ("b", "31.0", "0.1", "1 2", "", ""))
    empty[0]["note"] = "decoded with beam size 5; fr-en: pair fr-en not configured; de-en: chosen among 3"
    outcome = claims.decide(SPREAD, empty)
    assert outcome.verdict == INCONCLUSIVE and outcome.reason.endswith("(fr-en: pair fr-en not configured)")
    assert "no row c" in claims.decide(Check("table1", "fr-en ours", "c", than="b"), empty).reason


def test_a_claim_needs_every_check():
    assert claims.verdict([claims.Outcome(REPRODUCED, "", "")] * 2) == REPRODUCED
    assert claims.verdict([claims.Outcome(REPRODUCED, "", ""), claims.Outcome(INCONCLUSIVE, "", "")]) == INCONCLUSIVE
    assert claims.verdict([claims.Outcome(INCONCLUSIVE, "", ""), claims.Outcome(NOT_REPRODUCED, "", "")]) == NOT_REPRODUCED


def artefact_rows(paper: str, artefact_id: str) -> set[str]:
    artefact = registry.artefact(paper, artefact_id)
    if isinstance(artefact, registry.ConvergenceTable):
        return {column.name for column in artefact.columns}
    return {row.experiment for row in artefact.rows}


@pytest.mark.parametrize("paper", registry.PAPERS)
def test_each_paper_states_three_claims_on_rows_its_tables_have(paper):
    stated = claims.paper_claims(paper)
    assert len(stated) >= 3 and len({c.id for c in stated}) == len(stated)
    for claim in stated:
        for check in claim.checks:
            if check.artefact.startswith("figure"):
                continue
            rows = artefact_rows(paper, check.artefact)
            assert check.row in rows and (check.than is None or check.than in rows), f"{paper} {claim.id}"


def test_the_tool_writes_every_claim_with_its_data_note(tmp_path):
    out = tmp_path / "results" / "claims"
    claims.main(["--papers", "tying", "joint", "--tables", "", "--data-notes", '{"tying": "demo", "joint": "demo"}',
                 "--out-prefix", str(out)])
    with out.with_suffix(".csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(claims.paper_claims("tying")) + len(claims.paper_claims("joint"))
    assert {r["verdict"] for r in rows} == {INCONCLUSIVE} and {r["data"] for r in rows} == {"demo"}
    assert "not built in this run" in rows[0]["decided by"]
    assert any("is a figure" in r["decided by"] for r in rows)


@pytest.mark.parametrize("configfile", ["config.yaml", "config.demo.yaml"])
def test_claims_and_ledgers_are_in_the_dag_of_all(configfile, tmp_path):
    import yaml

    from tests.test_workflow import planned_outputs

    config = yaml.safe_load((REPO / configfile).read_text())
    planned = planned_outputs(tmp_path, REPO / configfile)
    needed = claims.table_paths(layout.configured_artefacts(config))
    assert "results/claims.csv" in planned and needed and set(needed) <= planned
    assert {f"results/{paper}/deviations.md" for paper in config["papers"]} <= planned
