"""Training losses, one small function each, returning one value per target token.

Continuous-output losses take the predicted vectors `e_hat` (N x m) and the unit target
embeddings `e` (N x m) of the reference words; margin losses also take a negative `e_neg`
(N x m, unit), chosen by one of `NEGATIVES`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from workflow_src.model.vmf import log_cm


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CE(s, w) = -log softmax(s)_w   (vMF paper Eq. 1)."""
    return F.cross_entropy(logits, target, reduction="none")


def l2(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """L = ||e_hat - e||_2, the square-rooted squared error (vMF paper §4.2)."""
    return ((e_hat - e).pow(2).sum(-1) + 1e-12).sqrt()


def cosine(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """L = 1 - e_hat^T e / (||e_hat|| ||e||)   (vMF paper §4.2)."""
    return 1 - F.cosine_similarity(e_hat, e, dim=-1, eps=1e-12)


def margin(e_hat: torch.Tensor, e: torch.Tensor, e_neg: torch.Tensor, gamma: float = 0.5) -> torch.Tensor:
    """L = max{0, gamma + cos(e_hat, e_neg) - cos(e_hat, e)}   (vMF paper §4.2, gamma = 0.5)."""
    return torch.relu(gamma + F.cosine_similarity(e_hat, e_neg, dim=-1, eps=1e-12)
                      - F.cosine_similarity(e_hat, e, dim=-1, eps=1e-12))


def nll_vmf(e_hat: torch.Tensor, e: torch.Tensor, lambda1: float = 0.0, lambda2: float = 1.0) -> torch.Tensor:
    """NLLvMF with the paper's regularisers (vMF paper §3):

        NLLvMF(e_hat; e) = -log C_m(||e_hat||) - lambda2 e_hat^T e + lambda1 ||e_hat||

    lambda1 = 0, lambda2 = 1 is the plain negative log-likelihood; reg1 adds lambda1 = 0.02;
    reg1+reg2 also scales the cosine term by lambda2 = 0.1.
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return -log_cm(e_hat.shape[-1], kappa) - lambda2 * (e_hat * e).sum(-1) + lambda1 * kappa


def nll_vmf_released(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """The loss the vMF authors' released code trains with (not in the paper):

        L = -log C_m(kappa) + log(1 + kappa) (0.2 - cos(e_hat, e)),   kappa = ||e_hat||
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return -log_cm(e_hat.shape[-1], kappa) + torch.log1p(kappa) * (0.2 - F.cosine_similarity(e_hat, e, dim=-1, eps=1e-12))


@torch.no_grad()
def most_informative_negative(e_hat: torch.Tensor, target: torch.Tensor, table: torch.Tensor,
                              banned: list[int] = (), chunk: int = 1024) -> torch.Tensor:
    """argmax_{j != w} cos(e_hat, e_j) - cos(e_w, e_j) over the unit table: the word closest to the
    prediction and farthest from the target (the released code's max-margin negative), never one
    of the `banned` rows (padding, start symbol). Returns ids (N), outside the graph."""
    unit_hat = F.normalize(e_hat, dim=-1)
    out = torch.empty_like(target)
    for start in range(0, len(target), chunk):  # bounds the N x V score matrix
        rows = slice(start, start + chunk)
        scores = unit_hat[rows] @ table.T - table[target[rows]] @ table.T
        scores.scatter_(1, target[rows, None], float("-inf"))
        scores[:, list(banned)] = float("-inf")
        out[rows] = scores.argmax(-1)
    return out


CONTINUOUS_LOSSES = {
    "l2": l2,
    "cosine": cosine,
    "nllvmf": nll_vmf,
    "nllvmf_released": nll_vmf_released,
    "margin": margin,
}
NEGATIVES = {"most_informative": most_informative_negative}
