"""PyTorch layers that keep NWC-compressed weights on the GPU and run the nwc-cuda kernels on them.

- :class:`NWCLinear` (``from_linear``): ``y = x W^T + b`` with W stored compressed, in format 10
  (``layout=0`` or ``1``) or in the execution layout (``layout="exec"``, spec 20: made on the GPU,
  faster matvec, 0.754 of BF16 against format 10's 0.68). Which kernel serves a call depends on
  the number of tokens ``n`` it carries (measured on the H200, docs/results.md):

  ============  ======================================  ===========================================
  tokens        format 10                               execution layout
  ============  ======================================  ===========================================
  1             fused exact matvec (spec 15.4)          exact matvec (spec 20.15)
  2 .. 32       dequant (15.2) + cuBLAS                 tensor-core matvec (spec 19, bounded)
  more          dequant (15.2) + cuBLAS                 dequant (20.14) + cuBLAS
  ============  ======================================  ===========================================

  ``NWCLinear.matvec_max_batch`` (1) and ``NWCLinear.tensor_max_batch`` (32; 1 makes every batch
  of the execution layout exact: dequant + cuBLAS) move the switches.
- :class:`NWCEmbedding`: an embedding over a compressed matrix in either storage kind; looks
  rows up with the gather kernel (spec 15.3 for format 10, 20.14 for the execution layout),
  never expanding the table. A tied input embedding shares the output head's matrix, in either
  kind (one copy of the table on the GPU).
- :func:`convert` (replace every ``nn.Linear``, sharing tied heads), :func:`load_checkpoint`
  (an NWC checkpoint folder in the 0.10.1 layout, ours or the 0.10.1 library's, spec 17).

Kernels run on ``torch.cuda.current_stream()`` in torch's primary context, on torch's tensors (no
copies of weights or outputs, no synchronisation), so a forward pass can be captured in a CUDA
graph. Activations must be ``torch.bfloat16`` on the layer's device. On Hopper the matvec kernels
are launched programmatically (``nwc_cuda::DependentLaunch``): one may start streaming its weights
while the kernel before it on the stream finishes, and waits for that kernel before it reads its
activations; after a torch kernel, which does not let its successor in early, it starts when that
kernel completes, as any launch does.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ._matrix import Matrix
from ._weights import CudaWeight, ExecWeight, _cuda_device, _words  # noqa: F401 (_words: tests, benches)

__all__ = ["NWCLinear", "NWCEmbedding", "convert", "load_checkpoint", "CudaWeight", "ExecWeight"]

Layout = Union[int, str]


def _check_layout(layout: Layout, elem: str) -> None:
    if layout not in (0, 1, "exec"):
        raise ValueError(f'layout must be 0 or 1 (format 10, spec 7 and 8) or "exec" (the execution layout, spec 20), '
                         f"not {layout!r}")
    if layout == "exec" and elem != "bf16":
        raise ValueError(f'the execution layout codes BF16 weights (spec 20); elem={elem!r} needs layout 0 or 1')


def _compress(weight: torch.Tensor, layout: Layout, elem: str, device, matvec_kernel: str = "exact"):
    _check_layout(layout, elem)
    if layout == "exec":
        return ExecWeight.encode(weight, device)
    return CudaWeight.encode(weight, layout, elem, device, matvec_kernel)


class NWCLinear(nn.Module):
    """``nn.Linear`` with its weight stored compressed on the GPU (format 10 or the execution
    layout); the module docstring's table says which kernel serves how many tokens."""

    matvec_max_batch: int = int(os.environ.get("NWC_MATVEC_MAX_BATCH", "1"))
    tensor_max_batch: int = int(os.environ.get("NWC_TENSOR_MAX_BATCH", "32"))

    def __init__(self, weight: Union[CudaWeight, ExecWeight], bias: Optional[torch.Tensor] = None):
        super().__init__()
        if not isinstance(weight, (CudaWeight, ExecWeight)):
            raise TypeError(f"expected a CudaWeight or ExecWeight, got {type(weight).__name__}")
        self.weight_nwc = weight
        self.in_features, self.out_features = weight.cols, weight.rows
        if bias is not None:
            bias = bias.detach().to(device=weight.device, dtype=torch.bfloat16)
            self.register_buffer("bias", bias)
            self._bias_f32 = bias.float()
        else:
            self.bias = None
            self._bias_f32 = None

    @classmethod
    def from_linear(cls, layer: nn.Linear, layout: Layout = 0, elem: str = "bf16", device=None,
                    matvec_kernel: str = "exact") -> "NWCLinear":
        """Compresses ``layer.weight`` (BF16) onto ``device`` (default: the layer's device if it is
        a GPU, else the current one): ``layout`` 0 (spec 7) or 1 (spec 8) in format 10 (``elem="fp8"``
        quantizes it first, spec 11; ``matvec_kernel="bounded"``, layout 1: the tensor-core
        matvec of spec 19 at every batch), or ``"exec"``: the execution layout (spec 20), encoded
        on the GPU."""
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"expected an nn.Linear, got {type(layer).__name__}")
        dev = device if device is not None else (layer.weight.device if layer.weight.is_cuda else None)
        return cls(_compress(layer.weight, layout, elem, dev, matvec_kernel), layer.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight_nwc
        w._check(x)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected activations with {self.in_features} features, got shape {tuple(x.shape)}")
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        n = x2.shape[0]
        if n == 0:
            return x.new_empty(*lead, self.out_features)
        if isinstance(w, ExecWeight):
            if n <= self.matvec_max_batch:
                y = w.matvec(x2, self._bias_f32)
            elif n <= self.tensor_max_batch:
                y = w.matvec(x2, self._bias_f32, tensor_cores=True)
            else:
                y = F.linear(x2, w.dequant(), self.bias)
        elif n <= self.matvec_max_batch and w.scale is None:
            y = w.matvec(x2, self._bias_f32)
        elif n <= self.matvec_max_batch:
            y = w.matvec(x2, None)  # the kernel applies the fp8 row scales (spec 15.4)
            if self.bias is not None:
                y = y + self.bias
        elif w.scale is None:
            y = F.linear(x2, w.dequant(), self.bias)
        else:
            y = (F.linear(x2, w.dequant()).float() * w.scale).to(torch.bfloat16)  # spec 11.4
            if self.bias is not None:
                y = y + self.bias
        return y.view(*lead, self.out_features)

    def extra_repr(self) -> str:
        w = self.weight_nwc
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"{w.elem} {w.kind} layout {w.layout}, {w.nbytes} bytes ({w.nbytes / (2 * w.rows * w.cols):.3f} of BF16)")


class NWCEmbedding(nn.Module):
    """``nn.Embedding`` over a compressed matrix (rows = vocabulary), format 10 or the execution
    layout: each call decodes only the rows it looks up (the gather kernel, spec 15.3 or 20.14;
    the two give the same bits). Shares the matrix with a tied output head."""

    def __init__(self, weight: Union[CudaWeight, ExecWeight], padding_idx: Optional[int] = None):
        super().__init__()
        if not isinstance(weight, (CudaWeight, ExecWeight)):
            raise TypeError(f"NWCEmbedding looks rows up in a CudaWeight or ExecWeight, got {type(weight).__name__}")
        self.weight_nwc = weight
        self.num_embeddings, self.embedding_dim = weight.rows, weight.cols
        self.padding_idx = padding_idx

    @classmethod
    def from_embedding(cls, emb: nn.Embedding, layout: Layout = 0, device=None) -> "NWCEmbedding":
        """Compresses ``emb.weight`` (BF16) onto ``device`` (default: the embedding's device if it
        is a GPU, else the current one) in format 10 (``layout`` 0 or 1) or the execution layout
        (``"exec"``, encoded on the GPU)."""
        dev = device if device is not None else (emb.weight.device if emb.weight.is_cuda else None)
        return cls(_compress(emb.weight, layout, "bf16", dev), emb.padding_idx)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"expected a torch.int64 or torch.int32 tensor of token ids, got {getattr(ids, 'dtype', type(ids))}")
        if ids.device != self.weight_nwc.device:
            raise ValueError(f"token ids are on {ids.device}; expected them on {self.weight_nwc.device}, "
                             "where the compressed embedding is")
        return self.weight_nwc.gather(ids)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, compressed ({self.weight_nwc.nbytes} bytes)"


def _set(model: nn.Module, path: str, module: nn.Module) -> None:
    parent, _, name = path.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, name, module)


def _tied(model: nn.Module) -> Tuple[Optional[str], Optional[str]]:
    """(input embedding path, output head path) when the head's weight is the embedding's."""
    get_in = getattr(model, "get_input_embeddings", None)
    get_out = getattr(model, "get_output_embeddings", None)
    if get_in is None or get_out is None:
        return None, None
    emb, head = get_in(), get_out()
    if emb is None or head is None or emb.weight is not head.weight:
        return None, None
    names = {id(m): n for n, m in model.named_modules()}
    return names.get(id(emb)), names.get(id(head))


def convert(model: nn.Module, layout: Layout = 0, elem: str = "bf16", device=None,
            skip: Iterable[str] = (), threads: Optional[int] = None) -> nn.Module:
    """Replaces every ``nn.Linear`` of a BF16 model by an :class:`NWCLinear` (in place; returns
    the model), in format 10 (``layout`` 0 or 1) or the execution layout (``"exec"``). A tied
    output head and input embedding share one matrix of that kind (an :class:`NWCLinear` and an
    :class:`NWCEmbedding` over the same weight: the table is on the GPU once). Modules whose path
    starts with an entry of ``skip`` stay as they are.

    Format 10 is encoded on the CPU, ``threads`` matrices at a time (the codec releases the GIL
    and uses every core), and uploaded without decoding it again (valid by construction); the
    execution layout is encoded on the GPU from the weights there."""
    _check_layout(layout, elem)
    skip = tuple(skip)
    emb_path, head_path = _tied(model)
    linears = [(n, m) for n, m in model.named_modules()
               if isinstance(m, nn.Linear) and n != head_path and not (skip and n.startswith(skip))]

    def one(item):
        name, layer = item
        return name, NWCLinear.from_linear(layer, layout, elem, device)

    if layout == "exec":  # on the GPU, one matrix at a time (each launch fills the device)
        for item in linears:
            _set(model, *one(item))
    else:
        with ThreadPoolExecutor(max_workers=threads or min(16, os.cpu_count() or 1)) as pool:
            for name, new in pool.map(one, linears):
                _set(model, name, new)
    if head_path is not None and not (skip and head_path.startswith(skip)):
        head = model.get_submodule(head_path)
        emb = model.get_submodule(emb_path)
        dev = device if device is not None else (head.weight.device if head.weight.is_cuda else None)
        shared = _compress(head.weight, layout, elem, dev)
        _set(model, head_path, NWCLinear(shared, head.bias))
        _set(model, emb_path, NWCEmbedding(shared, emb.padding_idx))
    return model


class _FusedPart(nn.Module):
    """Rows [start, end) of a fused matrix (spec 17.5 "fused"): the parts of one group are
    called with the same input in turn, so the product is computed once per input and sliced."""

    def __init__(self, whole: NWCLinear, start: int, end: int, cache: dict):
        super().__init__()
        self.whole, self.start, self.end, self._cache = whole, start, end, cache
        self.in_features, self.out_features = whole.in_features, end - start

    def forward(self, x):
        key = (x.data_ptr(), x.shape, x._version)
        if self._cache.get("key") != key or self._cache.get("x") is not x:
            self._cache.update(key=key, x=x, y=self.whole(x))
        return self._cache["y"][..., self.start:self.end]


def load_checkpoint(model_or_folder: Union[nn.Module, str, os.PathLike], folder: Optional[Union[str, os.PathLike]] = None,
                    device=None, threads: Optional[int] = None, layout: Optional[str] = None) -> nn.Module:
    """Loads an NWC checkpoint folder (spec 17, written by ``nwc.compress`` or the 0.10.1
    library) into a model: every compressed matrix becomes an :class:`NWCLinear` /
    :class:`NWCEmbedding` on the GPU (validated first, spec 13; a broken one raises its
    FormatError), every other tensor is loaded as it is.

    ``load_checkpoint(folder)`` builds the model from the folder's ``config.json`` with
    transformers (BF16, on ``device``; the dense weights it allocates are dropped as the
    compressed ones replace them); ``load_checkpoint(model, folder)`` fills a model you built.
    ``layout="exec"``: every BF16 linear layer and embedding runs the execution layout (spec
    20), transcoded on the GPU from the validated format-10 matrix at load time; the format-10
    matrices are then dropped, and a tied head and its embedding share one execution-layout
    matrix.
    """
    if layout not in (None, "exec"):
        raise ValueError(f'layout must be None (run the stored format-10 matrices) or "exec", not {layout!r}')
    dev = _cuda_device(device)
    if isinstance(model_or_folder, (str, os.PathLike)):
        folder = Path(model_or_folder)
        import transformers

        cfg = transformers.AutoConfig.from_pretrained(folder)
        with torch.device(dev):
            try:
                model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
            except TypeError:  # transformers before 4.56 named it torch_dtype
                model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    else:
        model = model_or_folder
        if folder is None:
            raise ValueError("load_checkpoint(model, folder): the checkpoint folder is missing")
        folder = Path(folder)
    config = json.loads((folder / "nwc_config.json").read_text())
    if config.get("library_version") not in (9, 10):
        raise ValueError(f"nwc_config.json: library_version {config.get('library_version')!r}, readable are 9 and 10 (spec 17.4)")
    from safetensors import safe_open

    files = sorted(folder.glob("*.safetensors"))
    # framework "pt": the copied tensors are BF16, which numpy cannot hold.
    handles = [safe_open(str(f), framework="pt") for f in files]
    where = {k: h for h in handles for k in h.keys()}

    def tensor(name):
        if name not in where:
            raise ValueError(f"{folder}: the checkpoint has no tensor `{name}` (spec 17.7)")
        return where[name].get_tensor(name)

    def weight(entry) -> CudaWeight:
        i = entry["id"]
        elem, stored = entry.get("elem", "bf16"), int(entry.get("layout", 0))
        if elem not in ("bf16", "fp8") or stored not in (0, 1) or int(entry.get("block", 4096)) != 4096:
            raise ValueError(f"nwc_config.json: weights entry {i} is unsupported (elem {elem!r}, layout {stored}) (spec 17.4)")
        fields = {n: tensor(f"nwc/{i}/{n}").numpy() for n in ("data", "bases", "hdr", "lut", "low")}
        if f"nwc/{i}/scale" in where:
            fields["scale"] = tensor(f"nwc/{i}/scale").numpy()
        m = Matrix(elem, stored, (int(entry["out"]), int(entry["in"])), fields)
        return CudaWeight(m, dev)

    exec_of = {}

    def run_form(w):
        """The weight a layer runs: the stored one, or its execution layout (one per matrix)."""
        if layout != "exec" or not isinstance(w, CudaWeight) or w.elem != "bf16":
            return w
        if id(w) not in exec_of:
            exec_of[id(w)] = w.to_exec()
        return exec_of[id(w)]

    emb_path, head_path = _tied(model)  # before any module is replaced
    entries = {e["id"]: e for e in config["weights"]}
    with ThreadPoolExecutor(max_workers=threads or min(16, os.cpu_count() or 1)) as pool:
        weights = dict(zip(entries, pool.map(weight, entries.values())))
    replaced = set()
    for mod in config.get("modules", []):
        w, path, kind = weights[mod["weight"]], mod["path"], mod["kind"]
        if kind == "linear":
            bias = tensor(mod["bias"]) if mod.get("bias") else None
            _set(model, path, NWCLinear(run_form(w), bias))
            replaced.add(f"{path}.weight")
        elif kind == "embedding":
            _set(model, path, NWCEmbedding(run_form(w), mod.get("padding_idx")))
            replaced.add(f"{path}.weight")
        elif kind == "fused":
            whole, cache, start = NWCLinear(run_form(w)), {}, 0
            for child, size in zip(mod["names"], mod["sizes"]):
                _set(model, f"{path}.{child}", _FusedPart(whole, start, start + int(size), cache))
                replaced.add(f"{path}.{child}.weight")
                start += int(size)
        else:
            raise ValueError(f"nwc_config.json: module kind {kind!r} of {path} is unsupported (spec 17.5)")
    if emb_path and head_path and f"{head_path}.weight" not in replaced and f"{emb_path}.weight" in replaced:
        # A tied head saved without its own tensor (spec 17.8): it is the embedding's matrix.
        head = model.get_submodule(head_path)
        _set(model, head_path, NWCLinear(run_form(model.get_submodule(emb_path).weight_nwc), head.bias))
        replaced.add(f"{head_path}.weight")
    state = {k: tensor(k) for k in where if not k.startswith("nwc/") and k not in replaced}
    result = model.load_state_dict(state, strict=False)
    unexpected = [k for k in result.unexpected_keys]
    if unexpected:
        raise ValueError(f"{folder}: tensors the model does not have: {unexpected[:5]}")
    model.to(dev)
    return model
