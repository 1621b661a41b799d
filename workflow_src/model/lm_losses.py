"""The tying paper's augmented loss (Inan et al., 2017, §3, §6.2), one value per target token.

`logits` are the model's W h + b (N x V), `target` the next-word ids (N), `embedding` the input
embedding matrix in torch's layout, V x d: row w is the vector l_w of word w, i.e. the matrix is L^T,
and `output_bias` is b (None for a model without one, as under RE). J reads W h + b; J_aug's ŷ reads
W h alone: Eq. 3.1 has no bias.
"""

from __future__ import annotations

import functools

import torch

from workflow_src.model.losses import cross_entropy
from workflow_src.specs import LMSpec


def augmented_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    embedding: torch.Tensor,
    tau: float = 20.0,
    target_gradient: bool = False,
) -> torch.Tensor:
    """`logits`: W h, without the bias.

    J_aug = KL(ỹ ‖ ŷ) = Σ_i ỹ_i (log ỹ_i - log ŷ_i)                        (Eq. 3.2)

        ŷ = softmax(W h / τ),   ỹ = softmax(L^T u / τ),   u = L y*   (Eqs. 3.1, 3.6, 3.7)

    ỹ is the target distribution and is held constant (no gradient reaches L through it), so
    the gradient is the paper's ∂J_aug / ∂(W h) = (ŷ - ỹ) / τ (Eq. 3.4); L learns from J_aug
    only where it produces W h: through the inputs, and through W itself under RE. The paper is
    silent on it (ledger D16); `target_gradient` (config lm.augmented_target_gradient) lets the
    gradient reach L through ỹ as well, as an implementation without a stop-gradient would.
    """
    with torch.set_grad_enabled(target_gradient and torch.is_grad_enabled()):
        log_y_tilde = torch.log_softmax(embedding[target] @ embedding.T / tau, dim=-1)
    log_y_hat = torch.log_softmax(logits / tau, dim=-1)
    return (log_y_tilde.exp() * (log_y_tilde - log_y_hat)).sum(-1)


def without_bias(logits: torch.Tensor, output_bias: torch.Tensor | None) -> torch.Tensor:
    """W h from W h + b."""
    return logits if output_bias is None else logits - output_bias


def augmented_total_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    embedding: torch.Tensor,
    output_bias: torch.Tensor | None,
    gamma: float,
    tau: float = 20.0,
    target_gradient: bool = False,
) -> torch.Tensor:
    """J_tot = J(W h + b) + α J_aug(W h),  α = γ τ   (Eq. 3.3, appendix A: τ = 20, γ 0.5-0.8 PTB, 1.0-1.5 WT-2)."""
    return cross_entropy(logits, target) + gamma * tau * augmented_loss(
        without_bias(logits, output_bias), target, embedding, tau, target_gradient
    )


def beta_mixed_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    embedding: torch.Tensor,
    output_bias: torch.Tensor | None,
    beta: float,
    tau: float = 10.0,
) -> torch.Tensor:
    """J_tot = β J_aug(W h) τ² |V| + (1 - β) J(W h + b)   (Eq. 6.1, the Figure 1 experiments; τ = 10 in panel a).

    τ² |V| matches the scale of J_aug's gradient to J's as τ -> ∞ (Eq. 4.3)."""
    vocab_size = embedding.shape[0]
    return beta * tau**2 * vocab_size * augmented_loss(without_bias(logits, output_bias), target, embedding, tau) + (
        1 - beta
    ) * cross_entropy(logits, target)


OBJECTIVES = {  # a spec's `loss` -> (the loss_params it takes, ℓ(logits, target, embedding, output_bias) per token)
    "ce": ((), lambda logits, target, embedding, output_bias: cross_entropy(logits, target)),
    "augmented": (("gamma", "tau"), augmented_total_loss),
    "beta": (("beta", "tau"), beta_mixed_loss),
}


def build_objective(spec: LMSpec):
    """ℓ(logits, target, embedding, output_bias), one value per token: the spec's loss with its
    parameters (and, for AL, the spec's `target_gradient`)."""
    names, loss = OBJECTIVES[spec.loss]
    if spec.target_gradient:
        return functools.partial(loss, **spec.loss_params, target_gradient=True)
    return functools.partial(loss, **spec.loss_params) if names else loss
