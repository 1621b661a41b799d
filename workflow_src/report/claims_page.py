"""The claims page: a row per claim of each paper, decided by `workflow_src/report/claims.py`, with a
tally per verdict, as CSV, Markdown and HTML.

`python -m workflow_src.report.claims_page --papers vmf joint --evidence results/joint/table2.evidence.json ...
 --data-notes JSON [--synthetic-data] --out-prefix results/claims`
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
from pathlib import Path

from workflow_src.atomic import described, write_text
from workflow_src.report.claims import (
    ALPHA,
    INCONCLUSIVE,
    NOT_COMPARABLE,
    NOT_DECIDABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    STILL_LEARNING,
    TARGET_POWER,
    VERDICT_HEADINGS,
    VERDICTS,
    Outcome,
    decide_claim,
    decide_in_run,
    evidence_path,
    pair_name,
    paper_claims,
    paper_gap,
    read_evidence,
    table_mark_note,
)
from workflow_src.paper_records import Check


LATEX_SYMBOLS = {
    r"\ell": "ℓ",
    r"\kappa": "κ",
    r"\log": "log",
    r"\rightarrow": "→",
    r"\approx": "≈",
    r"\mathcal{V}": "𝒱",
}
SUBSCRIPTS = dict(zip("0123456789jm", "₀₁₂₃₄₅₆₇₈₉ⱼₘ", strict=True))


def as_read(quote: str) -> str:
    """A quote's inline maths ($...$) as the paper prints it: "$\\ell_2$" → "ℓ₂", "$d_j=512$" → "dⱼ=512",
    "$L^T$" → "Lᵀ"; a symbol the extraction left outside $...$ too ("Fi \\rightarrow En"). The claim
    keeps the extracted text, LaTeX included, which tests find in the paper."""

    def subscript(match: re.Match) -> str:
        letters = match.group(1)
        return "".join(SUBSCRIPTS[c] for c in letters) if all(c in SUBSCRIPTS for c in letters) else match.group(0)

    def render(match: re.Match) -> str:
        return re.sub(r"_\{?(\w+)\}?", subscript, match.group(1).strip()).replace("^T", "ᵀ")

    for macro, symbol in LATEX_SYMBOLS.items():
        quote = quote.replace(macro, symbol)
    return re.sub(r"\$([^$]*)\$", render, quote)


def grouped(outcomes: list[Outcome]) -> list[str]:
    """The checks' reasons (a gap not decidable: its parts'), each once, with the runs still learning
    in one reason and the cells missing from one artefact in one, each where the first of them was:
    "table1 has no evidence for a (fr-en, de-en), b (de-en): not configured ..."."""
    learning: dict[str, None] = {}
    # (artefact, why) -> name -> where (ordered, once each)
    absent: dict[tuple[str, str], dict[str, dict[str, None]]] = {}
    kept: list[str | tuple[str, ...]] = []  # a reason, or the place of the learning runs' or an artefact's
    for outcome in (part for o in outcomes for part in (o.undecided or (o,))):
        if outcome.learning:
            kept.append(("learning",))
            learning.update(dict.fromkeys(outcome.learning))
        elif outcome.absent is not None:
            artefact, name, where, why = outcome.absent
            kept.append(("absent", artefact, why))
            absent.setdefault((artefact, why), {}).setdefault(name, {})[where] = None
        elif outcome.reason:
            kept.append(outcome.reason)

    def text(piece: str | tuple[str, ...]) -> str:
        if isinstance(piece, str):
            return piece
        if piece == ("learning",):
            return f"{STILL_LEARNING}: {'; '.join(learning)}"
        _, artefact, why = piece
        names = absent[artefact, why]
        return (
            f"{artefact} has no evidence for "
            + ", ".join(f"{name} ({', '.join(wheres)})" for name, wheres in names.items())
            + f": {why}"
        )

    return [text(piece) for piece in dict.fromkeys(kept)]


def claim_rows(
    papers: list[str], found: dict[str, dict], data_notes: dict[str, str], synthetic: bool = False
) -> list[dict]:
    """One row per claim of `papers`, decided on `found` (evidence path -> its cells); `synthetic`:
    the run's data are the demo's, so claims against a printed number are not compared."""
    rows = []
    for paper in papers:
        for claim in paper_claims(paper):
            outcomes = [decide_in_run(paper, check, found) for check in claim.checks]
            notes = [
                table_mark_note(paper, check, found[evidence_path(paper, check.artefact)], outcome)
                if outcome.test is not None and isinstance(check, Check)
                else ""
                for check, outcome in zip(claim.checks, outcomes)
            ]
            gaps = [paper_gap(paper, check) for check in claim.checks]
            decision = decide_claim(claim, outcomes, gaps, synthetic, paper)
            named = [  # a test's reason says which check it decided
                dataclasses.replace(o, reason=f"{pair_name(check, paper)}: {o.reason}") if o.test is not None else o
                for check, o in zip(claim.checks, outcomes)
            ]
            reasons = [*grouped(named), *filter(None, notes)]
            rows.append(
                {
                    "id": f"{paper}:{claim.id}",
                    "paper": paper,
                    "claim": claim.statement,
                    "the paper says": f'"{as_read(claim.quote)}" ({claim.where})',
                    "measure": claim.measure,
                    "paper's numbers": claim.paper,
                    "ours": "; ".join(o.ours for o in outcomes if o.ours),
                    "verdict": decision.shown,
                    "power": decision.power,
                    "decided by": "; ".join(filter(None, [decision.reason, *reasons])),
                    "data": data_notes.get(paper, ""),
                }
            )
    return rows


COLUMNS = ["id", "claim", "the paper says", "measure", "paper's numbers", "ours", "verdict", "power", "decided by"]
# a colour per verdict (background, text), in the HTML and the report
VERDICT_COLOURS = {
    REPRODUCED: ("#d8f0d8", "#14532d"),
    NOT_REPRODUCED: ("#f8d7da", "#7f1d1d"),
    INCONCLUSIVE: ("#fff1c2", "#6b4e00"),
    NOT_DECIDABLE: ("#e8e8e8", "#333333"),
    NOT_COMPARABLE: ("#dde7f5", "#1e3a5f"),
}
VERDICT_STYLE = "".join(
    f"td.{verdict.replace(' ', '-')}{{background:{background};color:{text};font-weight:600}}"
    for verdict, (background, text) in VERDICT_COLOURS.items()
)


def base_verdict(shown: str) -> str:
    """The verdict of a shown one ("reproduced (one seed: test-set variance only)")."""
    return shown.split(" (")[0]


def tally(rows: list[dict], papers: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """(columns, cells): how many claims of each paper reached each verdict."""
    columns = ["paper", *VERDICT_HEADINGS.values(), "claims"]
    cells = []
    for paper in papers:
        verdicts = [base_verdict(row["verdict"]) for row in rows if row["paper"] == paper]
        cells.append(
            {
                "paper": paper,
                **{VERDICT_HEADINGS[v]: str(verdicts.count(v)) for v in VERDICTS},
                "claims": str(len(verdicts)),
            }
        )
    return columns, cells


def verdict_class(column: str, text: str) -> str:
    """A claims row's verdict cell, and a tally's non-zero count, in its verdict's colour."""
    by_heading = {heading: verdict for verdict, heading in VERDICT_HEADINGS.items()}
    verdict = base_verdict(text) if column == "verdict" else by_heading.get(column, "") if text not in ("", "0") else ""
    return verdict.replace(" ", "-") if verdict in VERDICTS else ""


FOOTER = [
    f"Each check is decided by a test that fits its evidence, at p < {ALPHA:g}: BLEU, perplexity, F1, METEOR and a "
    "word's mean probability by a paired bootstrap over test sentences (or blocks of test tokens), each system's "
    "seeds resampled too (at one seed it measures the test set's variance only, and the verdict says so); timings "
    "and per-seed values by a t-test "
    "(Welch's) over their timed repeats or seeds; parameter counts, which are exact, by the numbers themselves "
    "(workflow_src/report/claims.py). A claim is reproduced when every "
    "check is; not reproduced when Holm's correction over its checks' reverse tests rejects one; a pooled claim (many "
    'cells with small gaps, "in all cases") is decided by one paired bootstrap of the mean gain over its cells; a '
    'check that one gap is wider than another ("AL gains more on PTB") by the same bootstrap of the difference of '
    "the two gaps, on one draw of test units where they share a test set (timings: Welch's t of the difference). Not "
    "decidable: a check's evidence is missing in this run, comes from runs still learning when their training "
    "stopped, or is a ratio with a score of 0; not comparable: on synthetic data, a check against a number "
    "the paper prints; inconclusive: too little evidence either way.",
    "Power: the chance this run could reproduce the claim if the paper's own gaps were the truth, from this run's "
    f"spread (normal approximation; the product over a claim's checks), and the seeds (or timed repeats) that would "
    f"give {TARGET_POWER:.0%}: the seeds' share of the spread shrinks with more seeds, the test set's does not.",
    "Score tables with significance marks: synmargin Table 1 marks its gains with this page's test, so the two agree; "
    "where the joint paper's tables (their own two-sided test, seeds held) answer a check's pair differently, the "
    "check's reasons say so.",
]


def main(argv: list[str] | None = None) -> None:
    from workflow_src import tables

    parser = argparse.ArgumentParser(description=described(__doc__))
    parser.add_argument("--papers", nargs="+", required=True)
    parser.add_argument("--evidence", nargs="*", default=[], help="the evidence files built in this run")
    parser.add_argument("--data-notes", type=json.loads, required=True, help="JSON: paper -> its data note")
    parser.add_argument(
        "--synthetic-data",
        action="store_true",
        help="the data are synthetic (the demo): claims against a number the paper prints are not compared",
    )
    parser.add_argument("--out-prefix", type=Path, required=True)
    args = parser.parse_args(argv)
    found = {os.path.normpath(path): read_evidence(path) for path in args.evidence if path}
    rows = claim_rows(args.papers, found, args.data_notes, args.synthetic_data)
    notes = sorted(set(args.data_notes.values()))
    data_note = notes[0] if len(notes) == 1 else "per row (the CSV's data column)"
    title = "Headline claims of the papers, and whether this run reproduces them"
    tally_columns, tally_cells = tally(rows, args.papers)
    prefix = args.out_prefix  # the CSV keeps each row's own data note
    markdown = tables.to_markdown(
        title,
        data_note,
        COLUMNS,
        rows,
        FOOTER,
        before=["Claims per verdict:", "", *tables.markdown_table(tally_columns, tally_cells), ""],
    )
    write_text(prefix.with_suffix(".csv"), tables.to_csv(COLUMNS + ["data"], rows))
    write_text(prefix.with_suffix(".md"), markdown)
    write_text(
        prefix.with_suffix(".html"),
        tables.to_html(
            title,
            data_note,
            COLUMNS,
            rows,
            FOOTER,
            cell_class=verdict_class,
            style=VERDICT_STYLE,
            before="<p>Claims per verdict:</p>" + tables.html_table(tally_columns, tally_cells, verdict_class),
        ),
    )
    print(markdown)


if __name__ == "__main__":
    main()
