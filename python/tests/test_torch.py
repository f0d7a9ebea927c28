"""nwc.torch on a CUDA device (skipped, and said so, without torch or without a GPU)."""

import pytest

torch = pytest.importorskip("torch", reason="skipped: torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("skipped: no CUDA device", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import nwc  # noqa: E402
import nwc.torch as nt  # noqa: E402


def linear(out_f, in_f, bias=False, seed=0):
    torch.manual_seed(seed)
    layer = nn.Linear(in_f, out_f, bias=bias, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        layer.weight.normal_(0, 0.02)
    return layer


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("shape", [(300, 700), (256, 1024), (1000, 576)])
def test_dequant_is_exact_and_matvec_close(layout, shape):
    layer = linear(*shape)
    q = nt.NWCLinear.from_linear(layer, layout=layout)
    assert torch.equal(q.weight_nwc.dense().view(torch.int16), layer.weight.view(torch.int16))
    x = torch.randn(1, shape[1], device="cuda", dtype=torch.bfloat16)
    ref = (x.double() @ layer.weight.double().T)
    y = q(x)
    assert y.shape == (1, shape[0]) and y.dtype == torch.bfloat16
    torch.testing.assert_close(y.double(), ref, rtol=1e-2, atol=1e-3)


def test_batches_use_dequant_and_cublas():
    layer = linear(512, 1024, bias=True)
    q = nt.NWCLinear.from_linear(layer)
    x = torch.randn(3, 7, 1024, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(q(x), F.linear(x, layer.weight, layer.bias))


def test_cuda_graph_capture_and_replay():
    layer = linear(768, 1024)
    q = nt.NWCLinear.from_linear(layer)
    x = torch.randn(1, 1024, device="cuda", dtype=torch.bfloat16)
    eager = q(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        q(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = q(x)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, q(x)) and not torch.equal(y, eager)


def test_convert_shares_a_tied_head():
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(320, 256, device="cuda", dtype=torch.bfloat16)
            self.up = linear(512, 256, seed=1)
            self.head = nn.Linear(256, 320, bias=False, device="cuda", dtype=torch.bfloat16)
            self.head.weight = self.embed.weight

        def get_input_embeddings(self):
            return self.embed

        def get_output_embeddings(self):
            return self.head

        def forward(self, ids):
            h = self.embed(ids)
            return self.head(h) + self.up(h).sum(-1, keepdim=True)

    m = Tiny()
    ids = torch.tensor([[1, 5, 300]], device="cuda")
    ref = m(ids)
    nt.convert(m)
    assert isinstance(m.head, nt.NWCLinear) and isinstance(m.embed, nt.NWCEmbedding)
    assert m.head.weight_nwc is m.embed.weight_nwc
    torch.testing.assert_close(m(ids).float(), ref.float(), rtol=2e-2, atol=2e-2)


def test_wrong_device_and_dtype_say_what_was_expected():
    q = nt.NWCLinear.from_linear(linear(64, 128))
    with pytest.raises(TypeError, match="bfloat16"):
        q(torch.randn(1, 128, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        q(torch.randn(1, 128, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="128 features"):
        q(torch.randn(1, 100, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="bfloat16 weight"):
        nt.NWCLinear.from_linear(nn.Linear(8, 8, device="cuda"))


def test_a_corrupt_matrix_never_reaches_the_device():
    m = nwc.encode(nt._words(linear(64, 128).weight))
    m.bases = m.bases.copy()
    m.bases[0] = 8
    with pytest.raises(nwc.errors.OffsetFirstNonzeroError):
        nt.CudaWeight(m, "cuda")


def test_load_checkpoint_of_a_tiny_llama(tmp_path):
    transformers = pytest.importorskip("transformers", reason="skipped: transformers is not installed")
    cfg = transformers.LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
                                   num_key_value_heads=2, vocab_size=512, tie_word_embeddings=True)
    torch.manual_seed(0)
    with torch.device("cuda"):
        ref = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16).eval()
    ref.save_pretrained(tmp_path / "model")
    nwc.compress(tmp_path / "model", tmp_path / "ck")
    model = nt.load_checkpoint(tmp_path / "ck").eval()
    assert isinstance(model.lm_head, nt.NWCLinear) and isinstance(model.model.embed_tokens, nt.NWCEmbedding)
    assert model.lm_head.weight_nwc is model.model.embed_tokens.weight_nwc
    ids = torch.tensor([[1, 7, 300, 2]], device="cuda")
    with torch.no_grad():
        a, b = ref(ids).logits.float(), model(ids).logits.float()
    assert (a.argmax(-1) == b.argmax(-1)).float().mean() > 0.7
    torch.testing.assert_close(b, a, rtol=0.05, atol=0.05)
