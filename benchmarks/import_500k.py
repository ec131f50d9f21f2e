"""Import 500k rows: rows/s and peak memory, streamed import vs a load-everything baseline.

Generates a 500k-row TSV by sampling GLUE SST-2 train phrases with replacement (seeded) from
``../shared/data/sst2_glue/train.tsv.gz`` and imports it into a fresh project, each variant in
its own process so peak RSS is measured cleanly:

* ``streamed``: :func:`engine.io.import_file` (parse in the caller, write in the single writer
  in slices of about 10 ms, each its own transaction, so other writes run in between);
* ``baseline``: read every row into a list with :mod:`csv`, then ``sqlite_utils`` ``insert_all``
  (the straightforward way, holding the whole file in memory);
* ``probe``: the streamed import on a worker thread while the main thread makes a one-row
  write through the project's writer every 20 ms, as the GUI does for a review decision:
  prints how long those writes took (median, 99th percentile, max).

Times run until the project is closed (its write-ahead log copied into the database file).
``cpu s`` is the process's CPU time (user + system), steadier than wall time on a busy machine.

Usage: ``python benchmarks/import_500k.py [--rows N] [--keep PATH]``. ``--keep`` leaves the
generated project at PATH (used by ``gui_responsiveness.py``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SST2 = REPO.parent / "shared" / "data" / "sst2_glue" / "train.tsv.gz"


def make_tsv(path: Path, rows: int, seed: int = 0) -> None:
    """Write ``rows`` SST-2 phrases sampled with replacement (header ``sentence\\tlabel``)."""
    with gzip.open(SST2, "rt", encoding="utf-8", newline="") as f:
        data = [line.rstrip("\r\n").split("\t") for line in f][1:]
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8", newline="") as out:
        out.write("id\tsentence\tlabel\n")
        for i in range(rows):
            label, sentence = data[rng.randrange(len(data))]
            out.write(f"s{i}\t{sentence}\t{label}\n")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def probe_writes(project, tsv: Path) -> tuple[int, list[float]]:
    """Import ``tsv`` on a worker thread; meanwhile time a one-row write every 20 ms."""
    from engine.io import ReadOptions, import_file

    def touch(conn, i: int) -> None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('probe', ?)", (str(i),))

    result: list = []
    worker = threading.Thread(
        target=lambda: result.append(import_file(project, tsv, read_options=ReadOptions(quoting="none")))
    )
    worker.start()
    waits = []
    while worker.is_alive():
        started = time.perf_counter()
        project.writer.run(touch, len(waits))
        waits.append(time.perf_counter() - started)
        time.sleep(0.02)
    worker.join()
    return result[0].rows, waits


def run_variant(variant: str, tsv: Path, project_path: Path) -> dict:
    sys.path.insert(0, str(REPO))
    from engine.io import ReadOptions, import_file
    from engine.store import Project

    project = Project.create(project_path)
    start, cpu = time.perf_counter(), cpu_seconds()
    extra = {}
    if variant == "streamed":
        result = import_file(project, tsv, read_options=ReadOptions(quoting="none"))
        rows = result.rows
    elif variant == "probe":
        rows, waits = probe_writes(project, tsv)
        waits.sort()
        extra = {"writes": len(waits), "median_ms": 1000 * statistics.median(waits),
                 "p99_ms": 1000 * waits[int(0.99 * (len(waits) - 1))], "max_ms": 1000 * waits[-1]}
    else:
        import sqlite_utils

        with open(tsv, encoding="utf-8", newline="") as f:
            records = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        db = sqlite_utils.Database(str(project_path) + ".baseline.db")
        db["examples"].insert_all(
            ({"ext_id": r["id"], "text": r["sentence"], "label": r["label"]} for r in records), batch_size=5000
        )
        rows = db["examples"].count
    project.close()  # counted: the last write-ahead-log checkpoint is part of the import's work
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return {"variant": variant, "rows": rows, "seconds": seconds, "cpu_s": cpu, "rows_per_s": rows / seconds,
            "peak_rss_mb": peak_rss_mb(), **extra}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--keep", type=Path, help="keep the streamed project at this path")
    parser.add_argument("--variant", help=argparse.SUPPRESS)
    parser.add_argument("--tsv", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.tsv, args.project)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        tsv = tmp / "sst2_500k.tsv"
        t = time.perf_counter()
        make_tsv(tsv, args.rows)
        print(f"generated {args.rows:,} rows ({tsv.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t:.1f} s")
        results = {}
        for variant in ("streamed", "baseline", "probe"):
            out = subprocess.run(
                [sys.executable, __file__, "--variant", variant, "--tsv", str(tsv), "--project", str(tmp / f"{variant}.cbproj")],
                capture_output=True, text=True, check=True,
            )
            results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{'variant':<10} {'rows':>9} {'seconds':>8} {'cpu s':>7} {'rows/s':>10} {'peak RSS MB':>12}")
        for r in results.values():
            print(f"{r['variant']:<10} {r['rows']:>9,} {r['seconds']:>8.2f} {r['cpu_s']:>7.2f} "
                  f"{r['rows_per_s']:>10,.0f} {r['peak_rss_mb']:>12.0f}")
        s, b, p = results["streamed"], results["baseline"], results["probe"]
        print(f"streamed vs baseline: speed x{s['rows_per_s'] / b['rows_per_s']:.2f}, "
              f"peak RSS x{s['peak_rss_mb'] / b['peak_rss_mb']:.2f} (lower is better)")
        print(f"one-row writes during the streamed import ({p['writes']}): median {p['median_ms']:.1f} ms, "
              f"p99 {p['p99_ms']:.1f} ms, max {p['max_ms']:.1f} ms")
        if args.keep:
            shutil.copy(tmp / "streamed.cbproj", args.keep)
            print(f"kept the project at {args.keep}")


if __name__ == "__main__":
    main()
