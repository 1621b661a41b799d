"""From a number to its code: what one experiment is, where it is used, how it trains, and the
code that computes its output layer and loss.

    python -m workflow_src.registry explain word2emb-fasttext-tied-nllvmf_reg1reg2
    python -m workflow_src.registry explain vmf table1 "NLLvMF reg1+reg2" fr-en
    python -m workflow_src.registry explain --config config.demo.yaml lm-small-real

A cell is named by its paper, its artefact and texts that pick it out: the row's labels, the
column's header, a system's name, a panel's title, the experiment's name (a rendered table's
footer lists its rows' experiments). Every cell all the texts name is explained; one experiment
at length, several as a list to narrow.

For each experiment: its definition in the paper modules (file:line), every table and figure cell
that uses it, the resolved training spec of one of its jobs under the config, its output layer,
loss (and negative sampler, log C_m) with file:line, and the rule that trains it and the models
it writes.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
from pathlib import Path

from workflow_src.atomic import described
from workflow_src import artefacts, layout, lm_specs, registry
from workflow_src.artefact_cells import Cell, base_name, matching_cells, uses
from workflow_src.config_check import read_checked
from workflow_src.model import lm, lm_losses, losses, output_layers, vmf
from workflow_src.model.joint import JointOutput
from workflow_src.papers import continuous_setup

ROOT = Path(__file__).resolve().parents[2]
TRAINING_RULES = {"translation": ("train", "rules/train.smk"), "language model": ("train_lm", "rules/lm.smk")}


def where(obj) -> str:
    """`path:line` of a function or class (its `def` or `class` line, after any decorator), the path
    from the repository root."""
    obj = inspect.unwrap(obj)
    lines, first = inspect.getsourcelines(obj)
    decorators = next(i for i, line in enumerate(lines) if not line.lstrip().startswith("@"))
    return f"{Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT)}:{first + decorators}"


def line_of(path: Path, text: str) -> int | None:
    return next((number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line), None)


def definitions(name: str) -> list[str]:
    """`path:line` where each paper module that declares `name` writes it out."""
    found = []
    for paper in registry.PAPERS:
        module = registry.paper_module(paper)
        if base_name(name) in {*getattr(module, "EXPERIMENTS", {}), *getattr(module, "LANGUAGE_MODELS", {})}:
            path, literal = Path(module.__file__), '"' + base_name(name) + '"'
            found.append(f"{path.relative_to(ROOT)}:{line_of(path, literal)}")
    return found


def kind_of(name: str) -> str:
    if base_name(name) in registry.all_experiments():
        return "translation"
    if base_name(name) in registry.language_models():
        return "language model"
    raise KeyError(f"unknown experiment or language model {name!r}")


def configured_jobs(config: dict, name: str) -> list[artefacts.Job]:
    """The jobs of `name` (an experiment, a language model or, for a base name, also its variants)
    that the config's artefacts read, in their order."""
    return [
        job
        for job in every_configured_job(json.dumps(config, sort_keys=True))
        if job.experiment == name or (name == base_name(name) and base_name(job.experiment) == name)
    ]


@functools.lru_cache(maxsize=4)
def every_configured_job(config_json: str) -> tuple[artefacts.Job, ...]:
    """Every model (translation or language) the artefacts of a config (as JSON: a cache key) read."""
    config, jobs = json.loads(config_json), {}
    for paper, artefact_id in layout.configured_artefacts(config):
        table, ctx = registry.artefact(paper, artefact_id), layout.context(config, paper, artefact_id)
        for path in layout.inputs(table, ctx, paper, artefact_id):
            if found := layout.trained_job(path):
                jobs.setdefault(found[0], None)
    return tuple(jobs)


def model_path(job: artefacts.Job) -> str:
    if job.pair == "lm":
        return f"{layout.lm_dir(job)}/model.pt"
    return f"{layout.model_dir(job.dataset, job.pair, job.experiment, job.seed)}/model.pt"


def spec_of(config: dict, job: artefacts.Job) -> dict:
    if job.pair == "lm":
        return lm_specs.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
    return layout.resolve_spec(config, job.dataset, job.pair, job.experiment, job.seed)


def code(name: str) -> list[str]:
    """The output layer, loss and what they call, each `what: path:line`."""
    if kind_of(name) == "language model":
        model = registry.language_model(name)
        objective = "beta" if model.beta is not None else "augmented" if model.augmented else "ce"
        return [
            f"model: LSTMLanguageModel, {'reused embeddings (W = L^T)' if model.reuse_embedding else 'untied'}: "
            f"{where(lm.LSTMLanguageModel)}",
            f"loss: lm_losses.OBJECTIVES[{objective!r}]: {where(lm_losses.OBJECTIVES[objective][1])}",
        ]
    experiment = registry.experiment(name)
    lines = [f"output layer chosen by: build_output_layer: {where(output_layers.build_output_layer)}"]
    if experiment.output_layer == "continuous":
        preset, presets = base_name(name).rsplit("-", 1)[1], Path(continuous_setup.__file__)
        preset_line = line_of(presets, f'"{preset}":')
        lines += [
            f"output layer: ContinuousOutput: {where(output_layers.ContinuousOutput)}",
            f"loss preset {preset!r} of LOSSES: {presets.relative_to(ROOT)}:{preset_line}",
            f"loss: losses.CONTINUOUS_LOSSES[{experiment.loss!r}] {dict(experiment.loss_params)}: "
            f"{where(losses.CONTINUOUS_LOSSES[experiment.loss])}",
        ]
        if experiment.negative:
            lines.append(
                f"negative sampler: losses.NEGATIVES[{experiment.negative!r}]: "
                f"{where(losses.NEGATIVES[experiment.negative])}"
            )
        if experiment.loss.startswith("nllvmf"):
            lines.append(f"log C_m(kappa): {where(vmf.log_cm)}")
    else:
        form = experiment.output_form or ("tied" if experiment.embeddings else "nmt")
        lines += [
            f"output layer: JointOutput, form {form!r}"
            + (f", d_j {experiment.joint_dim}" if experiment.joint_dim else "")
            + (f", sampled share {experiment.sample_share:g}" if experiment.sample_share else "")
            + f": {where(JointOutput)}",
            f"loss: cross-entropy: {where(losses.cross_entropy)}",
        ]
    return lines


def explain(config: dict, config_name: str, name: str, cells: list[Cell] = ()) -> str:
    """The report on one experiment; `cells`: those the user named (their data set and pair pick
    the job whose spec is shown)."""
    kind = kind_of(name)
    definition = registry.language_model(name) if kind == "language model" else registry.experiment(name)
    lines = [f"{kind} {name}", f"  defined at: {', '.join(definitions(name))}", f"  {definition}", "", "used by:"]
    lines += [f"  {cell.describe()}" for cell in uses(name)] or ["  no table or figure"]
    jobs = configured_jobs(config, name)
    places = {(cell.dataset, cell.pair) for cell in cells}
    chosen = [job for job in jobs if not places or (job.dataset, job.pair) in places] or jobs
    rule, rules_file = TRAINING_RULES[kind]
    lines += [
        "",
        f"trained by: rule {rule} ({rules_file}:{line_of(ROOT / rules_file, f'rule {rule}:')}), "
        f"{len(jobs)} job{'' if len(jobs) == 1 else 's'} under {config_name}"
        + (f" (paths in its workdir, {config['workdir']}/)" if "workdir" in config else "")
        + ":",
    ]
    lines += [f"  {model_path(job)}" for job in jobs] or [f"  none: no artefact {config_name} configures reads it"]
    lines += ["", "code:", *(f"  {line}" for line in code(name))]
    if chosen:
        job = chosen[0]
        lines += [
            "",
            f"spec of {model_path(job)} under {config_name}:",
            json.dumps(spec_of(config, job), indent=2, ensure_ascii=False),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workflow_src.registry", description=described(__doc__))
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("explain", help="an experiment, or a table cell, down to its code")
    command.add_argument("--config", default="config.yaml", help="the config whose spec and jobs to show")
    command.add_argument(
        "name",
        nargs="+",
        metavar="NAME | PAPER ARTEFACT [TEXT ...]",
        help="an experiment or language model; or a paper, an artefact and the texts naming a cell",
    )
    args = parser.parse_args(argv)
    if not Path(args.config).is_file():
        raise SystemExit(f"explain: --config {args.config}: no such file (run from the repository's root)")
    config = read_checked(args.config)
    try:
        if len(args.name) == 1:
            print(explain(config, args.config, args.name[0]), end="")
            return
        paper, artefact_id, *texts = args.name
        cells = matching_cells(paper, artefact_id, texts)
    except KeyError as error:
        raise SystemExit(f"explain: {error.args[0]}")
    experiments = list(dict.fromkeys(cell.experiment for cell in cells))
    if len(experiments) == 1:
        print(explain(config, args.config, experiments[0], cells), end="")
        return
    print(f"{len(cells)} cells of {paper} {artefact_id} match; add a text to pick one, or explain its experiment:")
    for cell in cells:
        print(f"  {cell.describe()}: {cell.experiment}")
