"""The jobs a plan covers (every training of the configured tables, from the registry), the sizes
they train on (prepared statistics, else the papers' stated sizes) and the families they share a
step's cost with."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from workflow_src import artefacts, layout, lm_specs, registry
from workflow_src.data.statistics import STATED

SEARCH = re.compile(r"\.(greedy|beam(\d+))\.")


@dataclasses.dataclass
class PlannedJob:
    """One trained model, the artefacts that need it and the searches decoded with it."""

    kind: str  # nmt | lm
    dataset: str
    pair: str  # "lm" for language models
    experiment: str
    seed: int
    artefacts: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    searches: set[str] = dataclasses.field(default_factory=set)
    exclusive: bool = False  # its training time is reported: it holds a whole device (layout.timed_training_jobs)


@dataclasses.dataclass(frozen=True)
class Corpus:
    """The sizes a job trains, validates and decodes on (language models: tokens, length 1)."""

    train: float
    length: float  # target units per sentence (+ </s>)
    dev: float
    test: float
    vocabulary: int | None  # language models: the corpus's
    source: str


# -- the jobs ------------------------------------------------------------------------------------
def planned_jobs(config: dict) -> list[PlannedJob]:
    """Every training job of the configured artefacts, read from the files each is rendered from
    (`layout.inputs`): a model folder's files name its job, a `.greedy.`/`.beam<K>.` file a decode."""
    jobs: dict[tuple, PlannedJob] = {}
    for paper, artefact_id in layout.configured_artefacts(config):
        ctx = layout.context(config, paper, artefact_id)
        for path in layout.inputs(registry.artefact(paper, artefact_id), ctx, paper, artefact_id):
            if not (found := layout.trained_job(path)):
                continue
            model, name = found
            kind = "lm" if model.pair == "lm" else "nmt"
            job = jobs.setdefault(
                (kind, model.dataset, model.pair, model.experiment, model.seed),
                PlannedJob(kind, model.dataset, model.pair, model.experiment, model.seed),
            )
            job.artefacts.add((paper, artefact_id))
            if kind == "nmt" and (s := SEARCH.search(name)):
                job.searches.add(s.group(1))
    timed = layout.timed_training_jobs(config)
    for job in jobs.values():
        job.exclusive = artefacts.Job(job.dataset, job.pair, job.experiment, job.seed) in timed
    return list(jobs.values())


def metrics_file(job: PlannedJob) -> str:
    j = artefacts.Job(job.dataset, job.pair, job.experiment, job.seed)
    return f"{layout.lm_dir(j)}/metrics.jsonl" if job.kind == "lm" else layout.metrics_path(j)


# -- corpus sizes --------------------------------------------------------------------------------
def read_json(path: str) -> dict | None:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else None


def parallel_corpus(config: dict, dataset: str, pair: str) -> Corpus | None:
    """Sizes of a pair: its statistics once prepared, else what the papers state (None: neither)."""
    tgt = pair.split("-")[1]
    parts = [read_json(path) for path in layout.parallel_stats_paths(config, dataset, pair)]
    if all(parts):
        train, dev, test = (part[split] for part, split in zip(parts, ("train", "dev", "test")))
        return Corpus(
            train["sentences"],
            train[f"tokens_{tgt}"] / max(train["sentences"], 1) + 1,
            dev["sentences"],
            test["sentences"],
            None,
            "prepared data (tok/stats.<split>.json)",
        )
    stated = STATED.get((dataset, pair), {})
    if "demo" in config or "training pairs" not in stated:
        return None
    length = config["benchmarks"]["length"] + 1
    dev, test = stated.get("development pairs"), stated.get("test pairs")
    assumed = config["benchmarks"]["length"] * 100  # an evaluation set of ~newstest's size when unstated
    source = f"paper's stated sizes ({stated['training pairs'][1]}), {length - 1} units per sentence assumed" + (
        "" if dev and test else f", {assumed} development/test sentences assumed"
    )
    return Corpus(
        stated["training pairs"][0], length, dev[0] if dev else assumed, test[0] if test else assumed, None, source
    )


def lm_corpus(config: dict, dataset: str) -> Corpus | None:
    """Tokens of a language-modelling corpus (a partition: half of its corpus's, before it exists)."""
    base = artefacts.Corpus(dataset, "").base
    for name, share in ((dataset, 1.0), (base, 0.5 if base != dataset else 1.0)):
        stats = read_json(f"{layout.lm_data_dir(name)}/stats.json")
        if stats:
            return Corpus(
                stats["train"]["tokens"] * share,
                1,
                stats["valid"]["tokens"],
                stats["test"]["tokens"],
                stats["vocabulary"],
                f"prepared data ({layout.lm_data_dir(name)}/stats.json)" + (", half of it" if share < 1 else ""),
            )
    stated = STATED.get((base, "-"), {})
    if "demo" in config or "training tokens" not in stated:
        return None
    share = 1.0 if base == dataset else 0.5
    return Corpus(
        stated["training tokens"][0] * share,
        1,
        stated["validation tokens"][0],
        stated["test tokens"][0],
        int(stated["vocabulary"][0]),
        f"paper's stated sizes ({stated['training tokens'][1]})" + (", half of it" if share < 1 else ""),
    )


# -- families --------------------------------------------------------------------------------------
def nmt_family(config: dict, job: PlannedJob, corpus: Corpus) -> tuple:
    """What a training step's cost depends on: the resolved spec but names, seeds, rates and loss
    weights, the batch size, the vocabulary sizes, and the sentence length."""
    spec = layout.resolve_spec(config, job.dataset, job.pair, job.experiment, job.seed)
    e = registry.experiment(job.experiment)
    sizes = layout.vocab_sizes(config["datasets"][job.dataset], e)
    src = sizes["src_size"] or layout.bpe_merges(config, job.dataset, "src", e.bpe)
    tgt = sizes["tgt_size"] or layout.bpe_merges(config, job.dataset, "tgt", e.bpe)
    dim = config["embeddings"][e.embeddings]["dim"] if e.embeddings else None
    ignored = {
        "experiment",
        "loss_params",
        "tgt_lang",
        "train",
        "vocab",
        "data",
        "device",
        "lr_group",
        "bpe",
        "embeddings",
    }
    shape = {key: value for key, value in spec.items() if key not in ignored}  # embeddings: their size, `dim`
    shape["batch_size"] = spec["train"]["batch_size"]
    return ("nmt", json.dumps(shape, sort_keys=True), src, tgt, dim, round(corpus.length))


def lm_family(config: dict, job: PlannedJob, corpus: Corpus) -> tuple:
    spec = lm_specs.resolve_lm_spec(config, job.dataset, job.experiment, job.seed)
    shape = {
        key: spec[key]
        for key in (
            "size",
            "layers",
            "dropout",
            "reuse_embedding",
            "loss",
            "bptt",
            "batch_size",
            "unit_norm_embeddings",
        )
    }
    shape["eval_batch_size"] = 10
    return ("lm", json.dumps(shape, sort_keys=True), corpus.vocabulary, None, None, 1)


def family_label(family: tuple) -> str:
    kind, shape, src, tgt, dim, length = family
    s = json.loads(shape)
    if kind == "lm":
        return (
            f"LM {s['size']}x{s['layers']} V={src} loss={s['loss']}{' RE' if s['reuse_embedding'] else ''}"
            f" dropout={s['dropout']:g}"
        )
    m = s["model"]
    form = s["output_form"] or s["output_layer"]
    extras = "".join(f" {k}={s[k]}" for k in ("negative", "joint_dim", "sample_share") if s.get(k))
    return (
        f"NMT enc {m['encoder_layers']}x{m['hidden']} dec {m['decoder_layers']}x{m['hidden']} {form}/{s['loss']}"
        f"{' tied' if s['tied'] else ''}{extras} V {src}->{tgt}{f' m={dim}' if dim else ''} batch {s['batch_size']} "
        f"length {length}"
    )
