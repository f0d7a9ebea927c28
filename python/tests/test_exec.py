"""The execution layout (spec 20) on the CPU: transcode, validate, decode and the directory form,
checked on every execution-layout vector of the corpus (the same manifest every engine runs)."""

import numpy as np
import pytest

import nwc
from conftest import bf16_weights, read_vector_file


def _exec_fields(v):
    """A vector's execution-layout fields as bytes, by spec name (`exec_sm` -> `sm`)."""
    return {n[len("exec_"):]: read_vector_file(p) for n, p in v["fields"].items()}


def _bytes(fields):
    return {n: np.asarray(a).tobytes() for n, a in fields.items()}


def _by_id(corpus):
    return {v["id"]: v for v in corpus}


def test_every_exec_vector(corpus):
    ids = _by_id(corpus)
    seen = {"canonical": 0, "valid": 0, "invalid": 0, "malformed": 0, "transcoded": 0, "refused": 0}
    for v in corpus:
        if v.get("representation") != "exec":
            continue
        shape, kind = (v["rows"], v["cols"]), v["kind"]
        m = nwc.ExecMatrix(shape, _exec_fields(v))
        seen[kind] += 1
        if kind in ("invalid", "malformed"):
            # Spec 20.10: the order is total, so the rule is exactly the vector's.
            with pytest.raises(nwc.FormatError) as e:
                m.validate()
            assert e.value.rule == v["expected_error"], (v["id"], str(e.value))
            assert isinstance(e.value, nwc.errors.RULE_ERRORS[v["expected_error"]])
            assert e.value.clause.startswith("20.9.") and e.value.rule in str(e.value)
            continue
        words = read_vector_file(v["input"], np.uint16).reshape(shape)
        np.testing.assert_array_equal(m.decode(), words, err_msg=v["id"])
        if kind == "canonical":
            assert _bytes(nwc.transcode(words).fields) == _bytes(m.fields), v["id"]
        for source_id in v.get("transcoded_from", []):
            s = ids[source_id]
            f10 = {n: read_vector_file(p) for n, p in s["fields"].items() if n != "exp_of_rank"}
            f10.update(mode=s["mode_code"], shape=(s["rows"], s["cols"]))
            assert _bytes(nwc.transcode(f10).fields) == _bytes(m.fields), (v["id"], source_id)
            seen["transcoded"] += 1
        for source_id in v.get("transcode_refused_from", []):
            s = ids[source_id]
            f10 = {n: read_vector_file(p) for n, p in s["fields"].items() if n != "exp_of_rank"}
            f10.update(mode=s["mode_code"], shape=(s["rows"], s["cols"]))
            with pytest.raises(nwc.EncodeError, match="20.12.3"):
                nwc.transcode(f10)
            seen["refused"] += 1
    assert all(n > 0 for n in seen.values()), seen


def test_round_trip_size_and_directory(tmp_path):
    w = bf16_weights(64, 1000, seed=7)
    e = nwc.transcode(w)
    assert e.shape == (64, 1000) and e.esc_start.dtype == np.uint32 and e.esc_start.size == 64 * 2 + 1
    assert e.escapes == e.esc.size and 0.75 < e.ratio < 0.80  # spec 20.18: about 0.754 + escapes
    np.testing.assert_array_equal(e.decode(), w)
    # From format 10 (either layout) the same bytes: spec 20.12.2.
    for layout in (0, 1):
        assert _bytes(nwc.transcode(nwc.encode(w, "bf16", layout)).fields) == _bytes(e.fields)
    e.save(tmp_path / "x")
    back = nwc.ExecMatrix.load(tmp_path / "x")
    assert _bytes(back.fields) == _bytes(e.fields) and back.shape == e.shape
    assert "exec 64x1000" in repr(e).replace("nwc.ExecMatrix(", "exec ")


def test_errors_name_rule_field_and_offset(tmp_path):
    w = bf16_weights(8, 40, seed=8)
    e = nwc.transcode(w)
    bad = e.base.copy()
    bad[3] = 0
    with pytest.raises(nwc.errors.ExecBaseRangeError) as err:
        nwc.ExecMatrix(e.shape, {**e.fields, "base": bad}).validate()
    assert (err.value.field, err.value.offset, err.value.clause) == ("base", 3, "20.9.3")
    with pytest.raises(nwc.errors.ExecFieldSizeError):
        nwc.ExecMatrix(e.shape, {**e.fields, "sm": e.sm[:-1]}).decode()
    e.save(tmp_path / "y")
    (tmp_path / "y" / "exec_esc_start.bin").write_bytes(b"\x01\x00")
    with pytest.raises(nwc.errors.ExecFieldSizeError):
        nwc.ExecMatrix.load(tmp_path / "y")
    (tmp_path / "y" / "summary.json").write_text('{"representation": "exec", "M": 8}')
    with pytest.raises(nwc.errors.ExecShapeRangeError):
        nwc.ExecMatrix.load(tmp_path / "y")
    with pytest.raises(nwc.EncodeError, match="20.12.3"):
        nwc.transcode(nwc.encode(w, "fp8", 0))
    nwc.encode(w).save(tmp_path / "f10")
    with pytest.raises(ValueError, match="format-10 directory"):
        nwc.ExecMatrix.load(tmp_path / "f10")
    assert _bytes(nwc.transcode(tmp_path / "f10").fields) == _bytes(e.fields)
    with pytest.raises(TypeError, match="BF16"):
        nwc.transcode(np.zeros((2, 2), np.float32))
