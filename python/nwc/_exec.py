"""The execution layout (spec 20) of one BF16 matrix on the CPU, on numpy arrays: the canonical
transcode from BF16 or from a format-10 matrix, validation and decode, and the directory form
``nwc transcode`` writes (``exec_<field>.bin`` per field plus ``summary.json``), which
``nwc decode`` and ``nwc info`` read. On a GPU, :class:`nwc.torch.NWCLinear` with
``layout="exec"`` makes and runs the same layout there."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Dict, Mapping, Tuple, Union

import numpy as np

from . import _native
from ._matrix import Matrix, _Stored, _bf16_words, _le_bytes, _matrix_args, _write_files
from .errors import RULE_ERRORS

__all__ = ["ExecMatrix", "transcode", "EXEC_FIELDS"]

#: The stored fields of spec 20.3, in order.
EXEC_FIELDS = ("sm", "codes", "base", "esc_start", "esc")
_DTYPES = {"sm": np.uint8, "codes": np.uint8, "base": np.uint8, "esc_start": np.uint32, "esc": np.uint8}
_TILE = 512  # columns per tile (spec 20.2)


class ExecMatrix(_Stored):
    """The five fields of one execution layout (spec 20.3) and its shape: ``sm`` (uint8, M x K16:
    sign and mantissa, 20.4), ``codes`` (uint8, M x K16 / 2: two 4-bit codes a byte, 20.5),
    ``base`` (uint8 per row, 20.6), ``esc_start`` (uint32, T + 1: each tile's first escape, 20.7)
    and ``esc`` (uint8: the escaped exponents, 20.7); ``nbytes`` and ``ratio`` count all five
    (spec 20.18). Made by :func:`transcode` or
    :meth:`load`; :meth:`validate` and :meth:`decode` check every rule of spec 20.9 first."""

    def __init__(self, shape: Tuple[int, int], fields: Mapping[str, np.ndarray]):
        self.shape = (int(shape[0]), int(shape[1]))
        for name in EXEC_FIELDS:
            value = fields.get(name)
            setattr(self, name, np.zeros(0, _DTYPES[name]) if value is None else np.asarray(value))

    @property
    def fields(self) -> Dict[str, np.ndarray]:
        """The five fields, by name."""
        return {n: getattr(self, n) for n in EXEC_FIELDS}

    @property
    def escapes(self) -> int:
        """E, the number of escaped weights (spec 20.2): the length of ``esc``."""
        return int(self.esc.size)

    def __repr__(self) -> str:
        return (f"nwc.ExecMatrix({self.shape[0]}x{self.shape[1]}, {self.nbytes} bytes, ratio {self.ratio:.4f}, "
                f"{self.escapes} escapes)")

    def validate(self) -> None:
        """Checks every rule of spec 20.9 in the order of 20.10; raises the first broken rule's
        :class:`nwc.FormatError` subclass (``nwc.errors.ExecEscCountError``, ...) with ``rule``,
        ``clause``, ``field`` and ``offset``."""
        self.decode()

    def decode(self, bfloat16: bool = False) -> np.ndarray:
        """Validates (spec 20.9, 20.10) and decodes (spec 20.13): the rows x cols matrix of BF16
        words (``uint16``; ``ml_dtypes.bfloat16`` with ``bfloat16=True``)."""
        words = _native.exec_decode(self.shape[0], self.shape[1], self._raw())
        if bfloat16:
            import ml_dtypes

            return words.view(ml_dtypes.bfloat16)
        return words

    def save(self, directory: Union[str, os.PathLike]) -> None:
        """Writes the directory form ``nwc transcode`` writes (``nwc decode`` and ``nwc info`` read
        it). Each file is written whole through a temporary file and a rename."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        files = {f"exec_{n}.bin": _le_bytes(a).tobytes() for n, a in self.fields.items()}
        rows, cols = self.shape
        summary = {
            "representation": "exec",
            "encoder": "nwc-python",
            "M": rows, "K": cols, "K16": -(-cols // 16) * 16, "tiles": rows * -(-cols // _TILE),
            "escapes": self.escapes, "bytes_total": self.nbytes, "ratio_vs_bf16": self.ratio,
            "sha256": {name: hashlib.sha256(b).hexdigest() for name, b in sorted(files.items())},
        }
        files["summary.json"] = json.dumps(summary, indent=2).encode()
        _write_files(d, files)

    @classmethod
    def load(cls, directory: Union[str, os.PathLike], validate: bool = True) -> "ExecMatrix":
        """Reads a directory ``nwc transcode`` (or :meth:`save`) wrote: the shape from
        summary.json (keys ``M`` and ``K``), each ``exec_<field>.bin`` (a missing one is empty,
        spec 20.9.2); with ``validate``, every rule of spec 20.9."""
        d = Path(directory)
        summary = json.loads((d / "summary.json").read_text())
        if not isinstance(summary, dict):
            raise ValueError(f"{d / 'summary.json'}: expected a JSON object")
        if summary.get("representation", "exec") != "exec" or ("representation" not in summary and "elem" in summary):
            raise ValueError(f"{d}: a format-10 directory, not an execution layout; read it with nwc.Matrix.load, "
                             "or make its layout with nwc.transcode(directory)")
        try:
            rows, cols = (int(summary[k]) for k in ("M", "K"))
        except (KeyError, TypeError, ValueError) as e:
            raise RULE_ERRORS["exec-shape-range"](f"exec-shape-range (spec 20.9.1): {d / 'summary.json'}: M and K must be integers ({e})",
                       field="summary") from None
        fields = {}
        for name in EXEC_FIELDS:
            path = d / f"exec_{name}.bin"
            if path.exists():
                raw = np.fromfile(path, dtype=np.uint8)
                # A length that is not whole u32 entries stays bytes, for rule 20.9.2 to name.
                fields[name] = raw.view("<u4") if name == "esc_start" and raw.size % 4 == 0 else raw
        m = cls((rows, cols), fields)
        if validate:
            m.validate()
        return m


def transcode(source) -> ExecMatrix:
    """The canonical execution layout (spec 20.12) of a BF16 matrix: ``source`` is a 2-D array
    of BF16 weights (``uint16`` words or ``ml_dtypes.bfloat16``; spec 20.12.1), or a format-10
    matrix (:class:`nwc.Matrix`, a dict of fields, or a directory), validated by every rule of
    spec 13 first (20.12.2). FP8 matrices are refused (:class:`nwc.EncodeError`, spec 20.12.3).
    Two transcoders give the same bytes, whatever the source (spec 20.1)."""
    if isinstance(source, (Matrix, Mapping, str, os.PathLike)):
        code, rows, cols, raw = _matrix_args(source)
        return ExecMatrix((rows, cols), _native.exec_transcode(code, rows, cols, raw))
    array = np.asarray(source)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D matrix (rows x cols), got an array of shape {array.shape}")
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    words = _bf16_words(array)
    if words is None:
        raise TypeError(f"expected BF16 weights (uint16 or ml_dtypes.bfloat16), got dtype {array.dtype}; "
                        "the execution layout codes BF16 only (spec 20.1)")
    return ExecMatrix(array.shape, _native.exec_encode(np.ascontiguousarray(words)))
