"""One matrix: encode/decode/validate on numpy arrays, errors, the directory form."""

import threading

import numpy as np
import pytest

import nwc
from conftest import VECTORS, bf16_weights, read_vector_file


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("shape", [(1, 1), (13, 40), (64, 1000), (33, 513)])
def test_bf16_round_trip(layout, shape):
    w = bf16_weights(*shape, seed=shape[0])
    m = nwc.encode(w, "bf16", layout)
    assert m.shape == shape and m.elem == "bf16" and m.layout == layout
    assert m.mode_code == layout << 4
    assert m.exp_of_rank.shape == (16,) and m.escapes >= 0
    assert m.ratio == m.nbytes / (2 * shape[0] * shape[1])
    if shape[0] * shape[1] >= 64000:  # the 16 KB table dominates small matrices
        assert m.ratio < 0.9
    m.validate()
    out = nwc.decode(m)
    assert out.dtype == np.uint16 and out.shape == shape
    np.testing.assert_array_equal(out, w)


def test_ml_dtypes_bfloat16_is_read_as_words():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    w = bf16_weights(16, 600, seed=3)
    a = w.view(ml_dtypes.bfloat16)
    m = nwc.encode(a)
    assert nwc.decode(m).tobytes() == w.tobytes()
    back = nwc.decode(m, bfloat16=True)
    assert back.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(back.view(np.uint16), w)


def test_non_contiguous_and_big_endian_input():
    w = bf16_weights(40, 64, seed=4)
    ref = nwc.encode(np.ascontiguousarray(w[:, ::2]))
    assert nwc.encode(w[:, ::2]).data.tobytes() == ref.data.tobytes()
    be = w.astype(">u2")
    assert nwc.encode(be).low.tobytes() == nwc.encode(w).low.tobytes()


def test_fp8_quantized_and_raw():
    w = bf16_weights(24, 256, seed=5)
    q = nwc.encode(w, "fp8", 1)
    assert q.mode_code == 17 and q.scale is not None and q.scale.shape == (24,)
    fp8 = nwc.decode(q)
    assert fp8.dtype == np.uint8 and fp8.shape == (24, 256)
    raw = nwc.encode(fp8, "fp8", 0)
    assert raw.scale is None
    np.testing.assert_array_equal(nwc.decode(raw), fp8)


def test_encoding_matches_the_golden_corpus(corpus):
    """Byte identity with the canonical vectors (the 0.10.1 library's output), via the suite."""
    report = nwc.conform.run(VECTORS, encoder=lambda w, elem, layout: nwc.encode(w, elem, layout))
    # Vectors quantized from BF16 carry scales a raw-fp8 encoder cannot produce: they are VALID at most.
    assert report.passed, report.failures()[:3]
    assert report.summary["by_verdict"].get("canonical", 0) > 0


def test_every_invalid_vector_raises_its_rule(corpus):
    checked = 0
    for v in corpus:
        # Format 10 here; the execution layout's vectors: test_exec.py.
        if v["kind"] not in ("invalid", "malformed") or v.get("representation") == "exec":
            continue
        fields = {n: read_vector_file(p) for n, p in v["fields"].items() if n != "exp_of_rank"}
        fields.update(mode=v["mode_code"], shape=(v["rows"], v["cols"]))
        with pytest.raises(nwc.FormatError) as e:
            nwc.validate(fields)
        allowed = [v["expected_error"]] + (v.get("also_broken") or [])
        assert e.value.rule in allowed, (v["id"], str(e.value))
        assert isinstance(e.value, nwc.errors.RULE_ERRORS[e.value.rule])
        assert isinstance(e.value, ValueError)
        assert e.value.clause.startswith("13.")
        assert e.value.rule in str(e.value)
        checked += 1
    assert checked > 150


def test_offsets_and_fields_are_reported():
    w = bf16_weights(16, 512, seed=6)
    m = nwc.encode(w)
    bad = m.bases.copy()
    bad[1] += 8
    with pytest.raises(nwc.errors.OffsetMismatchError) as e:
        nwc.validate({**m.fields, "bases": bad, "mode": 0, "shape": m.shape})
    assert (e.value.field, e.value.offset, e.value.clause) == ("bases", 4, "13.7")


def test_bad_input_is_a_python_error_never_a_crash():
    with pytest.raises(TypeError, match="uint16 or ml_dtypes.bfloat16"):
        nwc.encode(np.zeros((4, 4), np.float32))
    with pytest.raises(TypeError):
        nwc.encode("weights")
    with pytest.raises(ValueError, match="2-D"):
        nwc.encode(np.zeros(16, np.uint16))
    with pytest.raises(ValueError, match="layout"):
        nwc.encode(np.zeros((4, 4), np.uint16), layout=2)
    with pytest.raises(ValueError, match="elem"):
        nwc.encode(np.zeros((4, 4), np.uint16), elem="fp16")
    with pytest.raises(nwc.EncodeError, match="NaN"):
        nwc.encode(np.full((4, 4), 0x7F, np.uint8), elem="fp8")
    with pytest.raises(nwc.EncodeError, match="shape"):
        nwc.encode(np.zeros((0, 4), np.uint16))
    with pytest.raises(nwc.errors.ModeCodeError):
        nwc.validate({"mode": 5, "shape": (4, 4)})
    with pytest.raises(nwc.errors.FieldMissingError):  # spec 13.3.1: no fields at all
        nwc.validate({"mode": 0, "shape": (4, 4)})
    with pytest.raises(TypeError):
        nwc.validate(42)


def test_save_and_load_use_the_cli_layout(tmp_path):
    w = bf16_weights(20, 700, seed=7)
    m = nwc.encode(w, "fp8", 0)
    m.save(tmp_path / "m")
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert names == ["bases.bin", "data.bin", "exp_of_rank.bin", "hdr.bin", "low.bin", "lut.bin",
                     "scale.bin", "summary.json"]
    back = nwc.Matrix.load(tmp_path / "m")
    assert back.shape == m.shape and back.mode_code == m.mode_code
    for name, a in m.fields.items():
        assert getattr(back, name).tobytes() == a.tobytes(), name
    np.testing.assert_array_equal(nwc.decode(tmp_path / "m"), nwc.decode(m))
    # A truncated field is refused by its size before it is read (rule 13.3).
    lut = tmp_path / "m" / "lut.bin"
    lut.write_bytes(lut.read_bytes()[:-4])
    with pytest.raises(nwc.errors.FieldSizeError) as e:
        nwc.Matrix.load(tmp_path / "m")
    assert e.value.field == "lut"


def test_the_gil_is_released_while_encoding():
    """Two threads encoding at once both finish with the right bytes (the codec runs without the GIL)."""
    w = bf16_weights(256, 4096, seed=8)
    expected = nwc.encode(w).data.tobytes()
    results = []
    threads = [threading.Thread(target=lambda: results.append(nwc.encode(w).data.tobytes())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected, expected]


def test_directories_interoperate_with_the_nwc_command(tmp_path):
    """`nwc encode` output loads here, and `nwc info` accepts what Matrix.save writes."""
    import subprocess

    from conftest import ROOT

    cli = ROOT / "target" / "debug" / "nwc"
    if not cli.exists():
        pytest.skip("skipped: target/debug/nwc is not built (scripts/test-all.sh builds it first)")
    w = bf16_weights(24, 600, seed=9)
    (tmp_path / "w.raw").write_bytes(w.tobytes())
    subprocess.run([cli, "encode", "--elem", "bf16", "--layout", "1", "--rows", "24", "--cols", "600",
                    tmp_path / "w.raw", tmp_path / "cli"], check=True, capture_output=True)
    m = nwc.Matrix.load(tmp_path / "cli")
    assert m.mode_code == 16 and m.escapes == nwc.encode(w, "bf16", 1).escapes
    np.testing.assert_array_equal(nwc.decode(m), w)
    nwc.encode(w, "fp8", 0).save(tmp_path / "py")
    info = subprocess.run([cli, "info", tmp_path / "py"], check=True, capture_output=True, text=True).stdout
    assert "valid" in info and "all 7 recorded files match" in info
