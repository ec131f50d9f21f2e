"""Issue 52, item 14 (minor inputs): ``--delimiter ab`` and ``--split nosuch`` get named errors (exit 3,
nothing written); Thai vowel signs and tone marks stay on their letters in the canonical words."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from engine.errors import DelimiterError
from engine.io import ReadOptions
from engine.io.readers import TableReader
from engine.store import Project
from engine.text.words import lexical_words, segment
from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli


def _csv(tmp_path: Path) -> Path:
    path = tmp_path / "d.csv"
    path.write_text("text,label,split\ngood film,pos,train\nbad film,neg,train\nfine,pos,dev\ndull,neg,dev\n",
                    encoding="utf-8")
    return path


def _refused(done, code: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "What to do:" in done.stderr


@pytest.mark.parametrize("delimiter, why", [("ab", "exactly one character"), ("", "exactly one character"),
                                            ("\n", "line break"), ('"', "double quote")])
def test_item14_delimiter_of_two_characters_is_a_named_error(tmp_path, delimiter, why):
    project, data = tmp_path / "p.cbproj", _csv(tmp_path)
    Project.create(project).close()
    before = snapshot(project, root=tmp_path)
    done = cli("import", str(project), str(data), "--delimiter", delimiter)
    _refused(done, "CB204")
    assert why in done.stderr and "--delimiter" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))
    with pytest.raises(DelimiterError):
        TableReader(data, ReadOptions(delimiter=delimiter)).__enter__()


def test_item14_delimiter_tab_spelled_out_reads_a_tab_separated_file(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("text\tlabel\ngood\tpos\nbad\tneg\n", encoding="utf-8")
    project = tmp_path / "p.cbproj"
    Project.create(project).close()
    for spelled in ("tab", "\\t"):
        done = cli("import", str(project), str(data), "--delimiter", spelled, "--name", f"d {len(spelled)}")
        assert done.returncode == 0, done.stderr


def test_item14_split_nosuch_is_a_named_error_listing_the_splits(tmp_path):
    project, data = tmp_path / "p.cbproj", _csv(tmp_path)
    Project.create(project).close()
    assert cli("import", str(project), str(data), "--name", "d").returncode == 0
    before = snapshot(project, root=tmp_path)
    # Verbs that select examples by --split: an LLM step (it fails before any request) and attribute/vote.
    for args in (("triples", str(project), "d", "--split", "nosuch", "--backend", "openai",
                  "--base-url", "http://127.0.0.1:9/v1", "--model", "x"),
                 ("triples", str(project), "d", "--split", "dev", "--split", "nosuch", "--backend", "openai",
                  "--base-url", "http://127.0.0.1:9/v1", "--model", "x")):
        done = cli(*args)
        _refused(done, "CB091")
        assert "'nosuch'" in done.stderr and "dev (2 rows)" in done.stderr and "train (2 rows)" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


THAI = "ภาพยนตร์เรื่องนี้ดีมาก"


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


@pytest.mark.parametrize("text", [THAI, "ภาพยนตร์ เรื่องนี้ ดีมาก!", "หนังเรื่องนี้แย่ที่สุด 10/10"])
def test_item14_thai_words_keep_their_combining_marks(text):
    words = segment(text)
    assert "".join(w.text for w in words) == text.replace(" ", "")
    for w in words:
        assert not _is_mark(w.text[0]), f"a word starts with a lone combining mark: {w}"
        assert w.kind != "punct" or not any(_is_mark(ch) for ch in w.text), w
    assert [w.text for w in lexical_words(segment("ภาพยนตร์ เรื่องนี้ ดีมาก"))] == ["ภาพยนตร์", "เรื่องนี้", "ดีมาก"]


def test_item14_other_scripts_still_segment_as_before():
    assert [w.text for w in segment("café cafe\u0301 नमस्ते didn't 1️⃣ 👍🏽")] == [
        "café", "cafe\u0301", "नमस्ते", "didn't", "1️⃣", "👍🏽"]


def test_item14_output_pipe_closed_early_ends_quietly(tmp_path):
    import os
    import subprocess
    import sys

    from tests.reliability.storage_fs import REPO

    project = tmp_path / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    for i in range(3):
        assert cli("import", str(project), str(_csv(tmp_path)), "--name", f"d{i}").returncode == 0
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is printed (`info P | head -0`)
    try:
        done = subprocess.run([sys.executable, "-m", "engine", "-q", "info", str(project)], stdout=write,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                              timeout=120)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
