"""Training losses, one small function each, returning one value per target token.

Continuous-output losses take the predicted vectors `e_hat` (N x m) and the unit target
embeddings `e` (N x m) of the reference words.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from workflow_src.model.vmf import log_cm


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CE(s, w) = -log softmax(s)_w   (vMF paper Eq. 1)."""
    return F.cross_entropy(logits, target, reduction="none")


def nll_vmf(e_hat: torch.Tensor, e: torch.Tensor, lambda1: float = 0.0, lambda2: float = 1.0) -> torch.Tensor:
    """NLLvMF with the paper's regularisers (vMF paper §3):

        NLLvMF(e_hat; e) = -log C_m(||e_hat||) - lambda2 e_hat^T e + lambda1 ||e_hat||

    lambda1 = 0, lambda2 = 1 is the plain negative log-likelihood; reg1 adds lambda1 = 0.02;
    reg1+reg2 also scales the cosine term by lambda2 = 0.1.
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return -log_cm(e_hat.shape[-1], kappa) - lambda2 * (e_hat * e).sum(-1) + lambda1 * kappa


LOSSES = {"ce": cross_entropy, "nllvmf": nll_vmf}
