"""log C_m against arbitrary precision; NLLvMF's value and gradient."""

import math

import mpmath
import pytest
import torch

from workflow_src.model.losses import nll_vmf
from workflow_src.model.vmf import log_cm

mpmath.mp.dps = 60


def reference_log_cm(m: int, kappa: float) -> mpmath.mpf:
    k, nu = mpmath.mpf(kappa), mpmath.mpf(m) / 2 - 1
    return nu * mpmath.log(k) - mpmath.mpf(m) / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(nu, k))


def reference_ratio(m: int, kappa: float) -> mpmath.mpf:
    k, nu = mpmath.mpf(kappa), mpmath.mpf(m) / 2 - 1
    return mpmath.besseli(nu + 1, k) / mpmath.besseli(nu, k)


KAPPAS = sorted({*torch.logspace(-4, 5, 28, dtype=torch.float64).tolist(), 1.03, 37.0, 150.0, 299.0, 511.0, 4321.0})


@pytest.mark.parametrize("m", [2, 3, 64, 300, 512, 1024])
def test_log_cm_and_its_derivative_match_mpmath(m):
    kappa = torch.tensor(KAPPAS, dtype=torch.float64, requires_grad=True)
    value = log_cm(m, kappa)
    value.sum().backward()
    assert torch.isfinite(value).all() and torch.isfinite(kappa.grad).all()
    for k, v, g in zip(KAPPAS, value.tolist(), kappa.grad.tolist()):
        ref = reference_log_cm(m, k)
        assert abs(v - ref) <= 1e-8 * max(1.0, abs(ref)), (m, k, v, ref)
        ratio = reference_ratio(m, k)
        assert abs(g + ratio) <= 1e-8 * ratio, (m, k, g, -ratio)


def test_no_underflow_where_the_released_code_gives_log_zero():
    # scipy's ive(149, k) underflows for k below ~1.03 at m = 300; the exact value is finite.
    kappa = torch.tensor([1e-6, 0.5, 1.0], dtype=torch.float64)
    value = log_cm(300, kappa)
    for k, v in zip(kappa.tolist(), value.tolist()):
        assert math.isclose(v, float(reference_log_cm(300, k)), rel_tol=1e-10)


def test_float32_input_keeps_its_dtype_and_device():
    kappa = torch.tensor([0.5, 20.0], dtype=torch.float32)
    value = log_cm(300, kappa)
    assert value.dtype == torch.float32 and value.device == kappa.device


def test_nll_vmf_value_matches_mpmath():
    torch.manual_seed(0)
    m = 64
    e_hat = torch.randn(5, m, dtype=torch.float64) * 3
    e = torch.nn.functional.normalize(torch.randn(5, m, dtype=torch.float64), dim=-1)
    for lambda1, lambda2 in ((0.0, 1.0), (0.02, 1.0), (0.02, 0.1)):
        loss = nll_vmf(e_hat, e, lambda1, lambda2)
        for i in range(5):
            kappa = float(e_hat[i].norm())
            expected = -reference_log_cm(m, kappa) - lambda2 * float(e_hat[i] @ e[i]) + lambda1 * kappa
            assert abs(float(loss[i]) - expected) < 1e-9 * max(1, abs(expected))


def test_nll_vmf_gradient_matches_finite_differences():
    torch.manual_seed(1)
    e_hat = (torch.randn(4, 300, dtype=torch.float64) * 2).requires_grad_()
    e = torch.nn.functional.normalize(torch.randn(4, 300, dtype=torch.float64), dim=-1)
    assert torch.autograd.gradcheck(lambda x: nll_vmf(x, e, 0.02, 0.1), (e_hat,), eps=1e-6, atol=1e-6)


def test_train_overrides_change_one_experiments_schedule_and_name_unknown_experiments():
    from workflow_src import layout

    train = {
        "max_epochs": 3,
        "patience": 2,
        "overrides": {"word2emb-word2vec-nllvmf_reg1": {"max_epochs": 20, "patience": 3}},
    }
    assert layout.schedule(train, "word2emb-word2vec-nllvmf_reg1") == {"max_epochs": 20, "patience": 3}
    assert layout.schedule(train, "word2emb-word2vec-nllvmf_reg1@lambda1=0.1") == {"max_epochs": 20, "patience": 3}
    assert layout.schedule(train, "word2emb-word2vec-nllvmf_reg1reg2") == {"max_epochs": 3, "patience": 2}
    with pytest.raises(ValueError, match="train.overrides: word2emb-nope not experiments"):
        layout.schedule({**train, "overrides": {"word2emb-nope": {"max_epochs": 1}}}, "word2word-ce")
