"""kill -9 matrix: every long step killed at a random moment, then checked and resumed (issue 15).

For each step (``import``, ``train``, ``attribute``, ``triples``, ``generate``, ``export``) and
each trial: copy a prepared project, start the step as its own ``python -m engine`` process,
``SIGKILL`` it at a random moment of its run (uniform over 5-100 % of the step's measured
uninterrupted duration, process start-up included), then

1. **integrity ok**: ``PRAGMA integrity_check`` of the killed file is ``ok``, and opening it
   (which sweeps a dead import and marks a dead run ``interrupted``) succeeds; no run is left
   ``running``;
2. **completed items present**: what was committed when the process died is still there after
   the open (datasets imported before, trained models with their weights, attributions, triples,
   cached LLM answers, candidates); an import or export is all-or-nothing (never a partial
   dataset, never a partial output file);
3. **resumed ok**: the same command run again exits 0 and leaves the complete result (the same
   counts as an uninterrupted reference run; for the LLM steps, no answered request sent again:
   at most the requests that were in flight at the kill are re-sent).

LLM steps talk to the loopback stub server (``tests/engine/llm/stub_server.py``); ``train`` and
``attribute`` use a tiny test backbone (``tiny-distilbert``). Prints one table row per step.

A run that finished before its kill moment is checked like the others but not counted as killed, and later kill
moments are drawn over its shorter duration; ``--trials`` is the number of runs killed mid-run (at most three times
as many are started).

Usage: ``python benchmarks/kill_matrix.py [--trials 20] [--steps import,train,...] [--seed 0]``
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SENTIMENT_DEV = REPO.parent / "shared" / "data" / "cad" / "sentiment" / "combined" / "dev.tsv"
STEPS = ("import", "train", "attribute", "triples", "generate", "export")
MEMBER = "d:tiny-distilbert"
LIMIT = {"attribute": 40, "triples": 40, "generate": 10}
IMPORT_ROWS = 150_000
LLM_CONCURRENCY = 4


# ---------------------------------------------------------------------------- helpers


def engine(args: list[str], *, wait: bool = True) -> subprocess.Popen | subprocess.CompletedProcess:
    """Run ``python -m engine -q ARGS`` from the repository (a fresh process)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "engine", "-q", *args]
    if wait:
        return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def checked(args: list[str]) -> str:
    done = engine(args)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return done.stdout


def files_of(path: Path) -> Path:
    return path.with_name(path.stem + "_files")


def copy_project(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if Path(str(src) + suffix).exists():
            shutil.copy(str(src) + suffix, str(dst) + suffix)
    if files_of(src).exists():
        shutil.copytree(files_of(src), files_of(dst), ignore=shutil.ignore_patterns("*.lock"))
    return dst


def query(path: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def integrity(path: Path) -> bool:
    return query(path, "PRAGMA integrity_check") == [("ok",)]


# ---------------------------------------------------------------------------- steps


@dataclass
class Step:
    """One step of the matrix.

    ``state(path)`` returns what counts as completed items (a dict of counts or sets);
    ``kept(at_kill, after_open)`` says whether everything completed at the kill is still
    there; ``complete(path, reference)`` whether the resumed result equals the reference.
    """

    name: str
    base: Path
    args: Callable[[Path], list[str]]
    state: Callable[[Path], dict]
    kept: Callable[[dict, dict], bool]
    complete: Callable[[Path, dict], bool]
    duration: float = 0.0
    reference: dict = field(default_factory=dict)
    server: object = None


def count(path: Path, sql: str, *args: object) -> int:
    return int(query(path, sql, *args)[0][0])


def dataset_rows(path: Path, name: str) -> int | None:
    rows = query(path, "SELECT d.id FROM datasets d WHERE d.name = ? AND d.state = 'ready'", name)
    if not rows:
        return None
    return count(path, "SELECT COUNT(*) FROM dataset_members WHERE dataset_id = ?", rows[0][0])


def model_state(path: Path) -> dict:
    models = query(path, "SELECT name, path FROM models")
    present = {n for n, p in models if p and (files_of(path) / p).exists()}
    return {"models": {n for n, _ in models}, "with_weights": present}


def build(workdir: Path, server_url: str) -> dict[str, Step]:
    """Prepare the base projects (once) and describe every step."""
    base = workdir / "base" / "p.cbproj"
    big = workdir / "big.csv"
    with open(big, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        rng = random.Random(0)
        words = "good bad film plot actor scene boring great awful fine long short".split()
        for i in range(IMPORT_ROWS):
            w.writerow([" ".join(rng.choice(words) for _ in range(12)) + f" {i}", "pos" if i % 2 else "neg"])
    checked(["init", str(base)])
    checked(["import", str(base), str(SENTIMENT_DEV), "--name", "d"])
    base_rows = dataset_rows(base, "d")

    trained = copy_project(base, workdir / "trained" / "p.cbproj")
    train_args = ["--backbones", "tiny-distilbert", "--epochs", "1", "--max-length", "32", "--max-train-rows", "120"]
    checked(["train", str(trained), "d", *train_args])
    voted = copy_project(trained, workdir / "voted" / "p.cbproj")
    checked(["vote", str(voted), "d", "--limit", str(LIMIT["generate"]), "--ig-steps", "8", "-k", "3"])
    exporting = copy_project(base, workdir / "exporting" / "p.cbproj")
    checked(["import", str(exporting), str(big), "--name", "big"])

    llm = ["--backend", "openai", "--base-url", server_url, "--model", "stub", "--concurrency", str(LLM_CONCURRENCY)]

    def import_state(p: Path) -> dict:
        return {"d": dataset_rows(p, "d"), "imp": dataset_rows(p, "imp")}

    def attribution_state(p: Path) -> dict:
        return {"attributions": count(p, "SELECT COUNT(*) FROM attributions")}

    def triples_state(p: Path) -> dict:
        return {"examples": count(p, "SELECT COUNT(DISTINCT example_id) FROM triples"),
                "cache": count(p, "SELECT COUNT(*) FROM llm_cache")}

    def generate_state(p: Path) -> dict:
        return {"candidates": count(p, "SELECT COUNT(*) FROM candidates WHERE status != 'failed'"),
                "cache": count(p, "SELECT COUNT(*) FROM llm_cache")}

    def export_state(p: Path) -> dict:
        out = p.parent / "out.csv"
        return {"out": out.read_bytes() if out.exists() else None}

    def grew(at_kill: dict, after: dict) -> bool:
        return all(after[k] >= at_kill[k] for k in at_kill)

    steps = {
        "import": Step(
            "import", base, lambda p: ["import", str(p), str(big), "--name", "imp"], import_state,
            # all-or-nothing: the dataset imported before is whole; the new one absent or whole
            lambda k, a: a["d"] == base_rows and a["imp"] in (None, IMPORT_ROWS),
            lambda p, ref: import_state(p) == {"d": base_rows, "imp": IMPORT_ROWS}),
        "train": Step(
            "train", base, lambda p: ["train", str(p), "d", *train_args], model_state,
            lambda k, a: k["with_weights"] <= a["with_weights"] and a["models"] == a["with_weights"],
            lambda p, ref: model_state(p) == ref),
        "attribute": Step(
            "attribute", trained,
            lambda p: ["attribute", str(p), "d", "--limit", str(LIMIT["attribute"]), "--ig-steps", "8",
                       "--members", MEMBER],
            attribution_state, grew, lambda p, ref: attribution_state(p) == ref),
        "triples": Step(
            "triples", base, lambda p: ["triples", str(p), "d", "--limit", str(LIMIT["triples"]), *llm],
            triples_state, grew, lambda p, ref: triples_state(p) == ref),
        "generate": Step(
            "generate", voted,
            lambda p: ["generate", str(p), "d", "--limit", str(LIMIT["generate"]),
                       "--judge", "none", *llm],
            generate_state, grew, lambda p, ref: generate_state(p) == ref),
        "export": Step(
            "export", exporting, lambda p: ["export", str(p), "big", str(p.parent / "out.csv")], export_state,
            lambda k, a: a["out"] in (None, a.get("ref")), lambda p, ref: export_state(p) == ref),
    }
    return steps


# ---------------------------------------------------------------------------- trials


@dataclass
class Row:
    step: str
    trials: int = 0
    killed: int = 0
    integrity_ok: int = 0
    kept_ok: int = 0
    resumed_ok: int = 0
    resent: int = 0
    notes: list[str] = field(default_factory=list)


def measure(step: Step, workdir: Path) -> None:
    """An uninterrupted run: its duration and the complete result."""
    path = copy_project(step.base, workdir / f"ref-{step.name}" / "p.cbproj")
    started = time.perf_counter()
    checked(step.args(path))
    step.duration = time.perf_counter() - started
    step.reference = step.state(path)


def trial(step: Step, workdir: Path, index: int, rng: random.Random,
          server) -> tuple[bool, bool, bool, int, str, bool]:
    path = copy_project(step.base, workdir / f"{step.name}-{index}" / "p.cbproj")
    before_count = server.count if server is not None else 0
    proc = engine(step.args(path), wait=False)
    started = time.perf_counter()
    time.sleep(rng.uniform(0.05, 1.0) * step.duration)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    if not killed:  # it ran faster than the reference run: later kills are drawn over this shorter run
        step.duration = min(step.duration, time.perf_counter() - started)
    integrity_ok = integrity(path)
    at_kill = step.state(path)
    from engine.store import Project

    open_note = ""
    try:
        Project.open(path).close()
        opened = True
    except Exception as exc:  # noqa: BLE001 - reported in the table
        opened, open_note = False, f"open failed: {exc}"
    running = count(path, "SELECT COUNT(*) FROM runs WHERE status = 'running'") if opened else -1
    integrity_ok = integrity_ok and opened and integrity(path) and running == 0
    after_open = step.state(path)
    if step.name == "export":
        after_open["ref"] = step.reference["out"]
    kept = step.kept(at_kill, after_open)
    if step.complete(path, step.reference):  # it had finished: nothing to resume (an import would refuse the name)
        rerun = subprocess.CompletedProcess([], 0, "", "")
    else:
        rerun = engine(step.args(path))
    resumed = rerun.returncode == 0 and step.complete(path, step.reference)
    resent = 0
    if server is not None:
        # every distinct request once, plus at most the ones in flight at the kill
        sent = server.count - before_count
        resent = max(0, sent - step.state(path)["cache"])
        resumed = resumed and resent <= LLM_CONCURRENCY
    note = open_note + ("" if resumed else f" rerun rc={rerun.returncode}, resent {resent}, state "
                                          f"{_shown(step.state(path))} (reference {_shown(step.reference)}): "
                                          f"{rerun.stderr.strip()[-300:]}")
    if not killed:
        note = (note + " (finished before the kill)").strip()
    shutil.rmtree(path.parent, ignore_errors=True)
    return integrity_ok, kept, resumed, resent, note, killed


def _shown(state: dict) -> dict:
    """A step's state for a note (an export's bytes by their length)."""
    return {k: (len(v) if isinstance(v, bytes) else v) for k, v in state.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", type=Path, help="keep the projects here (default: a temporary folder)")
    args = ap.parse_args(argv)
    from tests.engine.counterbias.scripted_llm import scripted_reply
    from tests.engine.llm.stub_server import StubServer

    rng = random.Random(args.seed)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kill-matrix-"))
    workdir.mkdir(parents=True, exist_ok=True)
    server = StubServer(reply=scripted_reply, latency=0.05).start()
    try:
        t0 = time.perf_counter()
        steps = build(workdir, server.base_url)
        print(f"prepared the projects in {time.perf_counter() - t0:.0f} s ({workdir})", flush=True)
        rows = []
        for name in args.steps.split(","):
            step = steps[name]
            measure(step, workdir)
            row = Row(name)
            i = 0
            # --trials runs that were killed mid-run (one that finished before its kill is checked too, but not
            # counted), at most three times as many in all
            while row.killed < args.trials and i < 3 * args.trials:
                ok, kept, resumed, resent, note, killed = trial(step, workdir, i, rng,
                                                                server if name in ("triples", "generate") else None)
                i += 1
                row.trials += 1
                row.killed += killed
                row.integrity_ok += ok
                row.kept_ok += kept
                row.resumed_ok += resumed
                row.resent += resent
                if note:
                    row.notes.append(f"trial {i}: {note}")
            rows.append(row)
            print(f"{name}: reference run {step.duration:.1f} s, {row.trials} trials ({row.killed} killed mid-run), "
                  f"integrity {row.integrity_ok}, "
                  f"completed items kept {row.kept_ok}, resumed {row.resumed_ok}", flush=True)
        print()
        print(f"| step | trials | killed mid-run | integrity ok | completed items present | resumed ok | re-sent LLM requests |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r.step} | {r.trials} | {r.killed} | {r.integrity_ok} | {r.kept_ok} | {r.resumed_ok} | "
                  f"{r.resent if r.step in ('triples', 'generate') else '-'} |")
        for r in rows:
            for note in r.notes:
                print(f"  {r.step} {note}")
        failed = sum(r.trials * 3 - r.integrity_ok - r.kept_ok - r.resumed_ok for r in rows)
        return 0 if failed == 0 else 1
    finally:
        server.close()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
