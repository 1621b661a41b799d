"""Each continuous loss against a direct numpy computation, its gradient against finite
differences, the max-margin negative against brute force, and the syn-margin paper's negatives."""

import numpy as np
import pytest
import torch
from scipy.special import ive

from workflow_src.model import losses
from workflow_src.model.output_layers import ContinuousOutput
from workflow_src.model.vmf import log_cm

torch.manual_seed(0)
M = 16
E_HAT = torch.randn(6, M, dtype=torch.float64) * 2
E = torch.nn.functional.normalize(torch.randn(6, M, dtype=torch.float64), dim=-1)
E_NEG = torch.nn.functional.normalize(torch.randn(6, 3, M, dtype=torch.float64), dim=-1)


def np_cos(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def np_log_cm(m, kappa):  # scipy's exponentially scaled Bessel function, fine at these kappas
    nu = m / 2 - 1
    return nu * np.log(kappa) - m / 2 * np.log(2 * np.pi) - (np.log(ive(nu, kappa)) + kappa)


a, e, n = E_HAT.numpy(), E.numpy(), E_NEG.numpy()


def np_margin(negatives):
    return np.mean(
        [np.maximum(0, 0.5 + np_cos(a, negatives[:, j]) - np_cos(a, e)) for j in range(negatives.shape[1])], axis=0
    )


kappa = np.linalg.norm(a, axis=-1)
CASES = {
    "l2": (lambda x: losses.l2(x, E), np.sqrt(((a - e) ** 2).sum(-1))),
    "cosine": (lambda x: losses.cosine(x, E), 1 - np_cos(a, e)),
    "margin": (lambda x: losses.margin(x, E, E_NEG[:, :1], 0.5), np_margin(n[:, :1])),
    "margin_k3": (lambda x: losses.margin(x, E, E_NEG, 0.5), np_margin(n)),
    "nllvmf": (lambda x: losses.nll_vmf(x, E), -np_log_cm(M, kappa) - (a * e).sum(-1)),
    "nllvmf_reg1": (lambda x: losses.nll_vmf(x, E, 0.02), -np_log_cm(M, kappa) - (a * e).sum(-1) + 0.02 * kappa),
    "nllvmf_reg1reg2": (
        lambda x: losses.nll_vmf(x, E, 0.02, 0.1),
        -np_log_cm(M, kappa) - 0.1 * (a * e).sum(-1) + 0.02 * kappa,
    ),
    "nllvmf_released": (
        lambda x: losses.nll_vmf_released(x, E),
        -np_log_cm(M, kappa) + np.log1p(kappa) * (0.2 - np_cos(a, e)),
    ),
    "nllvmf_appendix": (
        lambda x: losses.nll_vmf_appendix(x, E, 0.02, 0.1),
        np.sqrt((M / 2 + 1) ** 2 + kappa**2)
        - (M / 2 - 1) * np.log(M / 2 - 1 + np.sqrt((M / 2 + 1) ** 2 + kappa**2))
        - 0.1 * (a * e).sum(-1)
        + 0.02 * kappa,
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_loss_value_matches_numpy(name):
    function, expected = CASES[name]
    np.testing.assert_allclose(function(E_HAT).numpy(), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_loss_gradient_matches_finite_differences(name):
    function, _ = CASES[name]
    x = E_HAT.clone().requires_grad_()
    assert torch.autograd.gradcheck(function, (x,), eps=1e-6, atol=1e-6)


def test_cross_entropy_matches_numpy():
    logits = torch.randn(5, 7, dtype=torch.float64)
    target = torch.tensor([0, 3, 6, 2, 2])
    z = logits.numpy()
    expected = -(z[np.arange(5), target.numpy()] - np.log(np.exp(z).sum(-1)))
    np.testing.assert_allclose(losses.cross_entropy(logits, target).numpy(), expected, rtol=1e-12)


def test_most_informative_negative_matches_brute_force():
    generator = torch.Generator().manual_seed(3)
    table = torch.nn.functional.normalize(torch.randn(50, M, generator=generator, dtype=torch.float64), dim=-1)
    table[0] = 0  # <pad>
    e_hat = torch.randn(40, M, generator=generator, dtype=torch.float64)
    target = torch.randint(4, 50, (40,), generator=generator)
    found = losses.most_informative_negative(e_hat, target, table, banned=(0, 2), chunk=7)
    for i in range(40):
        best, best_j = -np.inf, None
        for j in range(50):
            if j in (0, 2, int(target[i])):
                continue
            score = float(torch.cosine_similarity(e_hat[i], table[j], dim=0) - table[target[i]] @ table[j])
            if score > best:
                best, best_j = score, j
        assert torch.equal(found[i, 0], table[best_j])


def test_most_informative_negative_leaves_a_near_duplicate_of_the_target_at_zero_loss():
    """The negative maximises cos(u_hat, e_j) - cos(e_w, e_j), so a near-duplicate d of the target w
    (`.` and `</s>`, cosine 0.95 in tests/test_real_text_learning.py's table) scores at most 1 - 0.95
    and is passed over: with u_hat = e_d the loss at gamma 0.5 is 0 though d, not w, is the nearest
    word, and only a margin above cos(u_hat, w) - cos(u_hat, e_neg) = 0.55 keeps a gradient."""
    w, d = [1.0, 0.0, 0.0], [0.95, 0.0975**0.5, 0.0]
    f = [0.3, (0.4 - 0.285) / 0.0975**0.5, 0.0]  # cos(d, f) = 0.4, cos(w, f) = 0.3: score 0.1 > 0.05
    f[2] = (1 - f[0] ** 2 - f[1] ** 2) ** 0.5
    table = torch.tensor([w, d, f], dtype=torch.float64)
    e_hat, target = table[1:2] * 3, torch.tensor([0])
    negative = losses.most_informative_negative(e_hat, target, table)
    assert torch.equal(negative[0, 0], table[2])
    assert (e_hat @ table.T).argmax().item() == 1
    assert losses.margin(e_hat, table[target], negative, 0.5).item() == 0
    gamma = 0.8
    x = e_hat.clone().requires_grad_()
    loss = losses.margin(x, table[target], negative, gamma)
    assert loss.item() == pytest.approx(gamma + 0.4 - 0.95)
    (grad,) = torch.autograd.grad(loss, x)
    assert (-grad @ table[0]).item() > 0  # a step against the gradient turns u_hat towards w


def test_margin_layer_needs_a_negative_sampler():
    table = torch.eye(8, dtype=torch.float32)
    with pytest.raises(ValueError, match="needs a negative sampler"):
        ContinuousOutput(4, table, "margin", {"gamma": 0.5}, None, (0, 2))
    layer = ContinuousOutput(4, table, "margin", {"gamma": 0.5}, "most_informative", (0, 2))
    out = layer.loss(torch.randn(3, 8), torch.tensor([4, 5, 6]))
    assert out.shape == (3,) and (out >= 0).all()


def unit(x):
    return torch.nn.functional.normalize(x, dim=-1)


def test_synthetic_negatives_are_unit_vectors_orthogonal_and_along_the_difference():
    generator = torch.Generator().manual_seed(5)
    table = unit(torch.randn(30, M, generator=generator, dtype=torch.float64))
    e_hat = torch.randn(20, M, generator=generator, dtype=torch.float64) * 3
    target = torch.randint(0, 30, (20,), generator=generator)
    u, u_hat = table[target], unit(e_hat)
    orth = losses.projection_negative(e_hat, target, table)[:, 0]
    diff = losses.difference_negative(e_hat, target, table)[:, 0]
    for negative in (orth, diff):
        torch.testing.assert_close(negative.norm(dim=-1), torch.ones(20, dtype=torch.float64))
    torch.testing.assert_close((orth * u).sum(-1), torch.zeros(20, dtype=torch.float64), atol=1e-12, rtol=0)
    # u_hat lies in the plane of u and u_orth, on u_orth's side
    in_plane = (u_hat * u).sum(-1, keepdim=True) * u + (u_hat * orth).sum(-1, keepdim=True) * orth
    torch.testing.assert_close(in_plane, u_hat)
    assert ((u_hat * orth).sum(-1) > 0).all()
    torch.testing.assert_close(torch.cosine_similarity(diff, u_hat - u, dim=-1), torch.ones(20, dtype=torch.float64))


@pytest.mark.parametrize("negative", ["projection", "difference"])
def test_syn_margin_depends_only_on_the_angle(negative):
    """With the negative detached, L(e_hat, u) = max{0, gamma + sin(theta) - cos(theta)} (SMP)
    and max{0, gamma + sin(theta / 2) - cos(theta)} (SMD), whatever the directions and norms."""
    generator = torch.Generator().manual_seed(11)
    theta = torch.rand(200, generator=generator, dtype=torch.float64) * np.pi
    u = unit(torch.randn(200, M, generator=generator, dtype=torch.float64))
    # a random unit direction orthogonal to u, and a prediction at angle theta, of any norm
    w = torch.randn(200, M, generator=generator, dtype=torch.float64)
    w = unit(w - (w * u).sum(-1, keepdim=True) * u)
    norm = torch.rand(200, 1, generator=generator, dtype=torch.float64) * 10 + 0.1
    e_hat = (torch.cos(theta)[:, None] * u + torch.sin(theta)[:, None] * w) * norm
    table, target = u, torch.arange(200)
    e_neg = losses.NEGATIVES[negative](e_hat, target, table)
    loss = losses.margin(e_hat, u, e_neg, gamma=0.3)
    sine = torch.sin(theta) if negative == "projection" else torch.sin(theta / 2)
    torch.testing.assert_close(loss, torch.relu(0.3 + sine - torch.cos(theta)))


@pytest.mark.parametrize("negative", ["projection", "difference", "random", "most_informative"])
def test_negatives_are_outside_the_graph(negative):
    table = unit(torch.randn(12, M, dtype=torch.float64))
    e_hat = torch.randn(5, M, dtype=torch.float64, requires_grad=True)
    e_neg = losses.NEGATIVES[negative](e_hat, torch.tensor([3, 4, 5, 6, 7]), table, (0,))
    assert not e_neg.requires_grad


def test_random_negatives_are_uniform_and_never_the_target_or_banned():
    target = torch.tensor([0, 5, 9, 2] * 500)  # 0 and 2 are banned, as <pad> and <s> are
    ids = losses.uniform_negative_ids(target, vocab_size=10, banned=(0, 2), k=5)
    assert ids.shape == (2000, 5)
    assert not (ids == target[:, None]).any()
    assert not torch.isin(ids, torch.tensor([0, 2])).any()
    # every other id drawn about equally often: 7 choices when the target is allowed, 8 when not
    for t, choices in ((5, 7), (0, 8)):
        counts = torch.bincount(ids[target == t].flatten(), minlength=10).double()
        expected = 500 * 5 / choices
        drawn = counts[counts > 0]
        assert len(drawn) == choices and ((drawn - expected).abs() < 5 * expected**0.5).all()
    table = unit(torch.randn(10, M))
    assert losses.random_negatives(torch.randn(4, M), target[:4], table, (0, 2)).shape == (4, 5, M)


def test_the_single_product_negative_is_the_two_product_one():
    """(u_hat - e_w) E^T picks the same negatives as the old u_hat E^T - e_w E^T on random data."""
    generator = torch.Generator().manual_seed(8)
    table = torch.nn.functional.normalize(torch.randn(500, M, generator=generator), dim=-1)
    table[0] = 0
    e_hat = torch.randn(300, M, generator=generator)
    target = torch.randint(4, 500, (300,), generator=generator)
    unit_hat = torch.nn.functional.normalize(e_hat, dim=-1)
    two_products = unit_hat @ table.T - table[target] @ table.T
    two_products.scatter_(1, target[:, None], float("-inf"))
    two_products[:, [0, 2]] = float("-inf")
    found = losses.most_informative_negative(e_hat, target, table, banned=(0, 2), chunk=64)
    assert torch.equal(found[:, 0], table[two_products.argmax(-1)])


def test_the_negative_is_picked_in_fp32_under_bf16_autocast():
    generator = torch.Generator().manual_seed(9)
    table = torch.nn.functional.normalize(torch.randn(200, M, generator=generator), dim=-1)
    e_hat = torch.randn(50, M, generator=generator)
    target = torch.randint(4, 200, (50,), generator=generator)
    expected = losses.most_informative_negative(e_hat, target, table)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.equal(losses.most_informative_negative(e_hat, target, table), expected)


@pytest.mark.parametrize("m", [16, 48, 300])
def test_appendix_approximation_is_a_surrogate_for_the_gradient_of_minus_log_cm(m):
    """d/dk of the appendix's expression is its closed form k / (v-1 + sqrt((v+1)^2 + k^2)), v = m/2:
    an upper bound on the exact d/dk (-log C_m) = I_{m/2}(k) / I_{m/2-1}(k) (`log_cm`, checked
    against mpmath in test_vmf.py; scipy underflows here at m = 300), within 1% from m = 48 on.
    Its value is not -log C_m (it differs by a k-independent constant), and read as +log C_m, as
    the appendix prints it, its gradient has the wrong sign."""
    k = torch.tensor([1e-3, 0.1, 1.0, 10.0, 50.0, 300.0, 3000.0], dtype=torch.float64, requires_grad=True)
    approx = losses.neg_log_cm_appendix(m, k)
    (grad,) = torch.autograd.grad(approx.sum(), k)
    exact_value = -log_cm(m, k)
    (exact,) = torch.autograd.grad(exact_value.sum(), k)
    v, kk = m / 2, k.detach()
    torch.testing.assert_close(grad, kk / (v - 1 + torch.sqrt((v + 1) ** 2 + kk**2)), rtol=1e-12, atol=0)
    assert torch.all(grad >= exact * (1 - 1e-12))
    if m >= 48:
        torch.testing.assert_close(grad, exact, rtol=1e-2, atol=0)
    offset = (approx - exact_value).detach()[:4]  # small k, where the gradients agree closely
    assert float(offset.max() - offset.min()) < 1e-3 * abs(float(offset[0])) and abs(float(offset[0])) > 1
    assert torch.all(torch.sign(-grad) != torch.sign(exact))  # the appendix's +log C_m reading
