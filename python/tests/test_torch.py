"""nwc.torch on a CUDA device (skipped, and said so, without torch or without a GPU)."""

import gc

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


@pytest.mark.parametrize("layout", [0, "exec"])
def test_embedding_gathers_rows(layout):
    emb = nn.Embedding(5000, 300, device="cuda", dtype=torch.bfloat16)
    q = nt.NWCEmbedding.from_embedding(emb, layout=layout)
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


def test_exec_embedding_equals_format_10():
    """The execution layout's gather (spec 20.14) gives the format-10 gather's bits (spec 15.3),
    which are the BF16 table's rows: ragged K (300, not a multiple of 16), repeats, the first
    and last rows, int64 and int32 ids, several shapes, no ids."""
    torch.manual_seed(5)
    emb = nn.Embedding(5000, 300, device="cuda", dtype=torch.bfloat16)
    f, e = nt.NWCEmbedding.from_embedding(emb), nt.NWCEmbedding.from_embedding(emb, layout="exec")
    assert isinstance(e.weight_nwc, nt.ExecWeight) and isinstance(f.weight_nwc, nt.CudaWeight)
    cases = [
        torch.tensor([4999], device="cuda"),
        torch.tensor([0, 4999, 7, 7, 4999, 0, 123], device="cuda"),
        torch.randint(0, 5000, (4, 33), device="cuda"),
        torch.tensor([[4999, 4999], [1, 1]], device="cuda"),
        torch.empty(0, dtype=torch.int64, device="cuda"),
    ]
    for ids in cases:
        for i in (ids, ids.int()):
            a, b = e(i), f(i)
            assert a.shape == (*ids.shape, 300) and a.dtype == torch.bfloat16
            assert torch.equal(a.view(torch.int16), b.view(torch.int16))
            assert torch.equal(a.view(torch.int16), F.embedding(ids, emb.weight).view(torch.int16))


_OUT_OF_RANGE = """
import os, torch
from torch import nn
import nwc.torch as nt
q = nt.NWCEmbedding.from_embedding(nn.Embedding(50, 40, device="cuda", dtype=torch.bfloat16), layout={layout!r})
q(torch.tensor([0, 49], device="cuda"))
torch.cuda.synchronize()
print("in range: ok", flush=True)
try:
    q(torch.tensor([1, {bad}], device="cuda"))
    torch.cuda.synchronize()
except Exception as e:
    print("raised:", type(e).__name__, e, flush=True)
    os._exit(3)  # no teardown in the spoiled context
print("no error", flush=True)
"""


@pytest.mark.parametrize("layout,bad", [(0, 50), ("exec", 2**32 + 1)])
def test_an_out_of_range_id_stops_the_device(layout, bad, tmp_path):
    """An id outside 0..rows-1 trips the device-side assert before the gather runs (as
    F.embedding does), in both storage kinds; for the execution layout an id that would wrap
    into range (to 1) as the kernel's int32, so the check must see the ids as given (the check
    is one code path for both kinds). A tripped assert spoils the CUDA context, so each case
    runs in a process of its own (about 20 s each: the process's first NVRTC compile)."""
    import subprocess
    import sys

    # cwd: not a folder holding the source package, so the child imports the installed wheel
    r = subprocess.run([sys.executable, "-c", _OUT_OF_RANGE.format(layout=layout, bad=bad)], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    out = r.stdout + r.stderr
    assert "in range: ok" in r.stdout, out
    assert r.returncode == 3 and "raised:" in r.stdout, out
    assert "assert" in out.lower(), out


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

    def format_10_alive():
        gc.collect()
        # type(), not isinstance(): isinstance reads __class__, which some of torch's lazy
        # module proxies answer with a deprecation warning (seen on the H200, 2026-12-01).
        return sum(type(o) is nt.CudaWeight for o in gc.get_objects())

    ids = torch.tensor([[1, 5, 300, 319, 5]], device="cuda")
    for layout in (0, "exec"):
        m = Tiny()
        ref, table = m(ids), m.embed.weight.detach().clone()
        before = format_10_alive()
        nt.convert(m, layout=layout)
        assert isinstance(m.head, nt.NWCLinear) and isinstance(m.embed, nt.NWCEmbedding)
        # one matrix, shared: the same Python weight over the same native matrix
        assert m.head.weight_nwc is m.embed.weight_nwc
        assert m.head.weight_nwc._native is m.embed.weight_nwc._native
        kind = nt.CudaWeight if layout == 0 else nt.ExecWeight
        assert all(type(q.weight_nwc) is kind for q in (m.head, m.embed, m.up))
        if layout == "exec":  # no format-10 copy of the table kept anywhere
            assert format_10_alive() == before
            assert not any(isinstance(getattr(q, "weight_nwc", None), nt.CudaWeight) for q in m.modules())
        assert torch.equal(m.embed(ids), F.embedding(ids, table))
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
        # tied: one matrix for the head and the embedding, of the kind the layout asks for
        assert model.lm_head.weight_nwc is model.model.embed_tokens.weight_nwc
        kind = nt.CudaWeight if layout is None else nt.ExecWeight
        assert type(model.lm_head.weight_nwc) is kind
        if layout == "exec":  # every matrix in the execution layout: no format-10 one left
            assert not any(isinstance(getattr(q, "weight_nwc", None), nt.CudaWeight) for q in model.modules())
        assert torch.equal(model.model.embed_tokens(ids), F.embedding(ids, ref.model.embed_tokens.weight))
        with torch.no_grad():
            a, b = ref(ids).logits.float(), model(ids).logits.float()
        assert (a.argmax(-1) == b.argmax(-1)).float().mean() > 0.7
        torch.testing.assert_close(b, a, rtol=0.05, atol=0.05)
