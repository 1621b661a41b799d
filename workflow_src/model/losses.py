"""Training losses, one small function each, returning one value per target token.

Continuous-output losses take the predicted vectors `e_hat` (N x m) and the unit target
embeddings `e` (N x m) of the reference words; margin losses also take negatives `e_neg`
(N x k x m, unit, outside the graph), made by one of `NEGATIVES`.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from workflow_src.model.precision import at_least_fp32
from workflow_src.model.vmf import log_cm


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """CE(s, w) = -log softmax(s)_w   (vMF paper Eq. 1), normalised in fp32 whatever the
    logits' precision (`workflow_src.model.precision`)."""
    return F.cross_entropy(at_least_fp32(logits), target, reduction="none")


def l2(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """L = ||e_hat - e||_2, the square-rooted squared error (vMF paper §4.2)."""
    return ((e_hat - e).pow(2).sum(-1) + 1e-12).sqrt()


def cosine(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """L = 1 - e_hat^T e / (||e_hat|| ||e||)   (vMF paper §4.2)."""
    return 1 - F.cosine_similarity(e_hat, e, dim=-1, eps=1e-12)


def margin(e_hat: torch.Tensor, e: torch.Tensor, e_neg: torch.Tensor, gamma: float = 0.5) -> torch.Tensor:
    """L = (1/k) sum_j max{0, gamma + u'_j^T u_hat - u^T u_hat},  u_hat = e_hat / ||e_hat||

    over k negatives u'_j (vMF paper §4.2 with k = 1 and gamma = 0.5; syn-margin paper Eq. 1, and
    its negative sampling averages k = 5 draws). Targets and negatives are unit vectors.
    """
    unit_hat = F.normalize(e_hat, dim=-1, eps=1e-12)
    positive = (unit_hat * e).sum(-1, keepdim=True)
    negative = (unit_hat.unsqueeze(1) * e_neg).sum(-1)
    return torch.relu(gamma + negative - positive).mean(-1)


def nll_vmf(e_hat: torch.Tensor, e: torch.Tensor, lambda1: float = 0.0, lambda2: float = 1.0) -> torch.Tensor:
    """NLLvMF with the paper's regularisers (vMF paper §3):

        NLLvMF(e_hat; e) = -log C_m(||e_hat||) - lambda2 e_hat^T e + lambda1 ||e_hat||

    lambda1 = 0, lambda2 = 1 is the plain negative log-likelihood; reg1 adds lambda1 = 0.02;
    reg1+reg2 also scales the cosine term by lambda2 = 0.1.
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return -log_cm(e_hat.shape[-1], kappa) - lambda2 * (e_hat * e).sum(-1) + lambda1 * kappa


def neg_log_cm_appendix(m: int, kappa: torch.Tensor) -> torch.Tensor:
    """The vMF paper's appendix approximation of -log C_m(kappa), with v = m/2:

        -log C_m(kappa) ~ sqrt((v+1)^2 + kappa^2) - (v-1) log(v-1 + sqrt((v+1)^2 + kappa^2)) + const

    It integrates the bound kappa / (v-1 + sqrt((v+1)^2 + kappa^2)) on the Bessel ratio
    I_{m/2}(kappa) / I_{m/2-1}(kappa) = d/dkappa (-log C_m), so it is a surrogate for the gradient
    (within 0.2% of it for m >= 48), not for the value: it leaves out a kappa-independent constant.
    The appendix prints it as an approximation of +log C_m; that sign is wrong (its derivative is
    positive, while log C_m decreases in kappa), so it stands here for -log C_m. With v = m/2 its
    derivative bounds the ratio from above and matches it to first order at kappa -> 0 (kappa / m);
    the authors' released code (a commented-out alternative loss) takes v = m/2 - 1, the Bessel order.
    """
    v = m / 2
    root = torch.sqrt((v + 1) ** 2 + kappa * kappa)
    return root - (v - 1) * torch.log(v - 1 + root)


def nll_vmf_appendix(e_hat: torch.Tensor, e: torch.Tensor, lambda1: float = 0.0, lambda2: float = 1.0) -> torch.Tensor:
    """NLLvMF with the paper's regularisers (as `nll_vmf`) and the appendix's approximate -log C_m
    (`neg_log_cm_appendix`), which the paper recommends in place of log C_m (§8.2):

        L = sqrt((v+1)^2 + k^2) - (v-1) log(v-1 + sqrt((v+1)^2 + k^2)) - lambda2 e_hat^T e + lambda1 k,
        k = ||e_hat||, v = m/2
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return neg_log_cm_appendix(e_hat.shape[-1], kappa) - lambda2 * (e_hat * e).sum(-1) + lambda1 * kappa


def nll_vmf_released(e_hat: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """The loss the vMF authors' released code trains with (not in the paper):

    L = -log C_m(kappa) + log(1 + kappa) (0.2 - cos(e_hat, e)),   kappa = ||e_hat||
    """
    kappa = e_hat.norm(dim=-1).clamp_min(1e-12)
    return -log_cm(e_hat.shape[-1], kappa) + torch.log1p(kappa) * (
        0.2 - F.cosine_similarity(e_hat, e, dim=-1, eps=1e-12)
    )


@torch.no_grad()
def most_informative_negative(
    e_hat: torch.Tensor, target: torch.Tensor, table: torch.Tensor, banned: tuple[int, ...] = (), chunk: int = 1024
) -> torch.Tensor:
    """u' = e_j, j = argmax_{j != w} cos(e_hat, e_j) - cos(e_w, e_j) over the unit table: the word
    closest to the prediction and farthest from the target (Lazaridou et al. 2015, as the vMF
    authors' released code picks it), never one of the `banned` rows (padding, start symbol).
    Over unit rows the score is one product, (u_hat - e_w) E^T, not two N x m x V ones; it runs in
    fp32 under any autocast. Returns N x 1 x m."""
    unit_hat = F.normalize(at_least_fp32(e_hat), dim=-1)
    ids = torch.empty_like(target)
    with torch.autocast(device_type=e_hat.device.type, enabled=False):
        for start in range(0, len(target), chunk):  # bounds the N x V score matrix
            rows = slice(start, start + chunk)
            scores = (unit_hat[rows] - table[target[rows]]) @ table.T
            scores.scatter_(1, target[rows, None], float("-inf"))
            for word in banned:  # one at a time: a list index would be copied to the device, a sync
                scores[:, word].fill_(float("-inf"))
            ids[rows] = scores.argmax(-1)
    return table[ids].unsqueeze(1)


@functools.lru_cache(maxsize=8)
def _allowed_ids(vocab_size: int, banned: tuple[int, ...], device: torch.device) -> torch.Tensor:
    return torch.tensor(sorted(set(range(vocab_size)) - set(banned)), device=device)


@torch.no_grad()
def uniform_negative_ids(target: torch.Tensor, vocab_size: int, banned: tuple[int, ...], k: int) -> torch.Tensor:
    """k word ids per target (N x k), uniform over the table without the `banned` rows and the
    target itself, drawn with torch's generator (so a seeded run draws the same)."""
    allowed = _allowed_ids(vocab_size, tuple(banned), target.device)
    # Draw a position among the allowed ids less the target's own, then step over the target.
    target_position = torch.searchsorted(allowed, target)
    target_allowed = allowed[target_position.clamp(max=len(allowed) - 1)] == target
    choices = (len(allowed) - target_allowed.long())[:, None]
    draws = (torch.rand(len(target), k, device=target.device) * choices).long().minimum(choices - 1)
    draws += (draws >= target_position[:, None]) & target_allowed[:, None]
    return allowed[draws]


def random_negatives(
    e_hat: torch.Tensor, target: torch.Tensor, table: torch.Tensor, banned: tuple[int, ...] = (), k: int = 5
) -> torch.Tensor:
    """u'_1..u'_k drawn uniformly from the table, never the target (syn-margin paper §4, k = 5).
    Returns N x k x m."""
    return table[uniform_negative_ids(target, len(table), banned, k)]


@torch.no_grad()
def projection_negative(
    e_hat: torch.Tensor, target: torch.Tensor, table: torch.Tensor, banned: tuple[int, ...] = ()
) -> torch.Tensor:
    """SMP: u' = u_orth = (u_hat - (u_hat^T u) u) / ||u_hat - (u_hat^T u) u||, the unit vector of the
    component of the prediction orthogonal to the target (syn-margin paper §3.2), detached.
    Returns N x 1 x m."""
    unit_hat, u = F.normalize(e_hat, dim=-1), table[target]
    return F.normalize(unit_hat - (unit_hat * u).sum(-1, keepdim=True) * u, dim=-1).unsqueeze(1)


@torch.no_grad()
def difference_negative(
    e_hat: torch.Tensor, target: torch.Tensor, table: torch.Tensor, banned: tuple[int, ...] = ()
) -> torch.Tensor:
    """SMD: u' = u_diff = (u_hat - u) / ||u_hat - u|| (syn-margin paper §3.2), detached.
    Returns N x 1 x m."""
    return F.normalize(F.normalize(e_hat, dim=-1) - table[target], dim=-1).unsqueeze(1)


CONTINUOUS_LOSSES = {
    "l2": l2,
    "cosine": cosine,
    "nllvmf": nll_vmf,
    "nllvmf_released": nll_vmf_released,
    "nllvmf_appendix": nll_vmf_appendix,
    "margin": margin,
}
NEGATIVES = {
    "most_informative": most_informative_negative,
    "random": random_negatives,
    "projection": projection_negative,
    "difference": difference_negative,
}
