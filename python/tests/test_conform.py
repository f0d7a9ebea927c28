"""nwc.conform: judging Python encoders, in-process and as commands (spec 14)."""

import sys
import textwrap

import numpy as np

import nwc
from conftest import VECTORS, sub_corpus


def test_a_wrong_encoder_fails_with_the_first_difference():
    def off_by_one(w, elem, layout):
        m = nwc.encode(w, elem, layout)
        m.low = m.low.copy()
        m.low[0] ^= 1
        return m

    report = nwc.conform.run(VECTORS, encoder=off_by_one)
    assert not report.passed
    first = report.failures()[0]
    assert "low" in first["detail"]


def test_an_encoder_that_raises_fails_each_vector():
    def broken(w, elem, layout):
        raise RuntimeError("not implemented")

    report = nwc.conform.run(VECTORS, encoder=broken)
    assert report.summary["passed"] == 0 and "not implemented" in report.failures()[0]["detail"]


def test_a_command_encoder(tmp_path):
    script = tmp_path / "enc.py"
    script.write_text(textwrap.dedent("""
        import sys, numpy as np, nwc
        a = sys.argv[1:]
        elem, layout, rows, cols, inp, out = a[1], int(a[3]), int(a[5]), int(a[7]), a[8], a[9]
        w = np.fromfile(inp, dtype="<u2" if elem == "bf16" else np.uint8).reshape(rows, cols)
        nwc.encode(w, elem, layout).save(out)
    """))
    corpus = sub_corpus(tmp_path / "corpus", 8)  # a process per vector: a few are enough here
    report = nwc.conform.run(corpus, encoder=[sys.executable, str(script)])
    assert report.passed, report.failures()[:2]
    assert report.summary["passed"] == 8
