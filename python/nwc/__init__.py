"""nwc: NWC format 10 (Neural Weight Compression) in Python.

Lossless coding of BF16 (and fp8 e4m3) weight matrices whose decoder runs inside a GPU
matrix-vector product, byte-identical with the 0.10.1 library. The normative text is spec/ of the
repository; docstrings cite its clauses as "spec N.M".

- one matrix on numpy arrays: :func:`encode`, :func:`decode`, :func:`validate`, :class:`Matrix`
  (``save``/``load`` in the directory form of ``nwc encode``);
- its execution layout (spec 20) on the CPU: :func:`transcode`, :class:`ExecMatrix` (validate,
  decode, ``save``/``load`` in the directory form of ``nwc transcode``);
- whole checkpoints (spec 17), the engine of ``nwc compress``: :func:`compress`,
  :func:`decompress`, :func:`verify`, :func:`inspect`;
- :mod:`nwc.conform`: judge an encoder written in Python against the golden corpus (spec 14);
- :mod:`nwc.torch`: ``NWCLinear``, ``NWCEmbedding``, ``convert``, ``load_checkpoint`` running our CUDA
  kernels on torch's current stream (format 10, or the execution layout of spec 20).
"""

from __future__ import annotations

import os
from typing import Callable, Dict, List, Optional, Sequence, Union

from . import _native
from ._exec import EXEC_FIELDS, ExecMatrix, transcode
from ._matrix import FIELDS, Matrix, decode, encode, validate
from .errors import *  # noqa: F401,F403  (the exception classes are part of the package's API)
from .errors import CheckpointError, EncodeError, FormatError, LimitError, NwcError, UsageError

__all__ = ["FORMAT_VERSION", "FIELDS", "Matrix", "encode", "decode", "validate", "EXEC_FIELDS", "ExecMatrix",
           "transcode", "compress", "decompress",
           "verify", "inspect", "FormatError", "EncodeError", "LimitError", "CheckpointError", "UsageError",
           "NwcError"]
__version__ = "0.1.0"

#: The format version implemented (the 0.10.1 library reports the same number).
FORMAT_VERSION: int = _native.FORMAT_VERSION

Path = Union[str, os.PathLike]
Progress = Optional[Callable[[int], object]]


def _paths(*paths: Path) -> List[str]:
    return [os.fspath(p) for p in paths]


def compress(src: Path, dst: Path, *, elem: str = "bf16", layout: int = 0, include: Sequence[str] = (),
             exclude: Sequence[str] = (), cast_bf16: bool = False, shard_size_mb: Optional[int] = None,
             threads: Optional[int] = None, progress: Progress = None) -> Dict[str, int]:
    """Compresses a model (one ``.safetensors`` file, or a folder of shards with its index) into a
    new NWC checkpoint folder ``dst`` in the 0.10.1 layout (spec 17), as ``nwc compress`` does.

    Every 2-D BF16 tensor named ``<path>.weight`` whose name passes ``include``/``exclude`` (globs
    with ``*`` and ``?``)
    becomes a matrix (``elem="fp8"``: quantized, spec 11); identical tensors (tied embeddings)
    share one matrix (spec 17.5); everything else is copied unchanged. ``progress(done_bytes)`` is
    called as work completes. ``dst`` appears only when complete. Returns the summary counts.
    """
    s, d = _paths(src, dst)
    return _native.compress(s, d, elem, layout, list(include), list(exclude), cast_bf16, shard_size_mb,
                            threads, progress)


def decompress(src: Path, dst: Path, *, threads: Optional[int] = None, progress: Progress = None) -> None:
    """Rebuilds the original model files from a checkpoint, tensor for tensor (spec 17.7)."""
    s, d = _paths(src, dst)
    _native.decompress(s, d, threads, progress)


def verify(src: Path, against: Optional[Path] = None, *, threads: Optional[int] = None,
           progress: Progress = None) -> Dict[str, object]:
    """Validates every matrix (spec 13; a broken one raises its FormatError) and every recorded
    digest; with ``against``, compares with the original model bit for bit. Returns
    ``{"matrices", "tensors", "compared", "mismatches": [str]}``; verified means no mismatches."""
    return _native.verify(os.fspath(src), None if against is None else os.fspath(against), threads, progress)


def inspect(src: Path) -> List[Dict[str, object]]:
    """One row per compressed matrix of a checkpoint: ``id``, ``tensors``, ``rows``, ``cols``,
    ``elem``, ``layout``, ``bytes``, ``ratio`` (of BF16), ``entropy_bits`` of the coded part,
    ``escapes`` (spec 6.2)."""
    rows, _totals = _native.inspect(os.fspath(src))
    return rows
from . import conform  # noqa: E402  (nwc.conform.run)
