"""Pages a reader takes in at a glance: every figure of the demo drawn from fake results and
inspected as matplotlib objects (series distinct, legends over no data, text inside its panel,
titles that say what was trained), the tables' reading view (no signature column, nothing repeated
on every row), the claims page's tally and verdict colours, and the report's landing page and menus.
Small and fast: no training, no browser."""

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import yaml
from matplotlib.collections import PolyCollection
from matplotlib.patches import Rectangle

from workflow_src import artefacts, layout, registry, tables
from workflow_src.artefacts import LearningCurves, MeteorByFrequency, PerplexityCurves, SubspaceSweep, Throughput
from tests.markdown_tables import check_tables
from workflow_src.plan import tables as plan_tables
from workflow_src.report import claims, claims_page, figures, render, training_diagnostics

REPO = Path(__file__).resolve().parents[1]
DEMO = yaml.safe_load((REPO / "config.demo.yaml").read_text())
FIGURES = [(paper, a) for paper, a in layout.configured_artefacts(DEMO) if a.startswith("figure")]


# -- fake results: every file a figure reads, with plausible numbers ---------------------------------
def write_json(path: str, value) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(value))


def write_lines(path: str, records: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in records))


REFERENCES = ["the cat sat on the mat", "a dog runs in the park", "we like green tea", "it rains today"]


def fake_translation_model(job: artefacts.Job, k: int, figure_id: tuple[str, str]) -> None:
    write_lines(
        layout.metrics_path(job), [{"epoch": e, "dev_bleu": 5.0 * e + k + job.seed, "best": True} for e in range(1, 5)]
    )
    for search in ("greedy", "beam5"):
        for metric in ("bleu", "bleu_tok"):
            write_json(
                layout.score_path(job.dataset, job.pair, job.experiment, job.seed, search, metric),
                {"score": 20.0 + k + job.seed},
            )
        for tokenized in (False, True):  # the test sentences a figure's BLEU evidence reads
            hypotheses = Path(
                layout.hypothesis_path(job.dataset, job.pair, job.experiment, job.seed, search, tokenized)
            )
            shift = k % len(REFERENCES)  # the references rotated: a BLEU that differs by system
            hypotheses.write_text("\n".join(REFERENCES[shift:] + REFERENCES[:shift]) + "\n")
        write_json(
            layout.meteor_bins_path(job, *figure_id, search),
            {
                "signature": "meteor: fake",
                "parameters": {"alpha": 0.85, "beta": 0.2, "gamma": 0.6, "delta": 0.0, "weights": [1.0]},
                "bins": {
                    b: {"score": 0.3 + 0.05 * k + 0.01 * job.seed, "sentences": [[4, 4, 2, 2, 1, 3, 1, 2, 1, 2]]}
                    for b in ("high", "medium", "low")
                },
            },
        )


def fake_language_model(job: artefacts.Job, k: int) -> None:
    units = DEMO["lm"]["sizes"][registry.language_model(job.experiment).size]
    folder = layout.lm_dir(job)
    write_lines(f"{folder}/metrics.jsonl", [{"epoch": e, "valid_perplexity": 300.0 / e + k} for e in range(1, 4)])
    write_json(
        f"{folder}/perplexity.json",
        {
            "valid_perplexity": 100.0 + k + job.seed,
            "units": units,
            "train_tokens": 20000,
            "subspace_distance": 0.1 * (k % 10) + 0.01 * job.seed,
        },
    )


def fake_results(figure: artefacts.Figure, ctx: artefacts.Context, paper: str, artefact_id: str) -> None:
    """Under the current directory, every result the figure's panels read."""
    for panel in figure.panels:
        if isinstance(panel, Throughput):
            repeats = {
                s.experiment: {str(b): [1000.0 * (k + 1) * b**0.5 + r for r in range(5)] for b in (16, 32, 64)}
                for k, s in enumerate(panel.systems)
            }
            write_json(
                layout.benchmark_path(paper, artefact_id),
                {
                    "systems": {e: {b: sum(r) / 5 for b, r in points.items()} for e, points in repeats.items()},
                    "repeats": repeats,
                    "batch_sizes": [16, 32, 64],
                    "note": "fake benchmark " * 20,
                },
            )
        elif isinstance(panel, (PerplexityCurves, SubspaceSweep)):
            experiments = (
                [name for _, name in ctx.sweep(panel)]
                if isinstance(panel, SubspaceSweep)
                else [c for s in panel.systems for c in ctx.candidates(s.experiment, s.tune, panel.corpus.base)]
            )
            for k, experiment in enumerate(experiments):
                for job in ctx.lm_jobs(panel.corpus, experiment):
                    fake_language_model(job, k)
        else:
            systems = (
                panel.systems
                if isinstance(panel, (LearningCurves, MeteorByFrequency))
                else [artefacts.System(panel.name, e) for _, e in panel.points] + list(panel.baselines)
            )
            for k, system in enumerate(systems):
                for job in ctx.system_jobs(panel.column, system):
                    fake_translation_model(job, k, (paper, artefact_id))
            if not ctx.status(panel.column):
                Path(layout.references_path(panel.column)).parent.mkdir(parents=True, exist_ok=True)
                Path(layout.references_path(panel.column)).write_text("\n".join(REFERENCES) + "\n")


@pytest.fixture(scope="module", params=FIGURES, ids=[f"{p}-{a}" for p, a in FIGURES])
def demo_figure(request, tmp_path_factory):
    """(paper, artefact id, the matplotlib figure) of one demo figure, drawn from fake results."""
    paper, artefact_id = request.param
    folder = tmp_path_factory.mktemp(f"{paper}-{artefact_id}")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        artefact = registry.artefact(paper, artefact_id)
        ctx = layout.context(DEMO, paper, artefact_id)
        fake_results(artefact, ctx, paper, artefact_id)
        fig, _, _ = figures.make_figure(
            artefact, ctx, paper, artefact_id, f"{paper} {artefact_id}: {artefact.title}", "synthetic demo world " * 10
        )
    fig.canvas.draw()
    yield paper, artefact_id, fig
    plt.close(fig)


def series_looks(ax) -> list[tuple]:
    """(colour, line style, marker, hatch) of each labelled series of a panel."""
    looks = [
        (line.get_color(), str(line.get_linestyle()), str(line.get_marker()), "")
        for line in ax.get_lines()
        if not line.get_label().startswith("_")
    ]
    bars = {}
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_label() and not patch.get_label().startswith("_"):
            bars[patch.get_label()] = (tuple(patch.get_facecolor()), "", "", patch.get_hatch() or "")
    for container in ax.containers:
        label = container.get_label()
        if label and not label.startswith("_"):
            patch = container.patches[0]
            bars[label] = (tuple(patch.get_facecolor()), "", "", patch.get_hatch() or "")
    return looks + list(bars.values())


def test_every_series_of_a_panel_looks_different(demo_figure):
    _, _, fig = demo_figure
    for ax in fig.axes:
        looks = series_looks(ax)
        assert len(set(looks)) == len(looks), f"{ax.get_title()!r}: two series look the same: {looks}"
        colours = [look[0] for look in looks]
        assert len(set(colours)) == len(colours), f"{ax.get_title()!r}: two series share a colour"


def data_extents(ax) -> list:
    """Display-space boxes of a panel's data: every plotted point, bar and shaded range."""
    boxes = []
    for line in ax.get_lines():
        for x, y in ax.transData.transform(line.get_xydata()):
            boxes.append((x, y, x, y))
    for artist in [*ax.patches, *(c for c in ax.collections if isinstance(c, PolyCollection))]:
        extent = artist.get_window_extent()
        boxes.append((extent.x0, extent.y0, extent.x1, extent.y1))
    return boxes


def test_legends_cover_no_data_and_empty_panels_have_none(demo_figure):
    _, _, fig = demo_figure
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if not ax.get_legend_handles_labels()[0]:
            assert legend is None, f"{ax.get_title()!r}: an empty panel carries a legend box"
            assert ax.has_data() or not (ax.get_xticks().size or ax.get_yticks().size), "an empty panel with ticks"
            continue
        assert legend is not None, f"{ax.get_title()!r}: series without a legend"
        box = legend.get_window_extent(renderer)
        for x0, y0, x1, y1 in data_extents(ax):
            assert x1 < box.x0 or x0 > box.x1 or y1 < box.y0 or y0 > box.y1, (
                f"{ax.get_title()!r}: the legend covers data at {(x0, y0, x1, y1)}"
            )


def test_text_stays_in_its_own_panel(demo_figure):
    """A title, note, legend or an empty panel's reason starts no left of its panel's plot and ends
    before the next panel's axis labels: it never runs into the neighbouring panel."""
    _, _, fig = demo_figure
    renderer = fig.canvas.get_renderer()
    panels = sorted(fig.axes, key=lambda ax: ax.bbox.x0)
    for k, ax in enumerate(panels):
        start = ax.bbox.x0
        end = panels[k + 1].yaxis.get_tightbbox(renderer).x0 if k + 1 < len(panels) else fig.bbox.width
        legend = ax.get_legend()
        for text in [*ax.texts, ax.title, *(legend.get_texts() if legend else [])]:
            if not text.get_text():
                continue
            box = text.get_window_extent(renderer)
            assert start - 2 <= box.x0 and box.x1 <= end, (
                f"{ax.get_title()!r}: {text.get_text()[:60]!r} spans x {box.x0:.0f}-{box.x1:.0f}, its panel "
                f"{start:.0f}-{end:.0f}"
            )
            assert box.y0 >= -1 and box.y1 <= fig.bbox.height + 1, f"{text.get_text()[:60]!r} leaves the figure"


def test_titles_and_legends_say_what_was_trained(demo_figure):
    """A language model's panel names the width this run trained (config lm.sizes), not only the
    paper's; a legend says "1 run" (no range) or the mean of how many."""
    paper, artefact_id, fig = demo_figure
    artefact = registry.artefact(paper, artefact_id)
    for ax, panel in zip(fig.axes, artefact.panels, strict=True):
        labels = ax.get_legend_handles_labels()[1]
        for label in labels:
            assert "1 runs" not in label and not re.fullmatch(r"range|mean of \d+ runs", label), label
        if isinstance(panel, (PerplexityCurves, SubspaceSweep)):
            experiments = (
                [name for _, name in layout.context(DEMO, paper, artefact_id).sweep(panel)]
                if isinstance(panel, SubspaceSweep)
                else [s.experiment for s in panel.systems]
            )
            widths = {DEMO["lm"]["sizes"][registry.language_model(e).size] for e in experiments}
            assert all(f"{w} units" in ax.get_title() or f"/ {w} units" in ax.get_title() for w in widths), (
                ax.get_title()
            )


# -- tables -----------------------------------------------------------------------------------------------
LONG_NOTE = "en-fr: pair en-fr not configured for iwslt16 (datasets, or this artefact's pairs)"
SIGNATURE = "bleu: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.5.1"


def table_rows() -> tuple[list[str], list[dict]]:
    columns = ["experiment", "loss", "fr-en paper", "fr-en ours", "empty", "seeds", "signature", "note"]
    rows = [
        {
            "experiment": f"e{k}",
            "loss": f"loss {k}",
            "fr-en paper": 30.0 + k,
            "fr-en ours": 20.0 + k,
            "seeds": "1 2 3",
            "signature": SIGNATURE,
            "note": f"{LONG_NOTE}; decoded with beam size 5" + ("; tuned" if k == 2 else ""),
        }
        for k in range(4)
    ]
    return columns, rows


def html_columns(page: str) -> list[str]:
    return re.findall(r"<th>(.*?)</th>", page.split("</thead>")[0])


def html_cells(page: str) -> list[list[str]]:
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("</tr>") if row]


def test_a_tables_page_has_no_signature_column_and_nothing_repeated_on_every_row():
    columns, rows = table_rows()
    page = tables.to_html("t", "data", columns, rows, ["footer line"])
    shown = html_columns(page)
    assert "signature" not in shown and "experiment" not in shown
    cells = html_cells(page)
    for k, column in enumerate(shown):
        values = {row[k] for row in cells}
        assert not (len(values) == 1 and len(values.pop()) >= tables.SHARED_MIN_LENGTH), (
            f"{column}: the same on every row"
        )
    note = html.escape(LONG_NOTE)
    assert note not in "".join(map(str, cells)) and page.count(note) == 1  # once, under the table
    assert page.count(SIGNATURE.split(": ")[1]) == 1 and "footer line" in page
    assert [row[shown.index("note")] for row in cells] == ["", "", "tuned", ""]
    assert "<td>20.00</td>" in page  # numbers stay in the table, plain cells
    assert "empty" not in shown and "Empty on every row, so not shown: empty." in page
    markdown = tables.to_markdown("t", "data", columns, rows)
    assert "signature" not in markdown.splitlines()[4] and markdown.count(LONG_NOTE) == 1
    assert tables.to_csv(columns, rows).count(LONG_NOTE) == 4  # the CSV keeps every row whole


def test_a_short_words_cell_is_not_broken_at_its_hyphen():
    """At 1,400 px a narrow column broke "de-en" and "VD-LSTM+RE" at the hyphen; a one-word cell of
    up to tables.SHORT_WORD characters keeps its line, longer text and numbers wrap as before."""
    page = tables.to_html(
        "t",
        "data",
        ["pair", "model", "n", "note"],
        [
            {"pair": pair, "model": f"word2emb-fasttext-tied-nllvmf-{k}", "n": 1.5 + k, "note": f"a b {k}"}
            for k, pair in enumerate(("de-en", "fr-en"))
        ],
    )
    assert "<td class='text word'>de-en</td>" in page and "td.word{white-space:nowrap}" in page
    assert (
        "<td class='text'>word2emb" in page and "<td>1.50</td>" in page and "<td class='text note'>a b 0</td>" in page
    )


def test_a_single_rows_table_keeps_its_cells():
    columns, rows = table_rows()
    page = tables.to_html("t", "data", columns, rows[:1])
    assert (
        "note" in html_columns(page) and html.escape(LONG_NOTE) in html_cells(page)[0][html_columns(page).index("note")]
    )


def wide_table() -> tuple[list[str], list[dict]]:
    """A table as wide as vMF Table 1: 15 rows, 4 labels, 3 pairs of 5 numbers, seeds, signature, note."""
    pairs = ("fr-en", "de-en", "en-fr")
    columns = [
        "experiment",
        "input",
        "output",
        "loss",
        "embeddings",
        *(f"{pair} {kind}" for pair in pairs for kind in ("paper", "ours", "sd", "significance", "diff")),
        "seeds",
        "signature",
        "note",
    ]
    rows = [
        {
            "experiment": f"word2emb-fasttext-tied-nllvmf_reg1reg2-{k}",
            "input": "word",
            "output": "emb",
            "loss": f"NLLvMF reg1+reg2 variant {k}",
            "embeddings": "fastText (tied)",
            **{f"{pair} {kind}": 30.0 + k for pair in pairs[:2] for kind in ("paper", "ours", "sd", "diff")},
            "fr-en significance": "∗†",
            "seeds": "1 2 3",
            "signature": f"{SIGNATURE} | meteor: {SIGNATURE}",
            "note": f"{LONG_NOTE}; de-en: decoded with beam size 5" + ("; tuned γ = 0.5" if k % 4 == 0 else ""),
        }
        for k in range(15)
    ]
    return columns, rows


def test_a_wide_table_fits_1400_px(tmp_path):
    """No column is wider than its longest unbreakable word needs, and those add up to less than 1,400
    px (about 8 px a character at 14 px, 13 px of padding and border a cell); where Chromium is at
    hand, the page as it lays out at 1,400 px scrolls no further sideways."""
    columns, rows = wide_table()
    view = tables.for_reading(columns, rows)
    narrowest = sum(
        13
        + 8
        * max(len(word) for text in [column, *(cell[column] for cell in view.rows)] for word in (text.split() or [""]))
        for column in view.columns
    )
    assert narrowest < 1400, f"the table needs at least {narrowest} px: {view.columns}"
    chromium = shutil.which("chromium")
    if chromium is None:
        return
    page = tables.to_html("t", "data", columns, rows).replace(
        "</body>", "<script>document.title = 'width ' + document.documentElement.scrollWidth</script></body>"
    )
    (tmp_path / "t.html").write_text(page)
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--window-size=1400,2000",
            "--dump-dom",
            (tmp_path / "t.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    width = int(re.search(r"<title>width (\d+)</title>", dom).group(1))
    assert width <= 1400, f"the page is {width} px wide at 1,400"


def test_a_pipe_or_a_line_break_in_a_cell_keeps_the_markdown_table_whole(tmp_path):
    """`|` in a header or cell (joint's |Θ| columns, the claims' |V|, the diagnostics' |g_out(E)|) and a
    line break in a cell: GitHub's parser finds each table, every row with its header's columns and
    each cell's own text: the tables of a rendered table, the claims page (its tally and claims), the
    training diagnostics and the plan."""
    columns = ["experiment", "loss", "fr-en |Θ| paper", "fr-en |Θ| ours", "note"]
    rows = [
        {
            "experiment": f"e{k}",
            "loss": "a|b",
            "fr-en |Θ| paper": 65.0 + k,
            "fr-en |Θ| ours": 0.5,
            "note": f"first line {k}\nsecond | line",
        }
        for k in range(2)
    ]
    (table,) = check_tables(tables.to_markdown("t", "data", columns, rows, ["under |x|"]), "a rendered table")
    assert table == [
        ["loss", "fr-en |Θ| paper", "fr-en |Θ| ours", "note"],
        ["a|b", "65.00", "0.50", "first line 0 second | line"],
        ["a|b", "66.00", "0.50", "first line 1 second | line"],
    ]
    papers = list(registry.PAPERS)
    claims_page.main(
        [
            "--papers",
            *papers,
            "--evidence",
            "--data-notes",
            json.dumps({p: "demo" for p in papers}),
            "--out-prefix",
            str(tmp_path / "claims"),
        ]
    )
    tally, listed = check_tables((tmp_path / "claims.md").read_text(), "claims.md")
    assert len(listed) - 1 == sum(len(claims.paper_claims(p)) for p in papers) and any(
        "|V|" in "".join(r) for r in listed
    )
    training_diagnostics.write([], "data", tmp_path / "diagnostics")
    (header,) = check_tables((tmp_path / "diagnostics.md").read_text(), "training_diagnostics.md")[0]
    assert header == training_diagnostics.COLUMNS
    assert check_tables("\n".join(plan_tables.to_markdown(["a |b|"], [{"a |b|": 1.0}])), "plan") == [[["a |b|"], ["1"]]]


# -- claims ------------------------------------------------------------------------------------------------
def test_the_claims_page_opens_with_a_tally_per_paper_and_colours_each_verdict(tmp_path):
    papers = ["vmf", "tying"]
    claims_page.main(
        [
            "--papers",
            *papers,
            "--evidence",
            "--data-notes",
            json.dumps({p: "demo" for p in papers}),
            "--out-prefix",
            str(tmp_path / "claims"),
        ]
    )
    page = (tmp_path / "claims.html").read_text()
    tally, table = page.split("</table>")[:2]
    assert html_columns(tally + "</table>") == ["paper", *claims.VERDICT_HEADINGS.values(), "claims"]
    counts = {row[0]: row for row in html_cells(tally + "</table>")}
    for paper in papers:
        total = len(claims.paper_claims(paper))
        assert counts[paper] == [paper, "0", "0", "0", str(total), "0", str(total)]  # nothing built: not decidable
    assert "<td class='text not-decidable'>not decidable</td>" in table
    for verdict in claims.VERDICTS:
        assert f"td.{verdict.replace(' ', '-')}{{background:" in page
    markdown = (tmp_path / "claims.md").read_text()
    assert markdown.index("| paper | reproduced |") < markdown.index("| id | claim |")


# -- the report -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "config_file, data, named",
    [
        ("config.demo.yaml", "synthetic demo world", "``config.demo.yaml``"),
        ("config.yaml", "real corpora", "``config.yaml``"),
    ],
)
def test_the_reports_landing_page_says_what_data_and_config_the_run_used(config_file, data, named):
    import jinja2
    from docutils.core import publish_parts

    class Snakemake:  # what Snakemake's report gives the page's template
        config = yaml.safe_load((REPO / config_file).read_text())

    text = jinja2.Environment().from_string((REPO / "report" / "workflow.rst").read_text()).render(snakemake=Snakemake)
    assert data in text and named in text
    for dataset in Snakemake.config["datasets"]:
        assert dataset in text
    assert "synthetic" not in text if config_file == "config.yaml" else "not the papers' data" in text
    publish_parts(text, writer="html")  # valid reStructuredText


def test_the_reports_menus_sort_artefacts_by_number():
    """The report sorts an artefact's label as text (JavaScript's localeCompare): table 2 before table 10."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    for paper, ids in config["papers"].items():
        in_order = sorted(ids, key=lambda a: (re.sub(r"\d", "", a), int(re.sub(r"\D", "", a))))
        labels = [render.report_label(a) for a in in_order]
        assert sorted(labels) == labels, paper
    assert render.report_label("table10") == "table 10" and render.report_label("figure2") == "figure 02"
    rules = (REPO / "rules" / "report.smk").read_text()
    assert rules.count('labels=lambda w: {"artefact": render.report_label(w.artefact)}') == 2
