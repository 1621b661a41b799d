"""Where every artefact lives, and what each table needs: shared by the Snakefile and the tools.

    resources/<mirror>/<path>                           downloads
    results/data/<dataset>/<pair>/raw/<split>.<lang>    extracted text
    results/data/<dataset>/<pair>/tok/<split>.<lang>    tokenized, truecased, cleaned
    results/data/<dataset>/<pair>/vocab/<lang>.tsv      training word counts
    results/data/<dataset>/<pair>/bpe<K>/...            sentencepiece BPE model and encoded text
    results/data/<dataset>/<pair>/emb/<kind>.vec        the target table of continuous models
    results/embeddings/<lang>/<kind>.vec                target embeddings
    results/align/<dataset>/<pair>/dict.tsv             bilingual dictionary
    results/models/<dataset>/<pair>/<experiment>/seed<N>/   model, metrics, decodes, scores
    results/<paper>/<table>.{csv,md}                    rendered tables
"""

from __future__ import annotations

import dataclasses

from workflow_src.registry import Experiment, all_experiments, table

RESULTS = "results"


def data_dir(dataset: str, pair: str) -> str:
    return f"{RESULTS}/data/{dataset}/{pair}"


def model_dir(dataset: str, pair: str, experiment: str, seed: int | str) -> str:
    return f"{RESULTS}/models/{dataset}/{pair}/{experiment}/seed{seed}"


def score_path(dataset: str, pair: str, experiment: str, seed: int | str, metric: str = "bleu") -> str:
    return f"{model_dir(dataset, pair, experiment, seed)}/test.{metric}.json"


def unit_files(dataset: str, pair: str, unit: str, side_lang: str, config: dict) -> dict[str, str]:
    """The token files and vocabulary a model reads for one side in one unit (word or bpe)."""
    base = data_dir(dataset, pair)
    if unit == "bpe":
        merges = config["datasets"][dataset]["bpe_merges"]
        folder = f"{base}/bpe{merges}"
        return {split: f"{folder}/{split}.{side_lang}" for split in ("train", "dev", "test")} | {
            "vocab": f"{folder}/vocab.{side_lang}.tsv"}
    return {split: f"{base}/tok/{split}.{side_lang}" for split in ("train", "dev", "test")} | {
        "vocab": f"{base}/vocab/{side_lang}.tsv"}


@dataclasses.dataclass(frozen=True)
class Job:
    dataset: str
    pair: str
    experiment: str
    seed: int


def table_jobs(config: dict, paper: str, table_id: str) -> list[Job]:
    """Every trained model a configured table needs (rows x pairs x seeds)."""
    t = table(paper, table_id)
    selection = config["papers"][paper][table_id]
    rows = t.row_experiments() if selection["rows"] == "all" else selection["rows"]
    unknown = sorted(set(rows) - set(t.row_experiments()))
    if unknown:
        raise ValueError(f"papers.{paper}.{table_id}.rows: {', '.join(unknown)} not rows of {paper} {table_id} "
                         f"(rows: {', '.join(t.row_experiments())})")
    pairs = selection.get("pairs") or [p for p in t.pairs if p in config["datasets"][t.dataset]["pairs"]]
    return [Job(t.dataset, pair, name, seed) for name in rows for pair in pairs for seed in config["train"]["seeds"]]


def configured_tables(config: dict) -> list[tuple[str, str]]:
    return [(paper, table_id) for paper, tables in config["papers"].items() for table_id in tables]


def resolve_spec(config: dict, dataset: str, pair: str, name: str, seed: int) -> dict:
    """The full training spec of one job: the experiment plus the configured sizes and schedule."""
    experiment: Experiment = all_experiments()[name]
    data = config["datasets"][dataset]
    train = config["train"]
    return {
        "experiment": name,
        **dataclasses.asdict(experiment),
        "loss_params": dict(experiment.loss_params),
        "tgt_lang": pair.split("-")[1],
        "device": train["device"],
        "model": dict(config["model"]),
        "vocab": {"src_size": data["src_vocab_size"], "tgt_size": data["tgt_vocab_size"]},
        "train": {
            "seed": seed,
            "lr": train["lr"][experiment.output_layer],
            **{key: train[key] for key in ("batch_size", "max_epochs", "patience", "selection", "clip", "init_scale")},
        },
    }
