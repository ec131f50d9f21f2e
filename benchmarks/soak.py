"""Soak: the GUI thread reads and decides while workers import and extract triples, for minutes.

What runs at once, on one real project file:

* **importer** (a worker thread): imports a 100k-row CSV of mostly distinct reviews again and again
  as new datasets (the streamed, sliced import of ``engine.io.import_file``);
* **generator** (a worker thread): ``extract_triples`` over a 30k-review dataset in chunks, against
  a loopback OpenAI-compatible stub server (50 ms latency, 8 concurrent requests): every answer,
  every triple and every run record is written as it arrives;
* **GUI thread** (the main thread, calling what the controllers call): 20 times a second a review
  decision (``set_decision``) on a random candidate, and every fifth tick a page read of examples
  and the candidates list.

At the end it checks: no ``database is locked`` (or any other error) anywhere, every decision
stored (count and final status of every candidate), ``PRAGMA integrity_check`` ok, and prints the
latency of decisions and reads (p50 / p99 / max). Goal: decision p99 < 100 ms.

Run::

    .venv/bin/python benchmarks/soak.py --seconds 600
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.counterbias.review import candidate_rows, set_decision  # noqa: E402
from engine.counterbias.triples import extract_triples  # noqa: E402
from engine.io import ImportOptions, import_file  # noqa: E402
from engine.llm.config import LLMConfig  # noqa: E402
from engine.store import ExampleQuery, Project  # noqa: E402
from tests.engine.llm.stub_server import StubServer  # noqa: E402

WORDS = ("film movie plot acting story cast scene score ending director script pacing camera dialogue actor "
         "actress music character twist humour drama effects sequel budget season episode").split()
ADJ = "good bad great awful dull brilliant boring lovely clumsy moving flat sharp weak strong odd".split()
NOW = "2026-01-01T00:00:00"


def review(rng: random.Random, i: int) -> str:
    """A short, mostly unique two-sentence review."""
    a, b = rng.sample(WORDS, 2)
    return (f"The {a} of entry {i} was {rng.choice(ADJ)} and {rng.choice(ADJ)}. "
            f"I found the {b} {rng.choice(ADJ)}, {rng.randrange(10**6)} times over.")


def write_csv(path: Path, rows: int, seed: int) -> Path:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("text,label\n")
        for i in range(rows):
            f.write(f"\"{review(rng, i)}\",{'pos' if rng.random() < 0.5 else 'neg'}\n")
    return path


def reply(body: dict) -> str:
    last = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"][-1]
    words = [w.strip(".,") for w in last.split()][-6:]
    return f"{' '.join(words[:2]) or 'it'} | was | {' '.join(words[2:4]) or 'said'}"


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--import-rows", type=int, default=100_000)
    ap.add_argument("--reviews", type=int, default=30_000, help="size of the dataset triples are extracted from")
    ap.add_argument("--candidates", type=int, default=500)
    ap.add_argument("--hz", type=float, default=20.0, help="decisions per second on the GUI thread")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="cb-soak-"))
    project = Project.create(tmp / "soak.cbproj")
    seed_ds = import_file(project, write_csv(tmp / "seed.csv", args.reviews, 1),
                          options=ImportOptions(name="reviews")).dataset
    seed_ids = [int(i) for i in project.example_ids(ExampleQuery(seed_ds.id))]

    def add_candidates(conn: sqlite3.Connection) -> list[int]:
        run = conn.execute("INSERT INTO runs (kind, dataset_id, started_at, status) VALUES ('generate', ?, ?, 'done')",
                           (seed_ds.id, NOW)).lastrowid
        return [conn.execute("INSERT INTO candidates (run_id, example_id, method, target_label, text, status, "
                             "created_at) VALUES (?, ?, 'coba', 'pos', ?, 'proposed', ?)",
                             (run, ex, f"candidate for {ex}", NOW)).lastrowid
                for ex in seed_ids[: args.candidates]]

    candidates = project.writer.run(add_candidates)
    bulk = write_csv(tmp / "bulk.csv", args.import_rows, 2)
    deadline = time.monotonic() + args.seconds
    errors: list[str] = []
    stats = {"imports": 0, "import_rows": 0, "triples_runs": 0, "llm_requests": 0}

    def importer() -> None:
        k = 0
        while time.monotonic() < deadline:
            k += 1
            try:
                result = import_file(project, bulk, options=ImportOptions(name=f"bulk {k}"))
                stats["imports"] += 1
                stats["import_rows"] += result.rows
            except Exception as exc:  # noqa: BLE001 - counted and printed
                errors.append(f"import: {type(exc).__name__}: {exc}")

    server = StubServer(latency=0.05, reply=reply).start()
    config = LLMConfig(backend="openai", model="stub", base_url=server.base_url, max_retries=1, concurrency=8)

    def generator() -> None:
        for start in range(0, len(seed_ids), 200):
            if time.monotonic() >= deadline:
                return
            try:
                extract_triples(project, seed_ds.id, seed_ids[start:start + 200], config)
                stats["triples_runs"] += 1
            except Exception as exc:  # noqa: BLE001 - counted and printed
                errors.append(f"triples: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=importer, name="importer"), threading.Thread(target=generator, name="gen")]
    for t in threads:
        t.start()

    rng = random.Random(3)
    decisions: list[float] = []
    reads: list[float] = []
    last_status: dict[int, str] = {}
    made = 0
    tick = 1.0 / args.hz
    next_tick = time.monotonic()
    while time.monotonic() < deadline:
        cand = rng.choice(candidates)
        status = rng.choice(("accepted", "rejected"))
        t0 = time.perf_counter()
        try:
            set_decision(project, cand, status)
            decisions.append(time.perf_counter() - t0)
            last_status[cand] = status
            made += 1
        except Exception as exc:  # noqa: BLE001 - counted and printed
            errors.append(f"decision: {type(exc).__name__}: {exc}")
        if made % 5 == 0:
            t0 = time.perf_counter()
            try:
                page = rng.sample(seed_ids, 50)
                project.examples(page)
                candidate_rows(project, dataset_id=seed_ds.id)
                reads.append(time.perf_counter() - t0)
            except Exception as exc:  # noqa: BLE001 - counted and printed
                errors.append(f"read: {type(exc).__name__}: {exc}")
        next_tick += tick
        time.sleep(max(0.0, next_tick - time.monotonic()))
    for t in threads:
        t.join()
    stats["llm_requests"] = server.count
    server.close()

    stored = project.db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
    finals = dict(project.db.execute("SELECT id, status FROM candidates WHERE id IN (%s)"
                                     % ",".join(map(str, last_status))).fetchall()) if last_status else {}
    lost = sum(1 for c, s in last_status.items() if finals.get(c) != s)
    integrity = project.db.execute("PRAGMA integrity_check").fetchone()[0]
    locked = sum("locked" in e for e in errors)
    project.close()

    print(f"soak: {args.seconds:.0f} s on {tmp / 'soak.cbproj'}")
    print(f"  importer: {stats['imports']} imports, {stats['import_rows']:,} rows")
    print(f"  generator: {stats['triples_runs']} triples runs, {stats['llm_requests']:,} LLM requests answered")
    print(f"  GUI thread: {made:,} decisions (stored {stored:,}, final status lost {lost}), {len(reads):,} reads")
    print(f"  decision latency ms: p50 {pct(decisions, 50):.1f}  p99 {pct(decisions, 99):.1f}  "
          f"max {max(decisions, default=float('nan')) * 1000:.1f}   (goal p99 < 100)")
    print(f"  read latency ms:     p50 {pct(reads, 50):.1f}  p99 {pct(reads, 99):.1f}  "
          f"max {max(reads, default=float('nan')) * 1000:.1f}")
    print(f"  'database is locked': {locked}; other errors: {len(errors) - locked}; integrity_check: {integrity}")
    for e in errors[:10]:
        print("   ", e)
    ok = not errors and stored == made and lost == 0 and integrity == "ok"
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
