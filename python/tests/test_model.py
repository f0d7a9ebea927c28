"""Whole checkpoints through the engine of `nwc compress` (spec 17)."""

import json

import numpy as np
import pytest

import nwc
from conftest import bf16_weights, read_safetensors, write_safetensors


@pytest.fixture()
def model(tmp_path):
    emb = bf16_weights(64, 96, seed=1)
    tensors = {
        "model.embed_tokens.weight": ("BF16", emb.shape, emb.tobytes()),
        "lm_head.weight": ("BF16", emb.shape, emb.tobytes()),  # tied: one matrix (spec 17.5)
        "model.layers.0.mlp.up_proj.weight": ("BF16", (128, 96), bf16_weights(128, 96, seed=2).tobytes()),
        "model.norm.weight": ("BF16", (96,), bf16_weights(1, 96, seed=3).tobytes()),
    }
    path = tmp_path / "model.safetensors"
    write_safetensors(path, tensors)
    return path


def test_compress_inspect_verify_decompress(model, tmp_path):
    seen = []
    s = nwc.compress(model, tmp_path / "ck", layout=1, progress=seen.append)
    assert s["matrices"] == 2 and s["tensors_compressed"] == 3 and s["tensors_copied"] == 1
    assert seen and seen == sorted(seen) and seen[-1] > 0
    assert json.loads((tmp_path / "ck" / "nwc_config.json").read_text())["library_version"] == 10
    rows = nwc.inspect(tmp_path / "ck")
    assert [(r["rows"], r["cols"], r["elem"], r["layout"]) for r in rows] == [(64, 96, "bf16", 1), (128, 96, "bf16", 1)]
    assert "lm_head.weight" in rows[0]["tensors"] and rows[0]["ratio"] > 0
    report = nwc.verify(tmp_path / "ck", against=model)
    assert report["mismatches"] == [] and report["compared"] == 4
    nwc.decompress(tmp_path / "ck", tmp_path / "out", threads=1)
    assert read_safetensors(tmp_path / "out" / "model.safetensors") == read_safetensors(model)


def test_progress_totals_never_decrease_with_many_workers(tmp_path):
    # 96 small matrices over 8 workers finish close together: every callback must still see a
    # total at least the previous one (the count is taken under the GIL that orders the calls).
    tensors = {f"model.layers.{i}.mlp.up_proj.weight": ("BF16", (32, 48), bf16_weights(32, 48, seed=10 + i).tobytes())
               for i in range(96)}
    path = tmp_path / "many.safetensors"
    write_safetensors(path, tensors)
    for op in ("compress", "verify", "decompress"):
        seen = []
        if op == "compress":
            nwc.compress(path, tmp_path / "ck", threads=8, progress=seen.append)
        elif op == "verify":
            nwc.verify(tmp_path / "ck", against=path, threads=8, progress=seen.append)
        else:
            nwc.decompress(tmp_path / "ck", tmp_path / "out", threads=8, progress=seen.append)
        assert seen and all(a <= b for a, b in zip(seen, seen[1:])), (op, seen)


def test_outputs_never_overwrite(model, tmp_path):
    nwc.compress(model, tmp_path / "ck")
    with pytest.raises(nwc.UsageError):
        nwc.compress(model, tmp_path / "ck")


def test_a_corrupt_checkpoint_names_file_matrix_and_rule(model, tmp_path):
    nwc.compress(model, tmp_path / "ck")
    st = tmp_path / "ck" / "model.safetensors"
    blob = bytearray(st.read_bytes())
    header_len = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + header_len])
    start, _end = header["nwc/0/bases"]["data_offsets"]
    blob[8 + header_len + start] ^= 8  # bases[0] != 0: rule offset-first-nonzero (spec 13.5)
    st.write_bytes(bytes(blob))
    with pytest.raises(nwc.FormatError) as e:
        nwc.verify(tmp_path / "ck")
    assert e.value.rule == "offset-first-nonzero" and e.value.matrix == 0
    assert "model.safetensors" in e.value.file


def test_missing_and_unreadable_inputs(tmp_path):
    with pytest.raises(OSError):
        nwc.compress(tmp_path / "nope.safetensors", tmp_path / "ck")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00" * 5)
    with pytest.raises((nwc.CheckpointError, OSError)):
        nwc.compress(bad, tmp_path / "ck2")
    with pytest.raises(ValueError, match="elem"):
        nwc.compress(bad, tmp_path / "ck3", elem="int4")
    with pytest.raises(ValueError, match="threads"):
        nwc.decompress(tmp_path, tmp_path / "x", threads=0)


def test_a_failing_progress_callback_is_raised_after_the_work(model, tmp_path):
    def boom(n):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        nwc.compress(model, tmp_path / "ck", progress=boom)
