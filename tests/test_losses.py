"""Each continuous loss against a direct numpy computation, its gradient against finite
differences, and the max-margin negative against brute force."""

import numpy as np
import pytest
import torch
from scipy.special import ive

from workflow_src.model import losses
from workflow_src.model.output_layers import ContinuousOutput

torch.manual_seed(0)
M = 16
E_HAT = torch.randn(6, M, dtype=torch.float64) * 2
E = torch.nn.functional.normalize(torch.randn(6, M, dtype=torch.float64), dim=-1)
E_NEG = torch.nn.functional.normalize(torch.randn(6, M, dtype=torch.float64), dim=-1)


def np_cos(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


def np_log_cm(m, kappa):  # scipy's exponentially scaled Bessel function, fine at these kappas
    nu = m / 2 - 1
    return nu * np.log(kappa) - m / 2 * np.log(2 * np.pi) - (np.log(ive(nu, kappa)) + kappa)


a, e, n = E_HAT.numpy(), E.numpy(), E_NEG.numpy()
kappa = np.linalg.norm(a, axis=-1)
CASES = {
    "l2": (lambda x: losses.l2(x, E), np.sqrt(((a - e) ** 2).sum(-1))),
    "cosine": (lambda x: losses.cosine(x, E), 1 - np_cos(a, e)),
    "margin": (lambda x: losses.margin(x, E, E_NEG, 0.5), np.maximum(0, 0.5 + np_cos(a, n) - np_cos(a, e))),
    "nllvmf": (lambda x: losses.nll_vmf(x, E), -np_log_cm(M, kappa) - (a * e).sum(-1)),
    "nllvmf_reg1": (lambda x: losses.nll_vmf(x, E, 0.02), -np_log_cm(M, kappa) - (a * e).sum(-1) + 0.02 * kappa),
    "nllvmf_reg1reg2": (lambda x: losses.nll_vmf(x, E, 0.02, 0.1), -np_log_cm(M, kappa) - 0.1 * (a * e).sum(-1) + 0.02 * kappa),
    "nllvmf_released": (lambda x: losses.nll_vmf_released(x, E), -np_log_cm(M, kappa) + np.log1p(kappa) * (0.2 - np_cos(a, e))),
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
    l = logits.numpy()
    expected = -(l[np.arange(5), target.numpy()] - np.log(np.exp(l).sum(-1)))
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
        assert int(found[i]) == best_j


def test_margin_layer_needs_a_negative_sampler():
    table = torch.eye(8, dtype=torch.float32)
    with pytest.raises(ValueError, match="needs a negative sampler"):
        ContinuousOutput(4, table, "margin", {"gamma": 0.5}, None, (0, 2))
    layer = ContinuousOutput(4, table, "margin", {"gamma": 0.5}, "most_informative", (0, 2))
    out = layer.loss(torch.randn(3, 8), torch.tensor([4, 5, 6]))
    assert out.shape == (3,) and (out >= 0).all()
