"""The syn-margin paper's pieces: tuned rows and their selection on the development set, the
nearest-neighbour statistics, the registry sharing the vMF paper's jobs."""

import json

import pytest
import torch

from workflow_src import artefacts, layout, registry
from workflow_src.artefacts import Column, Context
from workflow_src.data.vocab import Vocab
from workflow_src.papers import synmargin, vmf
from workflow_src.report import analysis
from workflow_src.score.neighbours import neighbour_statistics


def test_shared_systems_are_the_vmf_papers_experiments():
    assert synmargin.EXPERIMENTS[synmargin.VMF] == vmf.EXPERIMENTS[synmargin.VMF]
    assert synmargin.EXPERIMENTS[synmargin.MOST_INFORMATIVE] == vmf.EXPERIMENTS[synmargin.MOST_INFORMATIVE]
    assert registry.all_experiments()[synmargin.SMP].negative == "projection"
    table1 = registry.artefact("synmargin", "table1")
    assert [row.paper["IWSLT De→En"] for row in table1.rows][-2:] == [25.4, 25.3]


def test_variants_change_one_loss_parameter_and_keep_the_base_name_for_its_own_value():
    assert registry.variant(synmargin.SMP, "gamma", 0.5) == synmargin.SMP
    name = registry.variant(synmargin.SMP, "gamma", 0.2)
    assert name == f"{synmargin.SMP}@gamma=0.2"
    assert registry.experiment(name).loss_params == {"gamma": 0.2}
    assert registry.experiment(name).negative == "projection"
    with pytest.raises(ValueError, match="no loss parameter"):
        registry.variant(synmargin.VMF, "gamma", 0.2)
    with pytest.raises(ValueError, match="configure its values"):
        Context(seeds=(1,), pairs={}).candidates(synmargin.SMP, "gamma")


def test_the_candidate_with_the_best_mean_development_bleu_is_chosen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    column = Column("iwslt16", "fr-en")
    ctx = Context(seeds=(1, 2), pairs={"iwslt16": ("fr-en",)}, grid={"gamma": (0.2, 0.5)})
    dev = {(0.2, 1): 10.0, (0.2, 2): 12.0, (0.5, 1): 13.0, (0.5, 2): 8.0}  # means 11.0 and 10.5
    for (gamma, seed), bleu in dev.items():
        job = artefacts.Job("iwslt16", "fr-en", registry.variant(synmargin.SMP, "gamma", gamma), seed)
        path = tmp_path / layout.metrics_path(job)
        path.parent.mkdir(parents=True)
        # the kept epoch is the last that improved, not the last epoch
        path.write_text(
            json.dumps({"epoch": 1, "dev_bleu": bleu, "best": True})
            + "\n"
            + json.dumps({"epoch": 2, "dev_bleu": bleu - 1, "best": False})
            + "\n"
        )
    jobs, note = analysis.chosen_jobs(ctx, column, synmargin.SMP, "gamma")
    assert [j.experiment for j in jobs] == [f"{synmargin.SMP}@gamma=0.2"] * 2 and [j.seed for j in jobs] == [1, 2]
    assert note == "fr-en: gamma = 0.2, chosen on development BLEU among 0.2, 0.5"
    inputs = layout.inputs(registry.artefact("synmargin", "table1"), ctx, "synmargin", "table1")
    assert (
        layout.metrics_path(jobs[0]) in inputs
        and layout.hypothesis_path("iwslt16", "fr-en", synmargin.SMP, 2) in inputs
    )
    alone = Context(seeds=(1, 2), pairs={"iwslt16": ("fr-en",)}, grid={"gamma": (0.5,)})  # one value: nothing chosen
    assert (
        analysis.chosen_jobs(alone, column, synmargin.SMP, "gamma")[1]
        == "fr-en: gamma = 0.5, the one value configured, not tuned"
    )


class FixedPredictions(torch.nn.Module):
    """A stand-in model whose prediction at every target position is given."""

    def __init__(self, table, e_hat):
        super().__init__()
        self.output = torch.nn.Module()
        self.output.table = table
        self.e_hat = e_hat

    def forward(self, src, lengths, tgt_in):
        return self.e_hat[: tgt_in.shape[0], : tgt_in.shape[1]], None


def test_neighbour_statistics_against_brute_force():
    generator = torch.Generator().manual_seed(0)
    words = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(20)]
    vocab = Vocab(words)
    table = torch.nn.functional.normalize(torch.randn(len(words), 8, generator=generator), dim=-1)
    table[0] = 0
    targets = ["w1 w2 w3", "w4 <unk> w6 w7 w8", "w9"]
    ids = [vocab.encode(t, eos=True) for t in targets]
    e_hat = torch.randn(3, 6, 8, generator=generator)
    # make some predictions exactly right
    e_hat[0, 0] = 3 * table[ids[0][0]]
    e_hat[1, 2] = 2 * table[ids[1][2]]
    # batch order is by source length: give every sentence the same length so rows keep their order
    model = FixedPredictions(table, e_hat)
    result = neighbour_statistics(model, vocab, vocab, ["w1"] * 3, targets, torch.device("cpu"))
    correct, wrong, ranks = [], [], []
    for row, sentence in enumerate(ids):
        for position, target in enumerate(sentence):
            if target == vocab.unk:
                continue
            u_hat = torch.nn.functional.normalize(e_hat[row, position], dim=0)
            cosines = {w: float(u_hat @ table[w]) for w in range(len(words)) if w not in (vocab.pad, vocab.bos)}
            nearest = max(cosines, key=cosines.get)
            ranks.append(sum(c > cosines[target] for c in cosines.values()))
            (correct if nearest == target else wrong).append((cosines[nearest], cosines[target]))
    assert result["words"] == len(ranks) == 11  # </s> included, <unk> not
    assert len(correct) >= 2
    assert result["correct: similarity to nearest neighbour"] == pytest.approx(
        sum(c for c, _ in correct) / len(correct)
    )
    assert result["wrong: similarity to nearest neighbour"] == pytest.approx(sum(c for c, _ in wrong) / len(wrong))
    assert result["wrong: similarity to target"] == pytest.approx(sum(t for _, t in wrong) / len(wrong))
    for k in (1, 2, 5, 10):
        assert result[f"accuracy@{k} (%)"] == pytest.approx(100 * sum(r < k for r in ranks) / len(ranks))
