r"""The von Mises-Fisher normaliser, exactly, in torch, on the tensor's own device.

    log C_m(k) = (m/2 - 1) log k - (m/2) log(2 pi) - log I_{m/2-1}(k)
    d/dk log C_m(k) = -I_{m/2}(k) / I_{m/2-1}(k)

With nu = m/2 - 1 the Bessel function is evaluated by its uniform asymptotic (Debye) expansion
(DLMF 10.41.3), which is accurate to machine precision for every k once nu is large:

    I_nu(nu z) ~ exp(nu eta) / (sqrt(2 pi nu) (1 + z^2)^{1/4}) * sum_k U_k(p) / nu^k,
    p = (1 + z^2)^{-1/2},   eta = sqrt(1 + z^2) + log(z / (1 + sqrt(1 + z^2))),

with the polynomials U_k built exactly (rational coefficients) from DLMF 10.41.10. For a small
order the expansion is taken at nu + n (n steps above a threshold) and brought down by the
stable backward recurrence of the ratios r_mu = I_{mu+1} / I_mu = 1 / (2 (mu + 1) / k + r_{mu+1}):

    log I_nu = log I_{nu+n} - sum_{j<n} log r_{nu+j}.

Everything is float64 elementwise torch on the input's device: no host round trip, no underflow
(the released code's scipy `ive` gives log 0 below k ~ 1.03 at m = 300), and the derivative is
the exact Bessel ratio rather than the paper's appendix bound.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import torch

DEBYE_TERMS = 12
DEBYE_MIN_ORDER = 40.0


def _poly_mul(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return out


@functools.lru_cache(maxsize=None)
def debye_polynomials(n_terms: int = DEBYE_TERMS) -> tuple[tuple[float, ...], ...]:
    """Coefficients (lowest power first) of U_0 .. U_{n-1}, DLMF 10.41.10:
    U_{k+1}(p) = p^2 (1 - p^2) U_k'(p) / 2 + (1/8) int_0^p (1 - 5 t^2) U_k(t) dt."""
    polys = [[Fraction(1)]]
    for _ in range(n_terms - 1):
        u = polys[-1]
        derivative = [i * c for i, c in enumerate(u)][1:] or [Fraction(0)]
        first = _poly_mul([Fraction(0), Fraction(0), Fraction(1, 2), Fraction(0), Fraction(-1, 2)], derivative)
        integrand = _poly_mul([Fraction(1), Fraction(0), Fraction(-5)], u)
        integral = [Fraction(0)] + [c / (i + 1) for i, c in enumerate(integrand)]
        size = max(len(first), len(integral))
        first += [Fraction(0)] * (size - len(first))
        integral += [Fraction(0)] * (size - len(integral))
        polys.append([f + g / 8 for f, g in zip(first, integral)])
    return tuple(tuple(float(c) for c in p) for p in polys)


@functools.lru_cache(maxsize=None)
def _debye_matrix(device: torch.device) -> torch.Tensor:
    """U_0 .. U_{K-1} as a K x (D+1) float64 coefficient matrix on `device` (made once)."""
    polys = debye_polynomials()
    width = max(len(p) for p in polys)
    return torch.tensor([list(p) + [0.0] * (width - len(p)) for p in polys], dtype=torch.float64, device=device)


def _log_bessel_i_debye(nu: float, kappa: torch.Tensor) -> torch.Tensor:
    """log I_nu(kappa) minus nu log(kappa) (cancelled analytically), for large nu. Every U_k(p)
    at once: powers of p times the coefficient matrix, a handful of kernels on any device."""
    z = kappa / nu
    root = torch.sqrt(1 + z * z)
    p = 1 / root
    coefficients = _debye_matrix(kappa.device)
    # sum_k U_k(p) / nu^k = sum_j p^j c_j with c = C^T nu^-k: one polynomial in p for this nu
    c = coefficients.T @ (nu ** -torch.arange(coefficients.shape[0], dtype=kappa.dtype, device=kappa.device))
    powers = torch.cumprod(p.unsqueeze(-1).expand(*p.shape, coefficients.shape[1] - 1), dim=-1)
    series = c[0] + powers @ c[1:]
    # nu * eta - nu log(kappa) = nu (root - log(nu) - log(1 + root))
    return (
        nu * (root - math.log(nu) - torch.log1p(root))
        - 0.5 * math.log(2 * math.pi * nu)
        - 0.5 * torch.log(root)
        + torch.log(series)
    )


def _log_bessel_i_scaled(nu: float, kappa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(S_nu, r_nu) with S_mu = log I_mu(kappa) - mu log kappa and r_mu = I_{mu+1} / I_mu.

    Debye at mu = nu + steps >= DEBYE_MIN_ORDER, then `steps` backward steps
    S_{mu-1} = S_mu + log(2 mu + kappa r_mu),   r_{mu-1} = kappa / (2 mu + kappa r_mu).
    """
    steps = max(0, math.ceil(DEBYE_MIN_ORDER - nu))
    mu = nu + steps
    scaled = _log_bessel_i_debye(mu, kappa)
    ratio = kappa * torch.exp(_log_bessel_i_debye(mu + 1, kappa) - scaled)
    for _ in range(steps):
        denominator = 2 * mu + kappa * ratio
        scaled = scaled + torch.log(denominator)
        ratio = kappa / denominator
        mu -= 1
    return scaled, ratio


def log_cm(m: int, kappa: torch.Tensor) -> torch.Tensor:
    """log C_m(kappa) (see the module docstring); kappa > 0, any shape, any device."""
    return LogCm.apply(kappa, m)


class LogCm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, kappa: torch.Tensor, m: int) -> torch.Tensor:
        nu = m / 2 - 1
        k64 = kappa.double()
        scaled, ratio = _log_bessel_i_scaled(nu, k64)
        ctx.save_for_backward(ratio.to(kappa.dtype))
        return (-(m / 2) * math.log(2 * math.pi) - scaled).to(kappa.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        (ratio,) = ctx.saved_tensors
        return -grad_output * ratio, None
