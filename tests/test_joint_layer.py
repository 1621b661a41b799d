"""The joint paper's output layers: each form against its equation written out from the
parameters, the degenerate joint layer against weight tying (Eq. 18), the parameter counts
against Eq. 8-10 and 16, and negative sampling against a softmax restricted by hand."""

import pytest
import torch
from scipy.stats import chi2_contingency, chisquare
from torch import nn

from workflow_src.model.joint import VARIANTS, JointOutput, parameter_count, sample_vocabulary, sample_vocabulary_topk

V, D, D_H, D_J, N = 40, 6, 6, 9, 25
BANNED = (0, 2)


def make(variant, d=D, d_h=D_H, d_j=D_J, vocab=V, **kwargs):
    """A layer in float64 (exact comparisons), its E (None for nmt), attentional states, targets."""
    torch.manual_seed(1)
    embedding = None if variant == "nmt" else nn.Parameter(torch.randn(vocab, d, dtype=torch.float64))
    layer = JointOutput(variant, d_h, vocab, embedding, joint_dim=d_j, **kwargs)
    if variant == "nmt":
        layer.double()
    with torch.no_grad():
        layer.bias.normal_()  # zero at initialisation, which would hide a bias mix-up
    h = torch.randn(N, d_h, dtype=torch.float64)
    target = torch.randint(3, vocab, (N,))  # never a banned id, as after dropping padding
    return layer, embedding, h, target


def _written_out(layer, E, h):
    """The logits of each form (N x V) from the layer's parameters, as the paper writes them."""
    tanh, b = torch.tanh, layer.bias
    if layer.variant == "nmt":  # Eq. 3: W^T h + b, our W stored V x d_h
        return h @ layer.word_vectors.T + b
    if layer.variant == "tied":  # Eq. 4, through P as d_h != d here
        return h @ layer.g_inp.weight.T @ E.T + b
    if layer.variant == "bilinear":  # Eq. 6: E W h + b, W: d x d_h
        W = layer.g_inp.weight
        return (E @ W @ h.T).T + b
    if layer.variant == "output":  # Eq. 7a: sigma(E W) h + b, W: d x d_h
        W = layer.g_out[0].weight.T
        return (tanh(E @ W) @ h.T).T + b
    if layer.variant == "context":  # Eq. 7b: E sigma(W h) + b, W: d x d_h
        W = layer.g_inp[0].weight
        return (E @ tanh(W @ h.T)).T + b
    U, V_ = layer.g_out[0], layer.g_inp[0]  # Eq. 12-14: sigma(U E^T + b_u)^T sigma(V h + b_v) + b
    assert U.weight.shape == (D_J, 5) and V_.weight.shape == (D_J, 8)
    return (tanh(U.weight @ E.T + U.bias[:, None]).T @ tanh(V_.weight @ h.T + V_.bias[:, None])).T + b


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_form_is_its_equation(variant):
    layer, E, h, _ = make(variant, d=5, d_h=8)
    torch.testing.assert_close(layer.logits(layer(h)), _written_out(layer, E, h), rtol=0, atol=1e-12)


def test_tied_projects_only_when_the_sizes_differ():
    assert make("tied", d=4, d_h=7)[0].g_inp.weight.shape == (4, 7)
    assert isinstance(make("tied")[0].g_inp, nn.Identity)  # d = d_h: Eq. 4 as the paper has it


def test_joint_with_identity_projections_is_weight_tying():
    """Eq. 18: g_inp = g_out = I gives exp(E h + b), the tied layer (Eq. 4)."""
    joint, E, h, _ = make("joint", d_j=D, activation=nn.Identity)
    tied = JointOutput("tied", D_H, V, E)
    with torch.no_grad():
        for projection in (joint.g_out[0], joint.g_inp[0]):
            projection.weight.copy_(torch.eye(D))
            projection.bias.zero_()
        tied.bias.copy_(joint.bias)
    assert torch.equal(joint.logits(joint(h)), tied.logits(tied(h)))
    assert torch.equal(joint.logits(joint(h)), torch.nn.functional.linear(h, E, joint.bias))
    # tanh is what makes the joint layer more than tying
    nonlinear, *_ = make("joint", d_j=D)
    nonlinear.load_state_dict(joint.state_dict())
    assert not torch.allclose(nonlinear.logits(nonlinear(h)), tied.logits(tied(h)))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("d, d_h, d_j", [(6, 6, 9), (5, 8, 3), (8, 5, 16)])
def test_parameter_counts_match_the_formulas(variant, d, d_h, d_j):
    layer, *_ = make(variant, d=d, d_h=d_h, d_j=d_j)
    assert layer.own_parameter_count() == parameter_count(variant, V, d, d_h, d_j)


def test_formulas_reproduce_the_parameter_differences_of_table_3():
    """Table 3 (De-En, d = d_h = 512) in millions, rounded to 0.1M, minus NMT-tied."""
    size = lambda variant, d_j=None: parameter_count(variant, 32000, 512, 512, d_j) / 1e6  # noqa: E731
    table = {("bilinear",): 47.0, ("output",): 47.0, ("context",): 47.0, ("joint", 512): 47.2, ("joint", 2048): 48.8}
    for row, millions in table.items():
        assert abs((size(*row) - size("tied")) - (millions - 46.7)) <= 0.1 + 1e-9, row


@pytest.mark.parametrize("variant", VARIANTS[1:])
def test_gradients_reach_the_shared_embedding(variant):
    layer, E, h, target = make(variant)
    layer.loss(layer(h), target).sum().backward()
    assert E.grad is not None and E.grad.abs().sum() > 0
    assert layer.word_vectors is E


@pytest.mark.parametrize("variant", VARIANTS)
def test_scores_are_log_probabilities_over_the_vocabulary(variant):
    layer, _, h, _ = make(variant, sample_share=0.25)
    scores = layer.scores(layer(h))
    assert scores.shape == (N, V)
    torch.testing.assert_close(scores.logsumexp(-1), torch.zeros(N, dtype=torch.float64))


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampling_at_100_percent_is_the_full_softmax(variant):
    full, _, h, target = make(variant)
    sampled, *_ = make(variant, sample_share=1.0)
    for sample in (sample_vocabulary, sample_vocabulary_topk):
        ids, positions = sample(target, V, 1.0)
        assert torch.equal(ids, torch.arange(V)) and torch.equal(positions, target)
    assert torch.equal(sampled.loss(sampled(h), target), full.loss(full(h), target))


SAMPLERS = pytest.mark.parametrize("sample", (sample_vocabulary, sample_vocabulary_topk))


@SAMPLERS
def test_the_subset_holds_the_targets_and_the_configured_share(sample):
    target = torch.tensor([5, 5, 17, 30, 3, 17])
    for share in (0.5, 0.25, 0.05):  # the paper's shares (Table 4)
        ids, positions = sample(target, 400, share, BANNED)
        assert len(ids) == int(share * 400)
        assert torch.equal(ids, ids.unique())  # sorted, no repeats
        assert set(target.tolist()) <= set(ids.tolist())
        assert not set(BANNED) & set(ids.tolist())
        assert torch.equal(ids[positions], target)
    # more distinct targets than the share allows: the subset is the targets alone
    ids, _ = sample(target, V, 0.05, BANNED)
    assert ids.tolist() == sorted(set(target.tolist()))
    # a share above what the banned ids leave: every other id
    ids, _ = sample(target, 40, 1.0, BANNED)
    assert ids.tolist() == [i for i in range(40) if i not in BANNED]


@SAMPLERS
def test_sampling_repeats_under_a_seed_and_varies_otherwise(sample):
    target = torch.tensor([5, 9])
    draw = lambda: sample(target, 1000, 0.05, BANNED)[0]  # noqa: E731
    torch.manual_seed(7)
    first, second = draw(), draw()
    torch.manual_seed(7)
    assert torch.equal(draw(), first)
    assert not torch.equal(first, second)


def membership_counts(sample, draws: int, target: torch.Tensor, vocab: int, share: float) -> torch.Tensor:
    """How often each id was in V' over `draws` draws of `sample`."""
    torch.manual_seed(11)
    counts = torch.zeros(vocab, dtype=torch.long)
    for _ in range(draws):
        counts[sample(target, vocab, share, BANNED)[0]] += 1
    return counts


TARGET, VOCAB, SHARE, DRAWS = torch.tensor([5, 9, 17, 9]), 50, 0.2, 4000  # 10 ids: 3 targets, 7 negatives of 45


def test_the_sync_free_sampler_draws_negatives_uniformly():
    counts = membership_counts(sample_vocabulary_topk, DRAWS, TARGET, VOCAB, SHARE)
    negatives = [i for i in range(VOCAB) if i not in BANNED and i not in TARGET.tolist()]
    assert counts[TARGET].eq(DRAWS).all() and counts[list(BANNED)].eq(0).all()
    assert counts[negatives].sum() == 7 * DRAWS
    assert chisquare(counts[negatives].numpy()).pvalue > 0.001


def test_both_samplers_choose_each_id_equally_often():
    """`sample_vocabulary_topk` (CUDA) draws V' from the distribution of `sample_vocabulary`."""
    old = membership_counts(sample_vocabulary, DRAWS, TARGET, VOCAB, SHARE)
    new = membership_counts(sample_vocabulary_topk, DRAWS, TARGET, VOCAB, SHARE)
    random = (old > 0) & (old < DRAWS)  # neither always in (targets) nor never (banned)
    assert torch.equal(old[~random], new[~random])
    assert chi2_contingency(torch.stack([old[random], new[random]]).numpy()).pvalue > 0.001


@pytest.mark.parametrize("variant", VARIANTS)
def test_sampled_loss_is_the_softmax_restricted_to_the_subset(variant):
    layer, E, h, target = make(variant, sample_share=0.25, banned=BANNED)
    torch.manual_seed(3)
    loss = layer.loss(layer(h), target)
    torch.manual_seed(3)
    ids, _ = sample_vocabulary(target, V, 0.25, BANNED)
    full = layer.logits(layer(h)).detach()
    by_hand = full[:, ids].logsumexp(-1) - full.gather(1, target[:, None]).squeeze(1)
    torch.testing.assert_close(loss, by_hand, rtol=0, atol=1e-12)
    assert (loss < layer.eval().loss(layer(h), target)).all()  # eval: the full vocabulary


@pytest.mark.parametrize("variant", ("nmt", "tied", "joint"))
def test_sampling_touches_only_the_subset(variant):
    """§3.2: only the rows of V' go through g_out and only they receive gradients."""
    layer, E, h, target = make(variant, vocab=200, sample_share=0.25, banned=BANNED)
    rows_seen = []
    layer.g_out.register_forward_hook(lambda module, args, out: rows_seen.append(args[0].shape[0]))
    torch.manual_seed(5)
    layer.loss(layer(h), target).sum().backward()
    torch.manual_seed(5)
    ids, _ = sample_vocabulary(target, 200, 0.25, BANNED)
    assert rows_seen == [len(ids)] == [50]
    grad = layer.word_vectors.grad
    outside = torch.ones(200, dtype=torch.bool)
    outside[ids] = False
    assert grad[outside].abs().sum() == 0 and layer.bias.grad[outside].abs().sum() == 0
    assert (grad[ids].abs().sum(-1) > 0).all()


def test_the_layer_follows_the_device_and_dtype_of_e():
    E = nn.Parameter(torch.randn(V, D, dtype=torch.float64))
    layer = JointOutput("joint", D_H, V, E, joint_dim=D_J)
    assert {p.dtype for p in layer.parameters()} == {torch.float64}
    assert {p.device for p in layer.parameters()} == {E.device}


def test_bad_settings_fail_with_their_name():
    E = nn.Parameter(torch.randn(V, D))
    with pytest.raises(ValueError, match="joint_dim"):
        JointOutput("joint", D_H, V, E)
    with pytest.raises(ValueError, match="sample_share"):
        JointOutput("tied", D_H, V, E, sample_share=0.0)
    with pytest.raises(ValueError, match="own W"):
        JointOutput("nmt", D_H, V, E)


def test_decoding_computes_g_out_once_and_training_invalidates_it():
    """Decoding (eval, no gradients) keeps g_out(E): the same scores, g_out called once over many
    steps; a training step or train mode computes it afresh."""
    layer, E, h, target = make("output")  # sigma(E W): g_out has parameters of its own
    layer.eval()
    with torch.no_grad():
        expected = torch.log_softmax(_written_out(layer, E, h), dim=-1)
    calls = []
    layer.g_out.register_forward_hook(lambda *args: calls.append(1))
    with torch.no_grad():
        for _ in range(5):
            torch.testing.assert_close(layer.scores(layer(h)), expected, rtol=1e-12, atol=1e-12)
    assert len(calls) == 1
    layer.train()
    optimiser = torch.optim.SGD(layer.parameters(), lr=0.5)
    layer.loss(layer(h), target).sum().backward()
    optimiser.step()
    layer.eval()
    with torch.no_grad():
        changed = layer.scores(layer(h))
        torch.testing.assert_close(
            changed, torch.log_softmax(_written_out(layer, E, h), dim=-1), rtol=1e-12, atol=1e-12
        )
        E.add_(1.0)  # a change in place, in eval mode, is seen too
        torch.testing.assert_close(
            layer.scores(layer(h)), torch.log_softmax(_written_out(layer, E, h), dim=-1), rtol=1e-12, atol=1e-12
        )
    assert not torch.equal(changed, expected)
