"""Soak with the real window: review decisions by keyboard while the CLI imports and generates.

What runs at once, on one real project file:

* **the GUI** (this process's main thread): the real :class:`app.main_window.MainWindow` on the
  project's Counterbias tab, whole-dataset scope. A timer picks a random decidable candidate,
  selects it and presses ``A`` or ``X`` on the candidates table (``QTest.keyClick``: the same key
  handler, controller and undo stack a person uses), several times a second; every few seconds the
  candidate list is reloaded (it picks up what the CLI made);
* **``python -m engine import``** (a separate process, again and again): a CSV of mostly distinct
  reviews imported as a new dataset each time;
* **``python -m engine generate``** (a separate process, again and again, each time over more
  reviews): CoBA edit mode against a loopback OpenAI-compatible server with scripted answers
  (``tests.engine.llm.scripted_llm``), every answer and candidate written as it arrives.

At the end it checks: every CLI run exited 0, no error dialog or exception in the window, every
decision stored (the last status sent for each candidate is the stored one, and the decisions
table holds one row per key press), ``PRAGMA integrity_check`` ok; and prints the decision
latency (key press to the decision stored and shown: the key handler is synchronous) p50 / p99 /
max.

Run (offscreen or under Xvfb)::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/soak_gui.py --seconds 300
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

CAD_DEV = ROOT.parent / "shared" / "data" / "cad" / "sentiment" / "combined" / "dev.tsv"
WORDS = ("film movie plot acting story cast scene score ending director script pacing camera dialogue actor "
         "actress music character twist humour drama effects sequel budget season episode").split()
ADJ = "good bad great awful dull brilliant boring lovely clumsy moving flat sharp weak strong odd".split()


def engine_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "engine", "-q", *args]


def run_checked(*args: str) -> None:
    done = subprocess.run(engine_cmd(*args), cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"set-up step {args[0]} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def write_bulk(path: Path, rows: int, seed: int) -> Path:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for i in range(rows):
            a, b = rng.sample(WORDS, 2)
            w.writerow([f"The {a} of entry {i} was {rng.choice(ADJ)} and {rng.choice(ADJ)}. I found the {b} "
                        f"{rng.choice(ADJ)}, {rng.randrange(10**6)} times over.", "pos" if rng.random() < 0.5 else "neg"])
    return path


def write_reviews(path: Path, n: int) -> Path:
    with open(CAD_DEV, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))[1:]
    rows = [r for r in rows if 40 <= len(r[1].split()) <= 160]  # ordinary-length reviews
    rows = random.Random(0).sample(rows, min(n, len(rows)))
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([(text, label) for label, text in rows])
    return path


class CliLoop(threading.Thread):
    """Runs ``python -m engine`` commands one after another until the deadline."""

    def __init__(self, name: str, commands, deadline: float) -> None:
        super().__init__(name=name, daemon=True)
        self.commands = commands
        self.deadline = deadline
        self.runs: list[tuple[int, float, str]] = []

    def run(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for args in self.commands:
            if time.monotonic() >= self.deadline:
                return
            started = time.monotonic()
            done = subprocess.run(engine_cmd(*args), cwd=ROOT, env=env, capture_output=True, text=True)
            self.runs.append((done.returncode, time.monotonic() - started, done.stderr[-1500:]))


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--reviews", type=int, default=80, help="CAD dev reviews in the generated dataset")
    ap.add_argument("--import-rows", type=int, default=20_000)
    ap.add_argument("--hz", type=float, default=5.0, help="key presses per second")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    if not CAD_DEV.is_file():
        raise SystemExit(f"needs {CAD_DEV}")

    tmp = args.workdir or Path(tempfile.mkdtemp(prefix="cb-soak-gui-"))
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ["COUNTERBIAS_HOME"] = str(tmp / "home")
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "home" / "config")
    path = tmp / "soak.cbproj"

    from tests.engine.counterbias.scripted_llm import scripted_reply
    from tests.engine.llm.stub_server import StubServer

    server = StubServer(latency=0.05, reply=scripted_reply).start()
    llm = ("--backend", "openai", "--base-url", server.base_url, "--model", "stub", "--concurrency", "4")
    t0 = time.monotonic()
    run_checked("init", str(path))
    run_checked("import", str(path), str(write_reviews(tmp / "reviews.csv", args.reviews)), "--name", "reviews")
    run_checked("train", str(path), "reviews", "--backbones", "tiny-distilbert", "--epochs", "1",
                "--max-length", "64", "--max-train-rows", "200")
    run_checked("vote", str(path), "reviews", "--ig-steps", "8", "-k", "3")
    first = 10
    run_checked("generate", str(path), "reviews", "--limit", str(first), "--judge", "none", *llm)
    setup_s = time.monotonic() - t0
    bulk = write_bulk(tmp / "bulk.csv", args.import_rows, 2)

    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from app.main_window import MainWindow
    from app.settings import Settings

    app = QApplication.instance() or QApplication([])
    win = MainWindow(Settings())
    win.resize(1400, 900)
    win.show()
    if not win.open_project(path):
        raise SystemExit("the window did not open the project")
    win.session.set_dataset(win.session.project.dataset("reviews"))
    win.show_review_tab()
    panel, ctl = win.review_panel, win.review
    panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
    ctl.reload_candidates()

    gui_errors: list[str] = []
    shown = ctl.show_error
    ctl.show_error = lambda exc, tb=None: (gui_errors.append(f"{type(exc).__name__}: {exc}"), shown(exc, tb))[1]
    old_hook = sys.excepthook
    sys.excepthook = lambda *exc: gui_errors.append(f"exception: {exc[0].__name__}: {exc[1]}")

    deadline = time.monotonic() + args.seconds
    importer = CliLoop("import", ((("import", str(path), str(bulk), "--name", f"bulk {k}") for k in range(1, 10_000))),
                       deadline)
    limits = list(range(first + 10, args.reviews + 1, 10))
    generator = CliLoop("generate", ((("generate", str(path), "reviews", "--limit", str(n),
                                       "--judge", "none", *llm) for n in limits)), deadline)
    importer.start()
    generator.start()

    rng = random.Random(3)
    latencies: list[float] = []
    reloads: list[float] = []
    sent: dict[int, str] = {}
    presses = 0
    undo_drops = 0  # key presses after which the undo stack did not hold one more command
    undo_at_end: list[int] = []
    last_reload = time.monotonic()

    def tick() -> None:
        nonlocal presses, last_reload, undo_drops
        if time.monotonic() >= deadline:
            timer.stop()
            undo_at_end.append(ctl.undo_stack.count())
            app.quit()
            return
        if time.monotonic() - last_reload > 3.0:
            t = time.perf_counter()
            ctl.reload_candidates()
            reloads.append(time.perf_counter() - t)
            last_reload = time.monotonic()
        rows = [r for r in panel.visible_candidates() if r["status"] != "failed"]
        if not rows:
            return
        cand = rng.choice(rows)
        if not panel.select_candidate(int(cand["id"])):
            return
        status, key = rng.choice((("accepted", Qt.Key.Key_A), ("rejected", Qt.Key.Key_X)))
        panel.table.setFocus()
        undo_before = ctl.undo_stack.count()
        t = time.perf_counter()
        QTest.keyClick(panel.table, key)
        latencies.append(time.perf_counter() - t)
        undo_drops += ctl.undo_stack.count() <= undo_before
        sent[int(cand["id"])] = status
        presses += 1

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(int(1000 / args.hz))
    app.exec()
    sys.excepthook = old_hook
    win.jobs.wait_for_done(60_000)
    for loop in (importer, generator):
        loop.join(timeout=600)
    server.close()
    undo_count = undo_at_end[0] if undo_at_end else ctl.undo_stack.count()
    win.close()

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    stored = dict(conn.execute("SELECT id, status FROM candidates").fetchall())
    decisions = conn.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    candidates = conn.execute("SELECT COUNT(*) FROM candidates").fetchone()[0]
    datasets = conn.execute("SELECT COUNT(*) FROM datasets WHERE state = 'ready'").fetchone()[0]
    conn.close()
    lost = sum(1 for c, s in sent.items() if stored.get(c) != s)
    cli_failed = [(loop.name, rc, err) for loop in (importer, generator) for rc, _, err in loop.runs if rc != 0]

    print(f"soak_gui: {args.seconds:.0f} s on {path} (set-up {setup_s:.0f} s)")
    for loop in (importer, generator):
        durations = [d for _, d, _ in loop.runs]
        print(f"  CLI {loop.name}: {len(loop.runs)} runs, {sum(rc == 0 for rc, _, _ in loop.runs)} exit 0, "
              f"median {np.median(durations) if durations else float('nan'):.1f} s")
    print(f"  project now: {datasets} datasets, {candidates} candidates; {server.count} LLM requests answered")
    print(f"  window: {presses} key decisions on {len(sent)} candidates; stored decisions {decisions}, "
          f"undo stack {undo_count} (a press that did not grow it: {undo_drops}), final status lost {lost}; "
          f"{len(reloads)} list reloads")
    print(f"  decision latency ms: p50 {pct(latencies, 50):.1f}  p99 {pct(latencies, 99):.1f}  "
          f"max {max(latencies, default=float('nan')) * 1000:.1f}")
    print(f"  reload latency ms:   p50 {pct(reloads, 50):.1f}  p99 {pct(reloads, 99):.1f}  "
          f"max {max(reloads, default=float('nan')) * 1000:.1f}")
    print(f"  errors: window {len(gui_errors)}, CLI runs failed {len(cli_failed)}; integrity_check: {integrity}")
    for e in gui_errors[:10]:
        print("   ", e)
    for name, rc, err in cli_failed[:5]:
        print(f"    {name} exit {rc}: {err.strip()[-600:]}")
    ok = not gui_errors and not cli_failed and lost == 0 and decisions == presses and integrity == "ok" and presses > 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
