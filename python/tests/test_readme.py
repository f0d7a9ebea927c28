"""The README's Python example runs as printed (issue 14: it must work on a fresh machine).

The first ```python block of the README's "## Python" section is executed as it stands, in a
scratch directory (it writes `w.nwc`). The torch example after it needs a model and a GPU and is
not run here.
"""

import os
import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_section_example() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Python\n")
    end = text.find("\n## ", start + 1)
    section = text[start : end if end >= 0 else len(text)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "README's Python section has no ```python example"
    return blocks[0]


def test_readme_python_example(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ml_dtypes")
    code = python_section_example()
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{README}:## Python", "exec"), {"__name__": "readme_example"})
    assert (tmp_path / "w.nwc").is_dir(), "the example's m.save('w.nwc') wrote no directory"
    assert os.listdir(tmp_path / "w.nwc"), "the saved matrix directory is empty"
    assert capsys.readouterr().out.strip(), "the example prints the matrix"
