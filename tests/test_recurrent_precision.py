"""The recurrent layers run outside autocast, in fp32, whatever `train.precision` asks; the output
layers keep bf16 autocast. On CUDA, autocast would run cuDNN's LSTMs in fp16 (AutocastRNN.cpp casts
to half whatever dtype it is given); the same code turns it off on every device, so the CPU's bf16
autocast shows it here. On a GPU, `gpu_check` checks the dtypes under CUDA autocast itself.
Also: the encoder packs a batch without the host syncs of torch's own sorting."""

import pytest
import torch
from torch import nn

from tests import fixed_step
from tests.conftest import translation_spec
from workflow_src.model.lm import LSTMLanguageModel
from workflow_src.model.seq2seq import Seq2Seq


def recurrent_output_dtypes(model: nn.Module) -> tuple[list, list]:
    """Hooks that record the dtype of every LSTM / LSTMCell output, and those lists."""
    recorded: list = []

    def record(module, inputs, output):
        first = output[0] if isinstance(output, tuple) else output
        data = first.data if isinstance(first, nn.utils.rnn.PackedSequence) else first
        recorded.append((type(module).__name__, data.dtype))

    for module in model.modules():
        if isinstance(module, (nn.LSTM, nn.LSTMCell)):
            module.register_forward_hook(record)
    return recorded


@pytest.mark.parametrize(
    "kind,split,input_feed",
    [("softmax", False, True), ("softmax", True, True), ("joint_sampled", True, True), ("tied_nllvmf", False, False)],
)
def test_translation_models_recur_in_fp32_under_bf16_autocast(kind, split, input_feed):
    torch.manual_seed(0)
    spec = {**fixed_step.BASE, **fixed_step.KINDS[kind]}
    spec["model"] = {**spec["model"], "input_feed": input_feed}
    model = Seq2Seq(translation_spec(spec), 40, 40, 0, nn.functional.normalize(torch.randn(40, 6), dim=-1))
    model.decoder.split_input_projection = split  # True: every cell as CUDA runs it (lstm_cell)
    recurrent = recurrent_output_dtypes(model)
    states = []
    model.output.register_forward_pre_hook(lambda module, inputs: states.append(inputs[0].dtype))
    src, lengths, tgt_in, tgt_out = fixed_step.batches(1, 1)[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = model.loss(src, lengths, tgt_in, tgt_out, 0)
    assert recurrent and all(dtype == torch.float32 for _, dtype in recurrent), recurrent
    assert states and set(states) == {torch.float32}  # the decoder's states reach the output layer in fp32
    assert loss.dtype == torch.float32
    fp32_loss, _ = model.loss(src, lengths, tgt_in, tgt_out, 0)
    assert loss != fp32_loss  # autocast still runs the output layer's products in bf16


@pytest.mark.parametrize("dropout", [0.0, 0.5])
def test_the_language_model_recurs_in_fp32_under_bf16_autocast(dropout):
    """Both paths: nn.LSTM (no dropout, evaluation) and the unrolled variational-dropout segment."""
    torch.manual_seed(0)
    model = LSTMLanguageModel(50, 16, dropout=dropout).train()
    recurrent = recurrent_output_dtypes(model)
    tokens = torch.randint(0, 50, (7, 3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits, h, (h_n, c_n) = model(tokens, model.init_hidden(3))
    assert h.dtype == h_n.dtype == c_n.dtype == torch.float32
    assert all(dtype == torch.float32 for _, dtype in recurrent)
    assert logits.dtype == torch.bfloat16  # W h + b keeps autocast


def test_the_encoder_packs_sorted_on_the_host_with_torchs_numbers(monkeypatch):
    """Rows sorted by falling length on the host and packed with enforce_sorted=True (torch's own
    sorting copies its indices to and from the device, a host sync each), with exactly the outputs
    and final states of enforce_sorted=False."""
    from workflow_src.model import seq2seq

    torch.manual_seed(0)
    encoder = seq2seq.Encoder(30, 8, 12, 2, 0.0, 0).eval()
    lengths = torch.tensor([3, 7, 5, 7, 1])
    src = torch.randint(4, 30, (5, 7)) * (torch.arange(7)[None] < lengths[:, None])
    packs = []
    pack = seq2seq.pack_padded_sequence

    def recording_pack(x, lengths, batch_first, enforce_sorted):
        packs.append((lengths.device.type, lengths.tolist(), enforce_sorted))
        return pack(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)

    monkeypatch.setattr(seq2seq, "pack_padded_sequence", recording_pack)
    out, (h, c) = encoder(src, lengths)
    assert packs == [("cpu", [7, 7, 5, 3, 1], True)]
    packed = pack(encoder.embed(src), lengths, batch_first=True, enforce_sorted=False)
    reference, (h_ref, c_ref) = encoder.rnn(packed)
    reference, _ = seq2seq.pad_packed_sequence(reference, batch_first=True, total_length=7)
    assert torch.equal(out, reference)
    assert torch.equal(h, torch.cat([h_ref[-2], h_ref[-1]], -1)) and torch.equal(
        c, torch.cat([c_ref[-2], c_ref[-1]], -1)
    )
