"""Exceptions of the nwc package.

A stored matrix that breaks a validity rule of spec 13, or an execution layout that breaks one of
spec 20.9, raises a subclass of :class:`FormatError` named after the rule (``lane-truncated`` ->
:class:`LaneTruncatedError`, ``exec-esc-count`` -> :class:`ExecEscCountError`), carrying the rule
name, its spec clause, the field and the byte offset where the decoder found it: the same rule
names the ``nwc`` command prints. Every class is also a ``ValueError``: bad input, not a crash.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Type

from . import _native

__all__ = [
    "NwcError",
    "FormatError",
    "EncodeError",
    "LimitError",
    "CheckpointError",
    "UsageError",
    "RULE_ERRORS",
    "format_error",
]


class NwcError(ValueError):
    """Base class of every error the nwc package raises about its input."""


class FormatError(NwcError):
    """Stored fields break a validity rule of spec 13 (format 10) or 20.9 (the execution layout).

    Attributes: ``rule`` (e.g. ``"offset-mismatch"``), ``clause`` (``"13.7"``), ``field``
    (``"bases"``; ``"summary"`` for the mode code and shape; None if unknown), ``offset`` (byte
    offset into that field, or None), and for checkpoints ``file``, ``matrix`` and ``tensors``.
    """

    rule: str = ""
    clause: str = ""

    def __init__(self, message: str, *, rule: Optional[str] = None, clause: Optional[str] = None,
                 field: Optional[str] = None, offset: Optional[int] = None, **context):
        super().__init__(message)
        if rule is not None:
            self.rule = rule
        if clause is not None:
            self.clause = clause
        self.field = field
        self.offset = offset
        self.file = context.pop("file", None)
        self.matrix = context.pop("matrix", None)
        self.tensors = context.pop("tensors", None)
        self.context = context


class EncodeError(NwcError):
    """The encoder cannot code this input (shape outside spec 3.2, fp8 NaN (spec 4.6), a
    non-finite weight to quantize (spec 11.3), a stream over 2^32 - 1 bytes)."""


class LimitError(NwcError):
    """The matrix is larger than this process's decoder limits (spec 3.3)."""


class CheckpointError(NwcError):
    """A checkpoint or model folder is unusable (spec 17): unreadable safetensors, a bad
    ``nwc_config.json``, a tensor of the wrong size, an unsupported feature."""


class UsageError(NwcError):
    """The call makes no sense (e.g. the output folder exists: outputs never overwrite)."""


def _class_name(rule: str) -> str:
    return "".join(part.capitalize() for part in rule.split("-")) + "Error"


def _make_rule_classes() -> Dict[str, Type[FormatError]]:
    classes: Dict[str, Type[FormatError]] = {}
    for rule, clause in tuple(_native.RULES) + tuple(_native.EXEC_RULES):
        doc = f"Rule {rule} (spec {clause}) is broken."
        cls = type(_class_name(rule), (FormatError,), {"rule": rule, "clause": clause, "__doc__": doc,
                                                        "__module__": __name__})
        classes[rule] = cls
    return classes


#: Rule name -> its FormatError subclass, for every rule of spec 13 (13.1 .. 13.20) and of the
#: execution layout's spec 20.9 (20.9.1 .. 20.9.10).
RULE_ERRORS: Dict[str, Type[FormatError]] = _make_rule_classes()
globals().update({cls.__name__: cls for cls in RULE_ERRORS.values()})
__all__ += [cls.__name__ for cls in RULE_ERRORS.values()]

RULES: Tuple[Tuple[str, str], ...] = tuple(_native.RULES)
#: The execution layout's rules (spec 20.9) in the order of spec 20.10: (name, clause).
EXEC_RULES: Tuple[Tuple[str, str], ...] = tuple(_native.EXEC_RULES)


def format_error(message: str, *, rule: str, clause: str, field=None, offset=None, **context) -> FormatError:
    """The exception for a broken rule (called by the Rust side)."""
    cls = RULE_ERRORS.get(rule, FormatError)
    return cls(message, rule=rule, clause=clause, field=field, offset=offset, **context)
