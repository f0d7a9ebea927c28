"""One encoded matrix (spec 12) on numpy arrays: encode, decode, validate, and the directory form
``nwc encode`` writes (one raw little-endian ``NAME.bin`` per stored field plus ``summary.json``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple, Union

import numpy as np

from . import _native
from .errors import RULE_ERRORS

__all__ = ["Matrix", "encode", "decode", "validate", "FIELDS"]

#: The stored fields of spec 12.1, in order; ``scale`` exists for quantized fp8 matrices only.
FIELDS = ("data", "bases", "hdr", "lut", "low", "scale")
_DTYPES = {"data": np.uint8, "bases": np.uint32, "hdr": np.uint8, "lut": np.uint32, "low": np.uint8,
           "scale": np.float32}
_ELEMS = {"bf16": 0, "fp8": 1}  # spec 2.1: element type, bits 0..3 of the mode code


def _mode_code(elem: str, layout: int) -> int:
    if elem not in _ELEMS:
        raise ValueError(f'elem must be "bf16" or "fp8", not {elem!r}')
    if layout not in (0, 1):
        raise ValueError(f"layout must be 0 (8-row blocks, spec 7) or 1 (16-row mma fragments, spec 8), not {layout!r}")
    return _ELEMS[elem] | (layout << 4)  # spec 2.2


def _elem_layout(code: int) -> Tuple[str, int]:
    return ("fp8" if code & 0xF else "bf16"), code >> 4


def _le_bytes(a) -> np.ndarray:
    """A 1-D uint8 view of a field (numpy array of any dtype, or bytes), little-endian."""
    if isinstance(a, (bytes, bytearray, memoryview)):
        return np.frombuffer(a, dtype=np.uint8)
    a = np.asarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


class _Stored:
    """What both representations of a matrix share: their size (``fields`` and ``shape``)."""

    @property
    def nbytes(self) -> int:
        """Bytes of every stored field (as ``bytes_total`` of summary.json)."""
        return sum(int(a.nbytes) for a in self.fields.values())

    @property
    def ratio(self) -> float:
        """Stored bytes over the bytes of the same matrix in BF16 (``ratio_vs_bf16``)."""
        return self.nbytes / (2 * self.shape[0] * self.shape[1])

    def _raw(self) -> Dict[str, np.ndarray]:
        """The fields as little-endian bytes, what the native functions take."""
        return {n: _le_bytes(a) for n, a in self.fields.items()}


def _write_files(directory: Path, files: Mapping[str, bytes]) -> None:
    """Writes each file whole through a temporary file in the same folder and a rename."""
    for name, b in files.items():
        tmp = directory / f".{name}.nwc-partial-{os.getpid()}"
        tmp.write_bytes(b)
        os.replace(tmp, directory / name)


class Matrix(_Stored):
    """The stored fields of one encoded matrix (spec 12) and what the encoder knows beside them.

    ``data`` (uint8: lane streams, spec 9), ``bases`` (uint32: block offsets, spec 9.3), ``hdr``
    (uint8: words per lane, spec 9.1), ``lut`` (uint32 x 4096: decoder table, spec 10), ``low``
    (uint8: raw plane, spec 3.6), ``scale`` (float32 per row, quantized fp8 only, spec 11) and,
    from the encoder, ``exp_of_rank`` (uint8 x 16, spec 5.3), ``escapes`` (spec 6.2) and
    ``stream_end`` (spec 9.4).
    """

    def __init__(self, elem: str, layout: int, shape: Tuple[int, int], fields: Mapping[str, np.ndarray],
                 exp_of_rank: Optional[np.ndarray] = None, escapes: Optional[int] = None,
                 stream_end: Optional[int] = None):
        self.mode_code = _mode_code(elem, layout)
        self.elem, self.layout = elem, layout
        self.shape = (int(shape[0]), int(shape[1]))
        for name in FIELDS:
            value = fields.get(name)
            setattr(self, name, None if value is None else np.asarray(value))
        self.exp_of_rank = exp_of_rank
        self.escapes = escapes
        self.stream_end = stream_end

    @property
    def fields(self) -> Dict[str, np.ndarray]:
        """The stored fields present, by name."""
        return {n: getattr(self, n) for n in FIELDS if getattr(self, n) is not None}

    def __repr__(self) -> str:
        return (f"nwc.Matrix({self.elem} layout {self.layout}, {self.shape[0]}x{self.shape[1]}, "
                f"{self.nbytes} bytes, ratio {self.ratio:.4f})")

    def validate(self) -> None:
        """Checks every validity rule of spec 13; raises the rule's FormatError subclass."""
        _native.validate(self.mode_code, self.shape[0], self.shape[1], self._raw())

    def save(self, directory: Union[str, os.PathLike]) -> None:
        """Writes the directory form ``nwc encode`` writes; ``nwc decode`` and ``nwc info`` read it.
        Each file is written whole through a temporary file and a rename."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        files = {f"{n}.bin": _le_bytes(a).tobytes() for n, a in self.fields.items()}
        if self.exp_of_rank is not None:
            files["exp_of_rank.bin"] = np.asarray(self.exp_of_rank, dtype=np.uint8).tobytes()
        geo = _native.geometry(self.mode_code, *self.shape)
        n = self.shape[0] * self.shape[1]
        total = sum(len(b) for name, b in files.items() if name != "exp_of_rank.bin")
        bytes_input = n * (2 if self.elem == "bf16" else 1)
        summary = {
            "format_version": _native.FORMAT_VERSION,
            "encoder": "nwc-python",
            "M": self.shape[0], "K": self.shape[1], "elem": self.mode_code,
            "type": "bf16" if self.elem == "bf16" else "fp8_e4m3", "layout": self.layout,
            "K16": geo["k16"], "blocks": geo["blocks"], "n_low": geo["n_low"],
            "encoder_return_dl": len(files["data.bin"]),
            "stream_end": self.stream_end, "escapes": self.escapes,
            "quantized_from_bf16": self.scale is not None,
            "bytes_total": total, "bytes_input": bytes_input,
            "ratio_vs_bf16": total / (2 * n), "ratio_vs_input": total / bytes_input,
            "exp_of_rank": None if self.exp_of_rank is None else [int(x) for x in self.exp_of_rank],
            "sha256": {name: hashlib.sha256(b).hexdigest() for name, b in sorted(files.items())},
        }
        summary = {k: v for k, v in summary.items() if v is not None}
        files["summary.json"] = json.dumps(summary, indent=2).encode()
        _write_files(d, files)
        stale = d / "scale.bin"
        if self.scale is None and stale.exists():
            stale.unlink()  # a scale.bin of an earlier quantized matrix would be read as this one's

    @classmethod
    def load(cls, directory: Union[str, os.PathLike], validate: bool = True) -> "Matrix":
        """Reads a directory ``nwc encode`` (or :meth:`save`) wrote. The mode and shape in
        summary.json are checked (rules 13.1, 13.2) and every file's size against the shape
        (rule 13.3) before it is read; with ``validate``, every rule of spec 13."""
        d = Path(directory)
        summary = json.loads((d / "summary.json").read_text())
        if not isinstance(summary, dict):
            raise ValueError(f"{d / 'summary.json'}: expected a JSON object")
        try:
            rows, cols, code = (int(summary[k]) for k in ("M", "K", "elem"))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{d / 'summary.json'}: keys M, K and elem must be integers ({e})") from None
        geo = _native.geometry(code, rows, cols)
        elem, layout = _elem_layout(code)
        allowed = {"bases": [4 * geo["blocks"]], "hdr": [32 * geo["blocks"]], "lut": [4 * 4096],
                   "low": [geo["n_low"], geo["n_low"] + 512],
                   "scale": [4 * rows] if elem == "fp8" else [0]}
        fields = {}
        for name in FIELDS:
            path = d / f"{name}.bin"
            if not path.exists():
                if name == "scale":
                    continue
                raise RULE_ERRORS["field-size"](f"field-size (spec 13.3): {path} is missing (a stored field, spec 12)",
                                                field=name)
            size = path.stat().st_size
            if name in allowed and size not in allowed[name]:
                want = " or ".join(map(str, allowed[name]))
                raise RULE_ERRORS["field-size"](
                    f"field-size (spec 13.3): field `{name}` has {size} bytes, expected {want} (file: {path})",
                    field=name)
            fields[name] = np.fromfile(path, dtype=np.dtype(_DTYPES[name]).newbyteorder("<"))
        ranks = d / "exp_of_rank.bin"
        exp_of_rank = np.fromfile(ranks, dtype=np.uint8) if ranks.exists() else None
        m = cls(elem, layout, (rows, cols), fields, exp_of_rank, summary.get("escapes"), summary.get("stream_end"))
        if validate:
            m.validate()
        return m


def _bf16_words(array: np.ndarray) -> Optional[np.ndarray]:
    """uint16 words of a BF16 array (uint16 or ml_dtypes.bfloat16), a view where possible."""
    if array.dtype.name == "bfloat16":
        return array.view(np.uint16)
    if array.dtype == np.uint16:
        return array
    return None


def _fp8_bytes(array: np.ndarray) -> Optional[np.ndarray]:
    if array.dtype.name == "float8_e4m3fn":
        return array.view(np.uint8)
    if array.dtype == np.uint8:
        return array
    return None


def encode(array, elem: str = "bf16", layout: int = 0) -> Matrix:
    """Encodes a 2-D weight matrix in NWC format 10 (spec 4-10), byte-identical with the 0.10.1
    library, on all cores with the GIL released.

    ``elem="bf16"`` (lossless): ``array`` holds BF16 weights, as ``uint16`` words or
    ``ml_dtypes.bfloat16``. ``elem="fp8"``: BF16 input is quantized to fp8 e4m3 with one scale per
    row (spec 11, lossy); ``uint8`` or ``ml_dtypes.float8_e4m3fn`` input is coded as it is, without
    scales (spec 4.5). ``layout`` 0: blocks of 8 rows (spec 7); 1: 16-row mma fragments (spec 8).
    The array is read in place when it is C-contiguous and little-endian.
    """
    code = _mode_code(elem, layout)
    if not isinstance(array, np.ndarray):
        if hasattr(array, "__array__") or isinstance(array, (list, tuple)):
            array = np.asarray(array)
        else:
            raise TypeError(f"expected a numpy array of BF16 words (uint16 or ml_dtypes.bfloat16), got {type(array).__name__}")
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D matrix (rows x cols), got an array of shape {array.shape}")
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    words = _bf16_words(array)
    if words is not None:
        out = _native.encode_bf16(np.ascontiguousarray(words), layout, elem == "fp8")
    elif elem == "fp8" and _fp8_bytes(array) is not None:
        out = _native.encode_fp8(np.ascontiguousarray(_fp8_bytes(array)), layout)
    else:
        want = "uint16 or ml_dtypes.bfloat16" + (", or uint8 / float8_e4m3fn fp8 bytes" if elem == "fp8" else "")
        raise TypeError(f"expected BF16 weights ({want}) for elem={elem!r}, got dtype {array.dtype}; "
                        "cast floats with array.astype(ml_dtypes.bfloat16)")
    assert out["mode"] == code
    fields = {n: out[n] for n in FIELDS}
    return Matrix(elem, layout, array.shape, fields, out["exp_of_rank"], out["escapes"], out["stream_end"])


def _matrix_args(m) -> Tuple[int, int, int, Dict[str, np.ndarray]]:
    if isinstance(m, Matrix):
        return m.mode_code, m.shape[0], m.shape[1], m._raw()
    if isinstance(m, Mapping):
        try:
            rows, cols = m["shape"]
            code = m["mode"] if "mode" in m else _mode_code(m["elem"], m.get("layout", 0))
        except KeyError as e:
            raise ValueError(f"a field dict needs `shape` and `mode` (or `elem` and `layout`): missing {e}") from None
        raw = {n: _le_bytes(m[n]) for n in FIELDS if m.get(n) is not None}
        return int(code), int(rows), int(cols), raw
    if isinstance(m, (str, os.PathLike)):
        return _matrix_args(Matrix.load(m, validate=False))
    raise TypeError(f"expected an nwc.Matrix, a dict of fields, or a directory, got {type(m).__name__}")


def validate(fields) -> None:
    """Checks every validity rule of spec 13 on an :class:`Matrix`, a directory, or a dict of
    fields (``data``, ``bases``, ``hdr``, ``lut``, ``low``, optional ``scale``, as arrays or bytes,
    plus ``shape`` and ``mode`` or ``elem``/``layout``). Raises the broken rule's
    :class:`nwc.FormatError` subclass, with ``rule``, ``clause``, ``field`` and ``offset``."""
    _native.validate(*_matrix_args(fields))


def decode(matrix, bfloat16: bool = False) -> np.ndarray:
    """Validates (spec 13) and decodes (spec 15.1) a matrix: a rows x cols array of the weights
    exactly as encoded: ``uint16`` BF16 words (``ml_dtypes.bfloat16`` with ``bfloat16=True``) or
    ``uint8`` fp8 e4m3fn bytes (unscaled: multiply row i by ``matrix.scale[i]``, spec 11.4)."""
    code, rows, cols, raw = _matrix_args(matrix)
    weights, _ranks = _native.decode(code, rows, cols, raw)
    if bfloat16 and weights.dtype == np.uint16:
        import ml_dtypes

        return weights.view(ml_dtypes.bfloat16)
    return weights
