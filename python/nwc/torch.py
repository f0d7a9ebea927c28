"""PyTorch layers that keep NWC-compressed weights on the GPU and run the nwc-cuda kernels on them.

- :class:`NWCLinear` (``from_linear``): ``y = x W^T + b`` with W stored compressed. One token
  (batch 1): the fused matvec, bit-exact with the reference's canonical order (spec 15.4); more
  tokens: dequant (spec 15.2) into a per-device workspace, then ``torch.nn.functional.linear``
  (cuBLAS), the faster of the two at batch > 1 on the H200 (docs/results.md).
  ``NWCLinear.matvec_max_batch`` moves the switch.
- :class:`NWCEmbedding`: an embedding over a compressed matrix (a tied input embedding shares the
  output head's matrix: one compressed copy).
- :func:`convert` (replace every ``nn.Linear``, sharing tied heads), :func:`load_checkpoint`
  (an NWC checkpoint folder in the 0.10.1 layout, ours or the 0.10.1 library's, spec 17).

Kernels run on torch's tensors in torch's primary context, ordered on torch's current stream
(nwc-cuda's own stream is joined to it with events, no copies of weights or outputs), so they
can be captured in CUDA graphs. Activations must be ``torch.bfloat16`` on the layer's device.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import _native
from ._matrix import Matrix, _le_bytes, encode

__all__ = ["NWCLinear", "NWCEmbedding", "convert", "load_checkpoint", "CudaWeight"]

_WORKSPACES: Dict[int, torch.Tensor] = {}


def _workspace(device: torch.device, words: int) -> torch.Tensor:
    """A per-device BF16 scratch of at least ``words`` elements for dequant (grows, never shrinks;
    run one forward pass before capturing a CUDA graph so it has its final size)."""
    ws = _WORKSPACES.get(device.index)
    if ws is None or ws.numel() < words:
        ws = torch.empty(words, dtype=torch.bfloat16, device=device)
        _WORKSPACES[device.index] = ws
    return ws


def _cuda_device(device) -> torch.device:
    d = torch.device(device if device is not None else "cuda")
    if d.type != "cuda":
        raise ValueError(f"NWC layers run on CUDA devices; got device {d}")
    if d.index is None:
        d = torch.device("cuda", torch.cuda.current_device())
    return d


def _words(w: torch.Tensor) -> np.ndarray:
    """A BF16 weight as a uint16 numpy matrix (one copy to the host)."""
    if w.dtype != torch.bfloat16:
        raise TypeError(f"expected a torch.bfloat16 weight (NWC format 10 codes BF16 losslessly), got {w.dtype}; "
                        "cast the model with .to(torch.bfloat16) first")
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight, got shape {tuple(w.shape)}")
    return w.detach().to("cpu").contiguous().view(torch.int16).numpy().view(np.uint16)


class CudaWeight:
    """One compressed matrix resident on a GPU: its stored fields (validated, spec 13) and the
    launches the layers use. Shared by every layer that uses the same matrix (tied heads)."""

    def __init__(self, matrix: Matrix, device=None, matvec_kernel: str = "exact"):
        self.device = _cuda_device(device)
        self.rows, self.cols = matrix.shape
        self.elem = matrix.elem
        self.layout = matrix.layout
        raw = {n: _le_bytes(a) for n, a in matrix.fields.items()}
        # matvec_kernel "exact": spec 15.4, bit-exact; "bounded": spec 19 (layout 1, tensor cores).
        self._cm = _native.CudaMatrix(self.device.index, matrix.mode_code, self.rows, self.cols, raw, matvec_kernel)
        self.nbytes = int(self._cm.stored_bytes)
        self.scale = None
        if matrix.scale is not None:
            self.scale = torch.as_tensor(np.asarray(matrix.scale, np.float32)).to(self.device)

    def _stream(self) -> int:
        return torch.cuda.current_stream(self.device).cuda_stream

    def _check(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
        if x.device != self.device:
            raise ValueError(f"activations are on {x.device}, the compressed weight is on {self.device}")
        if x.dtype != torch.bfloat16:
            raise TypeError(f"expected torch.bfloat16 activations, got {x.dtype}")

    def matvec(self, x2: torch.Tensor, bias_f32: Optional[torch.Tensor]) -> torch.Tensor:
        """Spec 15.4: ``n`` x cols BF16 rows -> n x rows BF16 (scale and bias applied in f32)."""
        n = x2.shape[0]
        kp = self._cm.kp
        xp = F.pad(x2, (0, kp - self.cols)) if kp != self.cols else x2.contiguous()
        y = torch.empty((n, self.rows), dtype=torch.bfloat16, device=self.device)
        bias_ptr = 0 if bias_f32 is None else bias_f32.data_ptr()
        self._cm.matvec_bf16(xp.data_ptr(), n, y.data_ptr(), bias_ptr, self._stream())
        return y

    def dequant(self) -> torch.Tensor:
        """Spec 15.2: the rows x cols BF16 weights (unscaled for fp8) as a view of the workspace,
        valid until the next dequant on this device."""
        k16 = self._cm.k16
        ws = _workspace(self.device, self.rows * k16)
        w = ws[: self.rows * k16].view(self.rows, k16)
        self._cm.dequant(w.data_ptr(), self._stream())
        return w[:, : self.cols]

    def dense(self) -> torch.Tensor:
        """The weights as a new BF16 tensor (scaled for fp8, spec 11.4)."""
        w = self.dequant().clone()
        return w if self.scale is None else (w.float() * self.scale[:, None]).to(torch.bfloat16)


class NWCLinear(nn.Module):
    """``nn.Linear`` with its weight stored in NWC format 10 on the GPU.

    Batch 1 (one token) runs the fused matvec (spec 15.4: exact, canonical accumulation order);
    more tokens dequantize (spec 15.2) and call cuBLAS. ``matvec_max_batch`` (class default from
    ``NWC_MATVEC_MAX_BATCH``, else 1) sets the largest token count that uses the matvec.
    """

    matvec_max_batch: int = int(os.environ.get("NWC_MATVEC_MAX_BATCH", "1"))

    def __init__(self, weight: CudaWeight, bias: Optional[torch.Tensor] = None):
        super().__init__()
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
    def from_linear(cls, layer: nn.Linear, layout: int = 0, elem: str = "bf16", device=None,
                    matvec_kernel: str = "exact") -> "NWCLinear":
        """Compresses ``layer.weight`` (BF16; ``elem="fp8"`` quantizes it, spec 11) in
        ``layout`` 0 (spec 7) or 1 (spec 8) and uploads it to ``device`` (default: the layer's
        device if it is a GPU, else the current one). ``matvec_kernel="bounded"`` (layout 1):
        the tensor-core matvec of spec 19, each output within its bound of the exact one."""
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"expected an nn.Linear, got {type(layer).__name__}")
        dev = device if device is not None else (layer.weight.device if layer.weight.is_cuda else None)
        weight = CudaWeight(encode(_words(layer.weight), elem, layout), dev, matvec_kernel)
        return cls(weight, layer.bias)

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
        if n <= self.matvec_max_batch and w.scale is None:
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
                f"{w.elem} layout {w.layout}, {w.nbytes} bytes ({w.nbytes / (2 * w.rows * w.cols):.3f} of BF16)")


class NWCEmbedding(nn.Module):
    """``nn.Embedding`` over a compressed matrix (rows = vocabulary). Looks rows up in the
    dequantized matrix (spec 15.2/15.3); shares the matrix with a tied output head."""

    def __init__(self, weight: CudaWeight, padding_idx: Optional[int] = None):
        super().__init__()
        self.weight_nwc = weight
        self.num_embeddings, self.embedding_dim = weight.rows, weight.cols
        self.padding_idx = padding_idx

    @classmethod
    def from_embedding(cls, emb: nn.Embedding, layout: int = 0, device=None) -> "NWCEmbedding":
        dev = device if device is not None else (emb.weight.device if emb.weight.is_cuda else None)
        return cls(CudaWeight(encode(_words(emb.weight), "bf16", layout), dev), emb.padding_idx)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"expected integer token ids, got {ids.dtype}")
        if ids.device != self.weight_nwc.device:
            raise ValueError(f"token ids are on {ids.device}, the compressed embedding is on {self.weight_nwc.device}")
        w = self.weight_nwc.dequant()
        out = F.embedding(ids, w)
        if self.weight_nwc.scale is not None:
            out = (out.float() * self.weight_nwc.scale[ids][..., None]).to(torch.bfloat16)
        return out

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


def convert(model: nn.Module, layout: int = 0, elem: str = "bf16", device=None,
            skip: Iterable[str] = (), threads: Optional[int] = None) -> nn.Module:
    """Replaces every ``nn.Linear`` of a BF16 model by an :class:`NWCLinear` (in place; returns
    the model). A tied output head and input embedding share one compressed matrix (an
    :class:`NWCEmbedding` and an :class:`NWCLinear`). Modules whose path starts with an entry of
    ``skip`` stay as they are. Matrices are encoded and uploaded ``threads`` at a time (the codec
    releases the GIL)."""
    skip = tuple(skip)
    emb_path, head_path = _tied(model)
    linears = [(n, m) for n, m in model.named_modules()
               if isinstance(m, nn.Linear) and n != head_path and not (skip and n.startswith(skip))]

    def one(item):
        name, layer = item
        return name, NWCLinear.from_linear(layer, layout, elem, device)

    with ThreadPoolExecutor(max_workers=threads or min(16, os.cpu_count() or 1)) as pool:
        for name, new in pool.map(one, linears):
            _set(model, name, new)
    if head_path is not None and not (skip and head_path.startswith(skip)):
        head = model.get_submodule(head_path)
        emb = model.get_submodule(emb_path)
        dev = device if device is not None else (head.weight.device if head.weight.is_cuda else None)
        shared = CudaWeight(encode(_words(head.weight), "bf16", layout), dev)
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
                    device=None, threads: Optional[int] = None) -> nn.Module:
    """Loads an NWC checkpoint folder (spec 17, written by ``nwc.compress`` or the 0.10.1
    library) into a model: every compressed matrix becomes an :class:`NWCLinear` /
    :class:`NWCEmbedding` on the GPU (validated first, spec 13; a broken one raises its
    FormatError), every other tensor is loaded as it is.

    ``load_checkpoint(folder)`` builds the model from the folder's ``config.json`` with
    transformers (BF16, on ``device``; the dense weights it allocates are dropped as the
    compressed ones replace them); ``load_checkpoint(model, folder)`` fills a model you built.
    """
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
        elem, layout = entry.get("elem", "bf16"), int(entry.get("layout", 0))
        if elem not in ("bf16", "fp8") or layout not in (0, 1) or int(entry.get("block", 4096)) != 4096:
            raise ValueError(f"nwc_config.json: weights entry {i} is unsupported (elem {elem!r}, layout {layout}) (spec 17.4)")
        fields = {n: tensor(f"nwc/{i}/{n}").numpy() for n in ("data", "bases", "hdr", "lut", "low")}
        if f"nwc/{i}/scale" in where:
            fields["scale"] = tensor(f"nwc/{i}/scale").numpy()
        m = Matrix(elem, layout, (int(entry["out"]), int(entry["in"])), fields)
        return CudaWeight(m, dev)

    emb_path, head_path = _tied(model)  # before any module is replaced
    entries = {e["id"]: e for e in config["weights"]}
    with ThreadPoolExecutor(max_workers=threads or min(16, os.cpu_count() or 1)) as pool:
        weights = dict(zip(entries, pool.map(weight, entries.values())))
    replaced = set()
    for mod in config.get("modules", []):
        w, path, kind = weights[mod["weight"]], mod["path"], mod["kind"]
        if kind == "linear":
            bias = tensor(mod["bias"]) if mod.get("bias") else None
            _set(model, path, NWCLinear(w, bias))
            replaced.add(f"{path}.weight")
        elif kind == "embedding":
            _set(model, path, NWCEmbedding(w, mod.get("padding_idx")))
            replaced.add(f"{path}.weight")
        elif kind == "fused":
            whole, cache, start = NWCLinear(w), {}, 0
            for child, size in zip(mod["names"], mod["sizes"]):
                _set(model, f"{path}.{child}", _FusedPart(whole, start, start + int(size), cache))
                replaced.add(f"{path}.{child}.weight")
                start += int(size)
        else:
            raise ValueError(f"nwc_config.json: module kind {kind!r} of {path} is unsupported (spec 17.5)")
    if emb_path and head_path and f"{head_path}.weight" not in replaced and f"{emb_path}.weight" in replaced:
        # A tied head saved without its own tensor (spec 17.8): it is the embedding's matrix.
        head = model.get_submodule(head_path)
        _set(model, head_path, NWCLinear(model.get_submodule(emb_path).weight_nwc, head.bias))
        replaced.add(f"{head_path}.weight")
    state = {k: tensor(k) for k in where if not k.startswith("nwc/") and k not in replaced}
    result = model.load_state_dict(state, strict=False)
    unexpected = [k for k in result.unexpected_keys]
    if unexpected:
        raise ValueError(f"{folder}: tensors the model does not have: {unexpected[:5]}")
    model.to(dev)
    return model
