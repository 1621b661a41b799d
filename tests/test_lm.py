"""The VD-LSTM language model (hand-unrolled LSTM, variational dropout masks, RE tying, perplexity)
and the augmented loss (value, gradient against finite differences and Eqs. 3.4 / 4.3 / 4.4)."""

import copy
import math

import numpy as np
import pytest
import torch
from scipy.special import log_softmax, rel_entr

from tests.conftest import LM_SPEC, hand_set_model
from workflow_src.model.lm import LSTMLanguageModel, perplexity, unrolled_lstm
from workflow_src.model.lm_losses import augmented_loss, augmented_total_loss, beta_mixed_loss, build_objective
from workflow_src.model.losses import cross_entropy
from workflow_src.train.lm_spec import resolve

V, D, T, B = 13, 8, 6, 5


def model_and_batch(seed=0, **options):
    torch.manual_seed(seed)
    model = LSTMLanguageModel(V, D, init_range=0.5, **options).double()
    tokens = torch.randint(V, (T, B))
    h0, c0 = model.init_hidden(B)
    state = (torch.randn_like(h0), torch.randn_like(c0))  # a carried, nonzero state
    return model, tokens, state


def record_masks(model):
    recorded = []
    sample = model.sample_masks

    def recording(*args):
        recorded.append(sample(*args))
        return recorded[-1]

    model.sample_masks = recording
    return recorded


def test_unrolled_lstm_without_masks_is_nn_lstm():
    model, tokens, state = model_and_batch()
    x = model.embedding(tokens)
    ones = [torch.ones(B, D, dtype=torch.float64)] * 2
    h, (h_n, c_n) = unrolled_lstm(model.rnn, x, state, ones)
    h_ref, (h_n_ref, c_n_ref) = model.rnn(x, state)
    torch.testing.assert_close(h, h_ref)
    torch.testing.assert_close(h_n, h_n_ref)
    torch.testing.assert_close(c_n, c_n_ref)


def test_masks_are_per_row_constant_in_time_and_tied_between_recurrence_and_next_layer():
    """Row b with masks (m_x, m_1, m_2) is nn.LSTM with the columns of W_ih^1 scaled by m_x,
    of W_hh^1 and W_ih^2 by m_1, of W_hh^2 by m_2, and its output multiplied by m_2: the same
    weights at every step, hence the same masks at every step."""
    model, tokens, state = model_and_batch(dropout=0.5)
    recorded = record_masks(model.train())
    _, h, _ = model(tokens, state)
    ((m_x, m_1, m_2),) = recorded
    for mask in (m_x, m_1, m_2):
        assert mask.shape == (B, D)
        assert set(mask.unique().tolist()) == {0.0, 2.0}
        assert len({tuple(row.tolist()) for row in mask}) == B  # differ across sequences
    x = model.embedding(tokens)
    for b in range(B):
        rnn = copy.deepcopy(model.rnn)
        with torch.no_grad():
            rnn.weight_ih_l0 *= m_x[b]
            rnn.weight_hh_l0 *= m_1[b]
            rnn.weight_ih_l1 *= m_1[b]
            rnn.weight_hh_l1 *= m_2[b]
        h_ref, _ = rnn(x[:, b : b + 1], (state[0][:, b : b + 1], state[1][:, b : b + 1]))
        torch.testing.assert_close(h[:, b], h_ref[:, 0] * m_2[b])
    dropped = h == 0
    assert (dropped == (m_2 == 0)).all()  # every step of row b drops the same units


def test_input_mask_is_constant_in_time():
    model, tokens, state = model_and_batch(dropout=0.5)
    recorded = record_masks(model.train())
    x = model.embedding(tokens).detach().requires_grad_()
    model.embedding.register_forward_hook(lambda module, inputs, output: x)
    logits, _, _ = model(tokens, state)
    logits.sum().backward()
    m_x = recorded[0][0]
    assert ((x.grad == 0) == (m_x == 0)).all()  # T x B x D against B x D: the same at every t


def test_masks_are_fresh_for_every_segment():
    model, tokens, state = model_and_batch(dropout=0.5)
    recorded = record_masks(model.train())
    model(tokens, state)
    model(tokens, state)
    assert not torch.equal(recorded[0][0], recorded[1][0])


def test_no_dropout_in_eval_mode():
    model, tokens, state = model_and_batch(dropout=0.5)
    model.eval()
    model.sample_masks = None  # would raise if called
    logits_1, h, _ = model(tokens, state)
    logits_2, _, _ = model(tokens, state)
    torch.testing.assert_close(logits_1, logits_2)
    h_ref, _ = unrolled_lstm(model.rnn, model.embedding(tokens), state, [torch.ones(B, D, dtype=torch.float64)] * 2)
    torch.testing.assert_close(h, h_ref)


def test_carried_state_continues_the_sequence_and_is_detached():
    model, tokens, state = model_and_batch()
    model.eval()
    whole, _, _ = model(tokens, state)
    first, _, carried = model(tokens[:3], state)
    second, _, _ = model(tokens[3:], carried)
    torch.testing.assert_close(torch.cat([first, second]), whole)
    assert not carried[0].requires_grad and not carried[1].requires_grad


def test_perplexity_of_a_hand_set_model():
    """All weights zero but layer 2's g and o biases and the output layer, so that with one unit
    c_t = f c_{t-1} + i g = (c_{t-1} + tanh 1) / 2, h_t = σ(0.5) tanh c_t, logits = W h + b."""
    model = hand_set_model([1.0, -1.0, 2.0], [0.0, 0.5, 0.0])
    model.eval()
    inputs, targets = torch.tensor([[0], [1], [2]]), [0, 2, 1]
    logits, _, _ = model(inputs, model.init_hidden(1))
    nll_sum = cross_entropy(logits.view(-1, 3), torch.tensor(targets)).sum().item()

    c, hand_nll = 0.0, 0.0
    for target in targets:
        c = (c + math.tanh(1.0)) / 2
        h = math.tanh(c) / (1 + math.exp(-0.5))
        scores = [h, -h + 0.5, 2 * h]
        hand_nll += math.log(sum(math.exp(s) for s in scores)) - scores[target]
    assert perplexity(nll_sum, 3) == pytest.approx(math.exp(hand_nll / 3), rel=1e-12)
    assert perplexity(3 * math.log(10), 3) == pytest.approx(10)


def test_reused_embedding_is_the_output_layer():
    tied, tokens, state = model_and_batch(reuse_embedding=True)
    assert tied.output_weight.data_ptr() == tied.embedding.weight.data_ptr()
    assert tied.output_bias is None and not any("decoder" in name for name, _ in tied.named_parameters())
    untied = LSTMLanguageModel(V, D).double()
    n_tied, n_untied = (sum(p.numel() for p in m.parameters()) for m in (tied, untied))
    assert n_untied - n_tied == V * D + V

    # the tied gradient is the sum of the gradients of its two uses, taken apart in an untied copy
    untied.load_state_dict(tied.state_dict(), strict=False)
    with torch.no_grad():
        untied.decoder.weight.copy_(tied.embedding.weight)
        untied.decoder.bias.zero_()
    targets = torch.randint(V, (T * B,))
    for model in (tied, untied):
        logits, _, _ = model(tokens, state)
        cross_entropy(logits.view(-1, V), targets).sum().backward()
    input_grad, output_grad = untied.embedding.weight.grad, untied.decoder.weight.grad
    assert input_grad.abs().sum() > 0 and output_grad.abs().sum() > 0
    torch.testing.assert_close(tied.embedding.weight.grad, input_grad + output_grad)


# augmented loss ---------------------------------------------------------------------------------

torch.manual_seed(1)
N = 7
LOGITS = torch.randn(N, V, dtype=torch.float64) * 3
TARGET = torch.randint(V, (N,))
EMBEDDING = torch.randn(V, D, dtype=torch.float64)


def test_augmented_loss_is_kl_of_embedding_similarities_to_tempered_prediction():
    tau = 2.0
    e = EMBEDDING.numpy()
    y_tilde = np.exp(log_softmax(e[TARGET.numpy()] @ e.T / tau, axis=-1))
    y_hat = np.exp(log_softmax(LOGITS.numpy() / tau, axis=-1))
    expected = rel_entr(y_tilde, y_hat).sum(-1)
    np.testing.assert_allclose(augmented_loss(LOGITS, TARGET, EMBEDDING, tau).numpy(), expected, rtol=1e-10)
    assert (expected > 0).all()


def test_augmented_loss_is_zero_when_logits_match_embedding_similarities():
    logits = EMBEDDING[TARGET] @ EMBEDDING.T  # W h = L^T u (Eq. 4.4)
    torch.testing.assert_close(augmented_loss(logits, TARGET, EMBEDDING), torch.zeros(N, dtype=torch.float64))


@pytest.mark.parametrize(
    "loss",
    [
        lambda s: augmented_loss(s, TARGET, EMBEDDING, 3.0),
        lambda s: augmented_total_loss(s, TARGET, EMBEDDING, None, gamma=0.7, tau=3.0),
        lambda s: beta_mixed_loss(s, TARGET, EMBEDDING, None, beta=0.4, tau=3.0),
    ],
)
def test_gradient_against_finite_differences(loss):
    assert torch.autograd.gradcheck(loss, LOGITS.clone().requires_grad_())


def test_gradient_is_difference_of_distributions_over_tau_and_not_into_the_target():
    tau = 3.0
    logits = LOGITS.clone().requires_grad_()
    embedding = EMBEDDING.clone().requires_grad_()
    grad_logits, grad_embedding = torch.autograd.grad(
        augmented_loss(logits, TARGET, embedding, tau).sum(), (logits, embedding), allow_unused=True
    )
    y_hat = torch.softmax(LOGITS / tau, -1)
    y_tilde = torch.softmax(EMBEDDING[TARGET] @ EMBEDDING.T / tau, -1)
    torch.testing.assert_close(grad_logits, (y_hat - y_tilde) / tau)  # Eq. 3.4
    assert grad_embedding is None


def test_with_target_gradient_the_embedding_also_learns_through_y_tilde():
    """lm.augmented_target_gradient (ledger D16): the same value, and a gradient on L that finite
    differences of J_aug through ỹ = softmax(L^T L y* / τ) confirm."""
    tau = 3.0
    torch.testing.assert_close(
        augmented_loss(LOGITS, TARGET, EMBEDDING, tau, target_gradient=True),
        augmented_loss(LOGITS, TARGET, EMBEDDING, tau),
    )
    assert torch.autograd.gradcheck(
        lambda e: augmented_loss(LOGITS, TARGET, e, tau, target_gradient=True), EMBEDDING.clone().requires_grad_()
    )
    objective = build_objective(
        resolve({**LM_SPEC, "loss": "augmented", "loss_params": {"gamma": 0.5, "tau": tau}, "target_gradient": True})
    )
    embedding = EMBEDDING.clone().requires_grad_()
    assert objective(LOGITS, TARGET, embedding, None).sum().requires_grad  # the trainer's objective carries it
    with torch.no_grad():  # evaluation builds no graph
        assert not augmented_loss(
            LOGITS, TARGET, EMBEDDING.clone().requires_grad_(), tau, target_gradient=True
        ).requires_grad


def test_high_temperature_gradient_matches_logits_to_embedding_similarities():
    """τ² |V| ∂J_aug/∂(W h) -> (W h - L^T u) as τ -> ∞ (Eq. 4.3), both centred over the vocabulary
    (the paper assumes mean-zero similarities)."""
    tau = 1e4
    logits = LOGITS.clone().requires_grad_()
    (grad,) = torch.autograd.grad(augmented_loss(logits, TARGET, EMBEDDING, tau).sum(), logits)
    difference = LOGITS - EMBEDDING[TARGET] @ EMBEDDING.T
    torch.testing.assert_close(tau**2 * V * grad, difference - difference.mean(-1, keepdim=True), rtol=1e-3, atol=1e-3)


def test_total_losses_weigh_cross_entropy_and_augmented_loss():
    ce = cross_entropy(LOGITS, TARGET)
    aug = augmented_loss(LOGITS, TARGET, EMBEDDING, 20.0)
    torch.testing.assert_close(augmented_total_loss(LOGITS, TARGET, EMBEDDING, None, gamma=0.5), ce + 0.5 * 20 * aug)
    torch.testing.assert_close(beta_mixed_loss(LOGITS, TARGET, EMBEDDING, None, beta=0.0), ce)
    torch.testing.assert_close(beta_mixed_loss(LOGITS, TARGET, EMBEDDING, None, beta=1.0, tau=20.0), 20**2 * V * aug)


def test_augmented_loss_reads_the_logits_without_the_output_bias():
    """Eq. 3.1: ŷ = softmax(W h / τ) has no b, while J reads W h + b."""
    bias = torch.randn(V, dtype=torch.float64) * 5
    with_bias = LOGITS + bias
    ce = cross_entropy(with_bias, TARGET)
    aug = augmented_loss(LOGITS, TARGET, EMBEDDING, 20.0)
    assert not torch.allclose(aug, augmented_loss(with_bias, TARGET, EMBEDDING, 20.0))
    torch.testing.assert_close(augmented_total_loss(with_bias, TARGET, EMBEDDING, bias, gamma=0.5), ce + 0.5 * 20 * aug)
    torch.testing.assert_close(
        beta_mixed_loss(with_bias, TARGET, EMBEDDING, bias, beta=0.5, tau=20.0), 0.5 * 20**2 * V * aug + 0.5 * ce
    )
