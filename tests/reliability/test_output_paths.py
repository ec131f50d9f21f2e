"""Issue 52, items 1 and 3 and the export umask (14): no output option may destroy data.

Every verb with an output option refuses, with a named error and exit 3, a target that is the
open project (however spelled: ``sub/../p.cbproj``, a symbolic or hard link), its ``-wal`` /
``-shm``, its ``_files`` folder or a file inside it; an export refuses a FIFO (without
blocking), a device node, a folder and, unless ``--follow-symlink`` is given, a symbolic link.
Each case checks that the project's content and every file beside it are unchanged.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine.errors import OutputInProjectFolderError, OutputIsProjectError, OutputNotAFileError
from engine.io import ImportOptions, export_dataset, import_file
from engine.io.output import check_output_path, open_output
from engine.store import Project
from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli

ROWS = [(f"a good film number {i}", "pos") for i in range(8)] + [(f"a bad film number {i}", "neg") for i in range(8)]


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A project ``p.cbproj`` with one dataset ``d``, its ``p_files`` folder holding a file, and a folder ``sub``."""
    source = tmp_path / "d.csv"
    source.write_text("text,label\n" + "".join(f"{t},{label}\n" for t, label in ROWS), encoding="utf-8")
    path = tmp_path / "p.cbproj"
    with Project.create(path) as project:
        import_file(project, source, options=ImportOptions(name="d"))
    files = tmp_path / "p_files"
    files.mkdir(exist_ok=True)
    (files / "keep.bin").write_bytes(b"a model the project keeps")
    (tmp_path / "sub").mkdir()
    return path


#: target name -> the code it is refused with
TARGETS = {
    "project": "CB311",
    "wal": "CB311",
    "shm": "CB311",
    "dotdot": "CB311",
    "symlink": "CB311",
    "hardlink": "CB311",
    "files-folder": "CB312",
    "in-files-new": "CB312",
    "in-files-existing": "CB312",
}


def make_target(proj: Path, kind: str, ext: str = ".csv") -> str:
    """The path of target ``kind`` for the project ``proj`` (links are made here)."""
    folder = proj.parent
    if kind == "project":
        return str(proj)
    if kind in ("wal", "shm"):
        return f"{proj}-{kind}"
    if kind == "dotdot":
        return str(folder / "sub" / ".." / proj.name)
    if kind == "symlink":
        link = folder / f"link{ext}"
        link.symlink_to(proj)
        return str(link)
    if kind == "hardlink":
        hard = folder / f"hard{ext}"
        os.link(proj, hard)
        return str(hard)
    if kind == "files-folder":
        return str(folder / "p_files")
    if kind == "in-files-new":
        return str(folder / "p_files" / f"out{ext}")
    if kind == "in-files-existing":
        return str(folder / "p_files" / "keep.bin")
    raise AssertionError(kind)


def refused(done, code: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "What to do:" in done.stderr


# ---------------------------------------------------------------------------- item 1: the project is never a target


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("kind", list(TARGETS))
def test_item01_export_with_format_onto_the_project_is_refused(proj, tmp_path, kind, fmt):
    target = make_target(proj, kind, f".{fmt}")
    before = snapshot(proj, root=tmp_path)
    done = cli("export", str(proj), "d", target, "--format", fmt)
    refused(done, TARGETS[kind])
    assert_unchanged(before, snapshot(proj, root=tmp_path))
    assert cli("info", str(proj)).returncode == 0


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "in-files-new"])
@pytest.mark.parametrize("ext", [".csv", ".jsonl"])
def test_item01_export_without_format_onto_the_project_is_refused(proj, tmp_path, kind, ext):
    target = make_target(proj, kind, ext)
    before = snapshot(proj, root=tmp_path)
    refused(cli("export", str(proj), "d", target), TARGETS[kind])
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item01_export_onto_the_project_without_an_extension_is_refused(proj, tmp_path):
    before = snapshot(proj, root=tmp_path)
    refused(cli("export", str(proj), "d", str(proj)), "CB311")  # the guard, not the unknown format, refuses
    assert_unchanged(before, snapshot(proj, root=tmp_path))


VERBS = {
    "stats-out": ["stats", "{P}", "d", "--out", "{T}"],
    "report-html": ["report", "{P}", "--dataset", "d", "--html", "{T}"],
    "report-pdf": ["report", "{P}", "--dataset", "d", "--pdf", "{T}"],
    "vote-out": ["vote", "{P}", "d", "--out", "{T}"],
    "evaluate-out": ["evaluate", "{P}", "--train", "base=d", "--seeds", "1", "--out", "{T}"],
    "al-simulate-out": ["al-simulate", "{P}", "d", "--shots", "4", "--seeds", "1", "--learner", "tfidf-lr",
                        "--strategies", "random", "--out", "{T}"],
    "al-simulate-plot": ["al-simulate", "{P}", "d", "--shots", "4", "--seeds", "1", "--learner", "tfidf-lr",
                         "--strategies", "random", "--plot", "{T}"],
}


@pytest.mark.parametrize("kind", list(TARGETS))
@pytest.mark.parametrize("verb", list(VERBS))
def test_item01_output_option_onto_the_project_is_refused(proj, tmp_path, verb, kind):
    target = make_target(proj, kind)
    before = snapshot(proj, root=tmp_path)
    done = cli(*(a.format(P=proj, T=target) for a in VERBS[verb]))
    refused(done, TARGETS[kind])
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item01_writers_refuse_a_project_they_were_not_told_about(proj, tmp_path):
    """Without ``project=`` the writers still know a project by its header, and its folder by the file beside it."""
    from engine.evaluation.report_render import write_rendered_html
    from engine.evaluation.table import write_csv
    from engine.stats import StatsConfig
    from engine.stats.analysis import analyse_pair

    with Project.open(proj) as project:
        stats, _ = analyse_pair(project, 1, None, StatsConfig(), hyp_only="none")
    before = snapshot(proj, root=tmp_path)
    for target in (proj, tmp_path / "p_files" / "keep.bin"):
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            stats.result.to_csv(target)
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            write_csv([], target)
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            write_rendered_html("<html></html>", target)
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            with open_output(target) as f:
                f.write("votes")
    assert_unchanged(before, snapshot(proj, root=tmp_path))
    assert stats.result.to_csv(tmp_path / "z.csv").read_text(encoding="utf-8").startswith("feature,")


def test_item01_a_write_into_the_project_is_refused_while_it_is_open(proj, tmp_path):
    """The open project's -wal (present while it is open) and its path are refused in process too."""
    with Project.open(proj) as project:
        wal = Path(f"{proj}-wal")
        for target in (proj, wal, tmp_path / "sub" / ".." / "p.cbproj"):
            with pytest.raises(OutputIsProjectError):
                export_dataset(project, "d", target, format="csv")
        assert project.dataset("d").row_count == len(ROWS)
    assert cli("info", str(proj)).returncode == 0


# ---------------------------------------------------------------------------- item 3: special files stay


def test_item03_export_to_a_fifo_is_refused_without_blocking(proj, tmp_path):
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    before = snapshot(proj, root=tmp_path)
    done = cli("export", str(proj), "d", str(fifo), timeout=60)  # opening the FIFO would block: it is never opened
    refused(done, "CB313")
    assert "FIFO" in done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item03_export_to_a_device_node_is_refused(proj, tmp_path):
    node = tmp_path / "null.csv"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here: {exc}")
    rdev = os.lstat(node).st_rdev
    before = snapshot(proj, root=tmp_path)
    done = cli("export", str(proj), "d", str(node), "--format", "csv")
    refused(done, "CB313")
    assert "character device" in done.stderr
    st = os.lstat(node)
    assert stat.S_ISCHR(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) == (1, 3) and st.st_rdev == rdev
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item03_export_to_a_folder_is_refused(proj, tmp_path):
    before = snapshot(proj, root=tmp_path)
    refused(cli("export", str(proj), "d", str(tmp_path / "sub"), "--format", "csv"), "CB314")
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item03_export_through_a_symlink_needs_follow_symlink(proj, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    real = outside / "target.csv"
    real.write_text("old contents\n", encoding="utf-8")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    stdout_link = tmp_path / "stdout.csv"
    stdout_link.symlink_to("/dev/stdout")
    before = snapshot(proj, root=tmp_path)
    for target in (link, stdout_link):
        done = cli("export", str(proj), "d", str(target))
        refused(done, "CB315")
        assert "--follow-symlink" in done.stderr
    assert_unchanged(before, snapshot(proj, root=tmp_path))

    done = cli("export", str(proj), "d", str(link), "--follow-symlink")
    assert done.returncode == 0, done.stderr
    assert os.path.islink(link) and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8-sig").startswith("example_id,id,text,label")
    assert sorted(p.name for p in outside.iterdir()) == ["target.csv"]  # no part file left


def test_item03_a_followed_symlink_to_the_project_is_still_refused(proj, tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(proj)
    before = snapshot(proj, root=tmp_path)
    refused(cli("export", str(proj), "d", str(link), "--follow-symlink"), "CB311")
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item03_guard_refuses_a_socket(tmp_path):
    import socket

    path = tmp_path / "s.csv"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(OutputNotAFileError) as err:
            check_output_path(path)
        assert err.value.code == "CB313" and "socket" in err.value.message
    finally:
        server.close()


# ---------------------------------------------------------------------------- item 14: the umask


def _umask(mask: int):
    return lambda: os.umask(mask)


@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_item14_export_respects_the_umask(proj, tmp_path, mask, mode):
    out = tmp_path / "out.csv"
    done = cli("export", str(proj), "d", str(out), preexec_fn=_umask(mask))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == mode
    stats_out = tmp_path / "z.csv"
    done = cli("stats", str(proj), "d", "--out", str(stats_out), preexec_fn=_umask(mask))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(stats_out).st_mode) == mode


def test_item14_a_replaced_export_keeps_its_permissions(proj, tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("old\n", encoding="utf-8")
    os.chmod(out, 0o640)
    done = cli("export", str(proj), "d", str(out), preexec_fn=_umask(0o077))
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o640
    assert out.read_text(encoding="utf-8-sig").startswith("example_id")
    assert sorted(p.name for p in tmp_path.glob(".out.csv.*")) == []


def test_item01_simulation_writers_refuse_the_project(proj, tmp_path):
    from engine.active.simulation import SimulationResult

    result = SimulationResult(dataset="d", learner="tfidf-lr", strategies=("random",), shots=(4,), seeds=(0,),
                              cells=(), computed=0, skipped=0, pool_size=10, test_size=4, run_id=None,
                              labels=("neg", "pos"))
    before = snapshot(proj, root=tmp_path)
    for target in (proj, tmp_path / "p_files" / "keep.bin", tmp_path / "hard.csv"):
        if target.name == "hard.csv":
            os.link(proj, target)
            before = snapshot(proj, root=tmp_path)
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            result.write_csv(target)
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            result.plot(target, project=proj)
    assert_unchanged(before, snapshot(proj, root=tmp_path))


def test_item01_al_data_files_refuse_the_project(proj, tmp_path, shared_data):
    """The active-learning data builders write their CSV through the same guard."""
    from engine.active.datasets import build_cad_nli

    before = snapshot(proj, root=tmp_path)
    for target in (proj, tmp_path / "p_files" / "cad.csv"):
        with pytest.raises((OutputIsProjectError, OutputInProjectFolderError)):
            build_cad_nli(shared_data / "cad" / "NLI", target, n=5)
    assert_unchanged(before, snapshot(proj, root=tmp_path))
    out = build_cad_nli(shared_data / "cad" / "NLI", tmp_path / "cad.csv", n=5)
    assert out.read_text(encoding="utf-8").startswith("id,text,label")
