"""Appendix B's subspace distance against scipy's principal angles, and its extreme values."""

import numpy as np
import pytest
import torch
from scipy.linalg import subspace_angles

from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.score.subspace import embedding_output_distance, subspace_distance

rng = np.random.default_rng(0)


@pytest.mark.parametrize("n, c", [(30, 5), (12, 12), (200, 3)])
def test_squared_distance_is_mean_squared_sine_of_principal_angles(n, c):
    x, y = rng.standard_normal((n, c)), rng.standard_normal((n, c))
    y[:, 0] = x @ rng.standard_normal(c)  # one shared direction, so the angles are not all equal
    d = subspace_distance(torch.from_numpy(x), torch.from_numpy(y)).item()
    assert d**2 == pytest.approx(np.mean(np.sin(subspace_angles(x, y)) ** 2), abs=1e-12)
    assert d == pytest.approx(subspace_distance(torch.from_numpy(y), torch.from_numpy(x)).item(), abs=1e-12)


def test_equal_spans_are_at_distance_zero():
    x = torch.randn(40, 6, dtype=torch.float64)
    assert subspace_distance(x, x @ torch.randn(6, 6, dtype=torch.float64)).item() == pytest.approx(0, abs=1e-12)


def test_orthogonal_spans_are_at_distance_one():
    q = torch.linalg.qr(torch.randn(40, 10, dtype=torch.float64)).Q
    x, y = q[:, :5] @ torch.randn(5, 5, dtype=torch.float64), q[:, 5:]
    assert subspace_distance(x, y).item() == pytest.approx(1, abs=1e-12)


def test_embedding_output_distance_compares_lt_and_w():
    tied = LSTMLanguageModel(50, 4, reuse_embedding=True)
    untied = LSTMLanguageModel(50, 4)
    assert embedding_output_distance(tied.embedding.weight, tied.output_weight).item() == pytest.approx(0, abs=1e-6)
    # two random 4-d subspaces of R^50: E[d²] = 1 - 4/50
    assert embedding_output_distance(untied.embedding.weight, untied.output_weight).item() > 0.85
    with pytest.raises(ValueError, match="V x d"):
        embedding_output_distance(untied.embedding.weight, untied.output_weight.T)
