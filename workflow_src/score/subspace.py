"""Subspace distance between two matrices' column spans (tying paper, appendix B; Figure 1).

    U = qr(X).Q,  V = qr(Y).Q,  R = V - U Uᵀ V,  d² = ‖R‖²_F / C = (1/C) Σ_i sin² θ_i   (B.1)

with C the number of columns of Y and θ_i the principal angles: 0 for equal spans, 1 for
orthogonal ones. Figure 1 compares the span of the rows of L (the columns of Lᵀ, torch's V x d
embedding weight) with the span of the columns of the output projection W (V x d): two
d-dimensional subspaces of R^|V|, so C = d.
"""

from __future__ import annotations

import torch


def subspace_distance(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """d between span(columns of x) and span(columns of y), both n x C with full column rank;
    computed in float64 on the inputs' device."""
    u = torch.linalg.qr(x.detach().double()).Q
    v = torch.linalg.qr(y.detach().double()).Q
    residual = v - u @ (u.T @ v)
    return (residual.pow(2).sum() / v.shape[1]).sqrt()


def embedding_output_distance(embedding: torch.Tensor, output_weight: torch.Tensor) -> torch.Tensor:
    """d(Lᵀ, W) of Figure 1, from torch's embedding weight (V x d, which is Lᵀ) and output weight
    (V x d, which is W)."""
    if embedding.shape != output_weight.shape:
        raise ValueError(f"Lᵀ {tuple(embedding.shape)} and W {tuple(output_weight.shape)} must both be V x d")
    return subspace_distance(embedding, output_weight)
