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


def capture(fn):
    """fn() captured in a CUDA graph (after a warm-up on a side stream, as torch recommends);
    returns (graph, the captured output)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = fn()
    return g, y


@pytest.mark.parametrize("layout,batch", [(0, 1), (0, 8), ("exec", 1), ("exec", 8), ("exec", 40)])
def test_cuda_graph_capture_and_replay(layout, batch):
    q = nt.NWCLinear.from_linear(linear(768, 1000, bias=True), layout=layout)
    x = torch.randn(batch, 1000, device="cuda", dtype=torch.bfloat16)
    eager = q(x)
    g, y = capture(lambda: q(x))
    for _ in range(2):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        assert not torch.equal(y, eager)
        if layout == 0 and batch > 1:  # cuBLAS may pick another algorithm inside a graph
            torch.testing.assert_close(y, q(x), rtol=1e-2, atol=1e-2)
        else:  # our kernels: the same bits
            assert torch.equal(y, q(x))


def test_kernels_run_on_the_current_stream():
    """A launch on a side stream is ordered on that stream: without a wait, the default stream
    does not see it; after it, both agree (no hidden stream of our own in between)."""
    q = nt.NWCLinear.from_linear(linear(4096, 4096), layout="exec")
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    ref = q(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy: work queued after it on s waits too
        y = q(x)
        done = torch.cuda.Event()
        done.record(s)
    assert not done.query()  # our launch is behind the sleep on s, not on a stream of its own
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(y, ref)


def test_execution_layout_matches_format_10():
    layer = linear(1000, 3000, bias=True, seed=3)
    e, f = nt.NWCLinear.from_linear(layer, layout="exec"), nt.NWCLinear.from_linear(layer)
    assert torch.equal(e.weight_nwc.dense().view(torch.int16), layer.weight.view(torch.int16))
    # spec 20.12: the GPU encode of the BF16 weights and the transcode of format 10 are the same bytes
    a, b = e.weight_nwc._native.download(), f.weight_nwc.to_exec()._native.download()
    assert all((a[k] == b[k]).all() and a[k].shape == b[k].shape for k in a)
    x1 = torch.randn(1, 3000, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(e(x1), f(x1))  # both exact: the canonical order of spec 15.4
    x8 = torch.randn(8, 3000, device="cuda", dtype=torch.bfloat16)
    ref = x8.double() @ layer.weight.double().T + layer.bias.double()
    torch.testing.assert_close(e(x8).double(), ref, rtol=1e-2, atol=2e-3)  # tensor cores, spec 19
    # More tokens: dequant + cuBLAS, the same call F.linear makes (K a multiple of 16, so the
    # dequantized weight has F.linear's row stride).
    layer = linear(768, 1024, bias=True, seed=4)
    e = nt.NWCLinear.from_linear(layer, layout="exec")
    x40 = torch.randn(40, 1024, device="cuda", dtype=torch.bfloat16)
    assert torch.equal(e(x40), F.linear(x40, layer.weight, layer.bias))
    nt.NWCLinear.tensor_max_batch = 1
    try:
        assert torch.equal(e(x8[:, :1024]), F.linear(x8[:, :1024], layer.weight, layer.bias))
    finally:
        nt.NWCLinear.tensor_max_batch = 32


def test_embedding_gathers_rows():
    emb = nn.Embedding(5000, 300, device="cuda", dtype=torch.bfloat16)
    q = nt.NWCEmbedding.from_embedding(emb)
    ids = torch.randint(0, 5000, (3, 7), device="cuda")
    assert torch.equal(q(ids), F.embedding(ids, emb.weight))
    assert torch.equal(q(ids.int()), F.embedding(ids, emb.weight))
    g, y = capture(lambda: q(ids))
    ids.copy_(torch.randint(0, 5000, (3, 7), device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, F.embedding(ids, emb.weight))
    with pytest.raises(TypeError, match="int64"):
        q(ids.float())


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

    ids = torch.tensor([[1, 5, 300]], device="cuda")
    for layout in (0, "exec"):
        m = Tiny()
        ref = m(ids)
        nt.convert(m, layout=layout)
        assert isinstance(m.head, nt.NWCLinear) and isinstance(m.embed, nt.NWCEmbedding)
        if layout == 0:
            assert m.head.weight_nwc is m.embed.weight_nwc
        else:
            assert isinstance(m.head.weight_nwc, nt.ExecWeight) and isinstance(m.up.weight_nwc, nt.ExecWeight)
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
    with pytest.raises(TypeError, match="bfloat16 weight"):
        nt.NWCLinear.from_linear(nn.Linear(8, 8, device="cuda"), layout="exec")
    with pytest.raises(ValueError, match="layout must be"):
        nt.NWCLinear.from_linear(linear(64, 128), layout=2)
    with pytest.raises(ValueError, match="BF16"):
        nt.NWCLinear.from_linear(linear(64, 128), layout="exec", elem="fp8")
    e = nt.NWCLinear.from_linear(linear(64, 128), layout="exec")
    with pytest.raises(TypeError, match="bfloat16"):
        e(torch.randn(1, 128, device="cuda"))
    with pytest.raises(ValueError, match="cuda"):
        e(torch.randn(1, 128, dtype=torch.bfloat16))


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
    ids = torch.tensor([[1, 7, 300, 2]], device="cuda")
    for layout in (None, "exec"):
        model = nt.load_checkpoint(tmp_path / "ck", layout=layout).eval()
        assert isinstance(model.lm_head, nt.NWCLinear) and isinstance(model.model.embed_tokens, nt.NWCEmbedding)
        if layout is None:
            assert model.lm_head.weight_nwc is model.model.embed_tokens.weight_nwc
        else:
            assert isinstance(model.lm_head.weight_nwc, nt.ExecWeight)
        with torch.no_grad():
            a, b = ref(ids).logits.float(), model(ids).logits.float()
        assert (a.argmax(-1) == b.argmax(-1)).float().mean() > 0.7
        torch.testing.assert_close(b, a, rtol=0.05, atol=0.05)
