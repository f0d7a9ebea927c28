"""Judge an encoder against the golden corpus (spec 14), in-process.

``nwc.conform.run("vectors", encoder=my_encode)`` runs ``my_encode(weights, elem, layout)`` on
the input of every canonical and valid vector and judges what it returns exactly as
``nwc-conform encoder`` judges a command: CANONICAL (every specified byte, spec 14.1, and the rank
table equal the canonical encoding), VALID (passes every rule of spec 13 and decodes to the input,
spec 14.3) or FAIL with the first difference. ``encoder`` may also be a command (list or string),
run with the protocol of conformance/README.md.
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Union

import numpy as np

from . import _native
from ._matrix import FIELDS, Matrix, _le_bytes

__all__ = ["run", "Report"]


@dataclass
class Report:
    """The suite's report: ``summary`` counts, one ``vectors`` entry per vector (``id``, ``kind``,
    ``verdict``, ``detail``), and the report as JSON in ``json`` (as ``nwc-conform --json``)."""

    summary: Dict[str, object]
    vectors: List[Dict[str, object]]
    json: str

    @property
    def passed(self) -> bool:
        """Everything judged passed, and at least one vector was judged."""
        return self.summary["failed"] == 0 and self.summary["passed"] > 0

    def failures(self) -> List[Dict[str, object]]:
        return [v for v in self.vectors if v["verdict"] == "fail"]


def _report(text: str) -> Report:
    doc = json.loads(text)
    return Report(doc["summary"], doc["vectors"], text)


def _fields_of(result) -> Dict[str, bytes]:
    """The encoder's return value (an nwc.Matrix, or a dict of stored fields as arrays or bytes,
    optionally with ``exp_of_rank``) as raw little-endian bytes."""
    if isinstance(result, Matrix):
        out = {n: _le_bytes(a).tobytes() for n, a in result.fields.items()}
        if result.exp_of_rank is not None:
            out["exp_of_rank"] = _le_bytes(np.asarray(result.exp_of_rank, dtype=np.uint8)).tobytes()
        return out
    if isinstance(result, dict):
        return {n: _le_bytes(v).tobytes() for n, v in result.items() if n in FIELDS + ("exp_of_rank",) and v is not None}
    raise TypeError(f"the encoder must return an nwc.Matrix or a dict of fields, not {type(result).__name__}")


def run(vectors: Union[str, os.PathLike], encoder: Union[Callable, Sequence[str], str], *,
        timeout_s: float = 60.0) -> Report:
    """Runs the encoder suite of the corpus in ``vectors`` (its manifest.json; every file checked
    against its SHA-256) on ``encoder``.

    A callable gets ``(weights, elem, layout)``: a rows x cols ``uint16`` array of BF16 words
    (``elem="bf16"``) or ``uint8`` fp8 bytes (``elem="fp8"``), and returns an :class:`nwc.Matrix`
    or a dict of fields. A command (``["my-encoder", "--flag"]`` or a string) is run once per
    vector as ``CMD --elem E --layout L --rows M --cols K INPUT OUTDIR``.
    """
    corpus = os.fspath(vectors)
    if callable(encoder):
        def adapter(data: bytes, elem: str, layout: int, rows: int, cols: int) -> Dict[str, bytes]:
            dtype = np.dtype("<u2") if elem == "bf16" else np.uint8
            weights = np.frombuffer(data, dtype=dtype).reshape(rows, cols)
            return _fields_of(encoder(weights, elem, layout))

        name = getattr(encoder, "__qualname__", repr(encoder))
        return _report(_native.run_callable(corpus, adapter, f"python:{name}"))
    argv = shlex.split(encoder) if isinstance(encoder, str) else list(encoder)
    if not argv:
        raise ValueError("the encoder command is empty")
    with tempfile.TemporaryDirectory(prefix="nwc-conform-") as work:
        return _report(_native.run_command(corpus, argv[0], argv[1:], timeout_s, work))
