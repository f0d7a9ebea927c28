"""Compressed matrices resident on a GPU, for the layers of :mod:`nwc.torch`.

- :class:`CudaWeight`: NWC format 10 (spec 12), validated before upload (spec 13) when it comes
  from a file or a caller, encoded and uploaded in one native call when we encode it ourselves.
- :class:`ExecWeight`: the execution layout (spec 20), made on the GPU: transcoded from a
  format-10 matrix, or the canonical encode of BF16 weights already on the device (spec 20.12:
  the same bytes either way).

Every launch runs on ``torch.cuda.current_stream()`` of the weight's device, in torch's primary
context, on torch's own tensors (no copies, no synchronisation), so it can be captured in a CUDA
graph. One weight must not run on two streams at once (format 10's matvec keeps per-matrix
scratch on the device).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from . import _native
from ._matrix import Matrix, _le_bytes

_WORKSPACES = {}


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
        raise ValueError(f"NWC layers run on CUDA devices (device='cuda' or 'cuda:N'); got device {d}")
    if d.index is None:
        d = torch.device("cuda", torch.cuda.current_device())
    return d


def _check_weight(w: torch.Tensor) -> None:
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor weight, got {type(w).__name__}")
    if w.dtype != torch.bfloat16:
        raise TypeError(f"expected a torch.bfloat16 weight (NWC codes BF16 losslessly), got {w.dtype}; "
                        "cast the model with .to(torch.bfloat16) first")
    if w.dim() != 2:
        raise ValueError(f"expected a 2-D weight, got shape {tuple(w.shape)}")


def _words(w: torch.Tensor) -> np.ndarray:
    """A BF16 weight as a uint16 numpy matrix (one copy to the host)."""
    _check_weight(w)
    return w.detach().to("cpu").contiguous().view(torch.int16).numpy().view(np.uint16)


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream


class _Weight:
    """What both kinds share: shape, device, the checks on activations, dequant and gather."""

    device: torch.device
    rows: int
    cols: int
    scale: Optional[torch.Tensor] = None
    _index_dtype: torch.dtype  # the dtype of the row indices the native gather takes

    def _check(self, x: torch.Tensor) -> None:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
        if x.device != self.device:
            raise ValueError(f"activations are on {x.device}; expected them on {self.device}, where the compressed weight is")
        if x.dtype != torch.bfloat16:
            raise TypeError(f"expected torch.bfloat16 activations, got {x.dtype}")

    def dense(self) -> torch.Tensor:
        """The weights as a new rows x cols BF16 tensor (scaled for fp8, spec 11.4)."""
        w = self.dequant().clone()
        return w if self.scale is None else (w.float() * self.scale[:, None]).to(torch.bfloat16)

    def dequant(self) -> torch.Tensor:
        """The rows x cols BF16 weights (unscaled for fp8) as a view of the per-device workspace,
        valid until the next dequant on this device."""
        ws = _workspace(self.device, self.rows * self._native.k16)
        w = ws[: self.rows * self._native.k16].view(self.rows, self._native.k16)
        self._native.dequant(w.data_ptr(), _stream(self.device))
        return w[:, : self.cols]

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """The rows ``ids`` names (any integer shape) as BF16, shape ids.shape + (cols,), decoded
        on the device without expanding the rest of the matrix (spec 15.3 for format 10, 20.14 for
        the execution layout). Ids outside 0..rows-1 stop the device with an assertion, as
        ``F.embedding`` does."""
        flat = ids.reshape(-1)
        n = flat.numel()
        k16 = self._native.k16
        out = torch.empty((n, k16), dtype=torch.bfloat16, device=self.device)
        if n:
            # Checked on the ids as given, before the conversion to the kernel's index type (an
            # int64 id >= 2^31 must not wrap into range); the native gather relies on it.
            ok = ((flat >= 0) & (flat < self.rows)).all()
            try:
                torch._assert_async(ok, f"NWCEmbedding: token ids must be in 0..{self.rows - 1}")
            except TypeError:  # torch without the message argument
                torch._assert_async(ok)
            flat = flat.to(self._index_dtype).contiguous()
            self._native.gather(flat.data_ptr(), n, out.data_ptr(), _stream(self.device))
        rows = out[:, : self.cols]
        if self.scale is not None:
            rows = (rows.float() * self.scale[flat][:, None]).to(torch.bfloat16)
        return rows.reshape(*ids.shape, self.cols)


class CudaWeight(_Weight):
    """One format-10 matrix resident on a GPU: its stored fields (validated, spec 13) and the
    launches the layers use. Shared by every layer that uses the same matrix (tied heads)."""

    kind = "format 10"
    _index_dtype = torch.int64  # the gather kernel's row indices (kernels/gather.cu)

    def __init__(self, matrix: Optional[Matrix], device=None, matvec_kernel: str = "exact", *, _native_matrix=None,
                 _scale=None, _elem=None, _layout=None):
        self.device = _cuda_device(device)
        if _native_matrix is not None:  # from CudaWeight.encode
            self._native, self.elem, self.layout = _native_matrix, _elem, _layout
            scale = _scale
        else:
            raw = {n: _le_bytes(a) for n, a in matrix.fields.items()}
            # matvec_kernel "exact": spec 15.4, bit-exact; "bounded": spec 19 (layout 1, tensor cores).
            self._native = _native.CudaMatrix(self.device.index, matrix.mode_code, matrix.shape[0], matrix.shape[1], raw,
                                              matvec_kernel)
            self.elem, self.layout = matrix.elem, matrix.layout
            scale = matrix.scale
        self.rows, self.cols = int(self._native.rows), int(self._native.cols)
        self.nbytes = int(self._native.stored_bytes)
        if scale is not None:
            self.scale = torch.as_tensor(np.asarray(scale, np.float32)).to(self.device)

    @classmethod
    def encode(cls, weight: torch.Tensor, layout: int = 0, elem: str = "bf16", device=None,
               matvec_kernel: str = "exact") -> "CudaWeight":
        """Encodes a BF16 weight (spec 4-10; ``elem="fp8"`` quantizes it first, spec 11) and uploads
        it in one native call, without the decode that validates matrices from elsewhere: our own
        encoder's output is valid by construction. The GIL is released while it runs."""
        if elem not in ("bf16", "fp8"):
            raise ValueError(f'elem must be "bf16" or "fp8", not {elem!r}')
        if layout not in (0, 1):
            raise ValueError(f"format 10 has layouts 0 (spec 7) and 1 (spec 8), not {layout!r}")
        dev = _cuda_device(device)
        cm, scale = _native.CudaMatrix.encode(dev.index, _words(weight), layout, elem == "fp8", matvec_kernel)
        return cls(None, dev, _native_matrix=cm, _scale=scale, _elem=elem, _layout=layout)

    def matvec(self, x2: torch.Tensor, bias_f32: Optional[torch.Tensor]) -> torch.Tensor:
        """Spec 15.4: ``n`` x cols BF16 rows -> n x rows BF16 (fp8 row scales and bias applied in f32)."""
        n, kp = x2.shape[0], self._native.kp
        xp = F.pad(x2, (0, kp - self.cols)) if kp != self.cols else x2.contiguous()
        y = torch.empty((n, self.rows), dtype=torch.bfloat16, device=self.device)
        bias_ptr = 0 if bias_f32 is None else bias_f32.data_ptr()
        self._native.matvec_bf16(xp.data_ptr(), n, y.data_ptr(), bias_ptr, _stream(self.device))
        return y

    def to_exec(self) -> "ExecWeight":
        """Spec 20.12: this matrix in the execution layout, transcoded on the GPU (BF16 only)."""
        if self.elem != "bf16":
            raise ValueError("the execution layout codes BF16 weights (spec 20); this matrix is fp8")
        return ExecWeight(self._native.transcode(), self.device)


class ExecWeight(_Weight):
    """One execution-layout matrix (spec 20) resident on a GPU: the layers' matvec and dequant,
    and the embedding's gather. Shared by every layer that uses the same matrix (tied heads)."""

    kind = "execution layout"
    elem = "bf16"
    layout = "exec"
    _index_dtype = torch.int32  # the gather kernel's row indices are u32 (M <= 2^31, spec 3.2)

    def __init__(self, native_matrix, device):
        self._native = native_matrix
        self.device = _cuda_device(device)
        self.rows, self.cols = int(native_matrix.rows), int(native_matrix.cols)
        self.nbytes = int(native_matrix.stored_bytes)

    @classmethod
    def encode(cls, weight: torch.Tensor, device=None) -> "ExecWeight":
        """Spec 20.12 on the GPU: the canonical execution layout of a BF16 weight (copied to
        ``device`` first if it is elsewhere); the same bytes as the transcode of its format-10
        encoding."""
        _check_weight(weight)
        dev = _cuda_device(device if device is not None else (weight.device if weight.is_cuda else None))
        w = weight.detach().to(dev).contiguous()
        em = _native.CudaExecMatrix.encode_device(dev.index, w.data_ptr(), w.shape[0], w.shape[1], w.shape[1], _stream(dev))
        return cls(em, dev)

    def matvec(self, x2: torch.Tensor, bias_f32: Optional[torch.Tensor], tensor_cores: bool = False) -> torch.Tensor:
        """``n`` x cols BF16 rows -> n x rows BF16. Spec 20.15 exact class (the canonical order of
        spec 15.4 on the activations' f32 values; one row goes to the kernel as BF16, which widens
        it as it loads, so no cast runs before it), or with ``tensor_cores`` the bounded class of
        spec 19."""
        n, k16 = x2.shape[0], self._native.k16
        xp = F.pad(x2, (0, k16 - self.cols)) if k16 != self.cols else x2.contiguous()
        y = torch.empty((n, self.rows), dtype=torch.bfloat16, device=self.device)
        bias_ptr = 0 if bias_f32 is None else bias_f32.data_ptr()
        self._native.matvec(xp.data_ptr(), True, tensor_cores, n, y.data_ptr(), bias_ptr, _stream(self.device))
        return y
