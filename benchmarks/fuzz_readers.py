"""Property-based fuzzing of the input readers: no input file may raise anything but a named error.

Hypothesis generates input files — random bytes, and valid CSV/TSV/JSONL files (plain or
gzip) mutated by byte flips, insertions of hostile fragments (NUL, quotes, BOMs, lone
surrogate escapes, 5,000-digit numbers, deep nesting, NaN), deletions and truncation —
and each goes through the import wizard's path (:func:`engine.io.preview_file`) and a real
import into a real SQLite project (:func:`engine.io.import_file`). A case *passes* when it
imports or fails with a :class:`~engine.errors.CounterbiasError`, and a failed import
leaves the project unchanged (digest of every table). Anything else is counted by type.

Prints cases tried / passed (imported, named errors by code) / failures by type, and exits
1 if there was any failure.

Usage: ``python benchmarks/fuzz_readers.py [--cases 10000] [--seed 0] [--save-failures DIR]``
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))  # run the checkout's engine, not an installed one

SUFFIXES = (".csv", ".tsv", ".jsonl", ".txt", ".csv.gz", ".tsv.gz", ".jsonl.gz", ".json")

HOSTILE = (
    b"\x00", b'"', b'""', b",", b"\t", b"\r", b"\n", b"\r\n", b"\xff", b"\xfe\xff", b"\xef\xbb\xbf",
    b"\\ud800", b'"\\udfff"', b"NaN", b"Infinity", b"-Infinity", b"1e999", b"9" * 5000, b"[" * 3000,
    b"{" * 3000, b"\xe2\x80\x8b", b"\xe2\x80\xae", b"\xc3", b"\x80", b"PK\x03\x04", b"\x1f\x8b",
    b"text", b"label", b"null", b"true", b"{}", b"[]", b'{"a": 1}', "é".encode("latin-1"),
)

_words = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=30),
    st.sampled_from(["a fine film", "dull", "crème brûlée", "naïve", "日本語の文", "x\x00y", "=1+2", "'quoted'"] * 5
                    + ["", " "]),
)
_labels = st.sampled_from(["pos", "neg"] * 10 + ["neutral", "0", "1", "pos\u200b", "\u202eneg", "", " ", "NaN",
                                                "é", "e\u0301"])


def _table(fmt: str, header: list[str], rows: list[list[str]]) -> bytes:
    """A valid file of ``fmt`` holding ``rows`` under ``header``."""
    if fmt == "jsonl":
        return "".join(json.dumps(dict(zip(header, r))) + "\n" for r in rows).encode("utf-8")
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


@st.composite
def valid_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid CSV/TSV/JSONL file with a detected header, before mutation."""
    fmt = draw(st.sampled_from(["csv", "tsv", "jsonl"]))
    header = draw(st.sampled_from([
        ["text", "label"], ["text", "label"], ["id", "text", "label"], ["sentence1", "sentence2", "gold_label"],
        ["review", "sentiment", "split"], ["label", "text", "id"], ["text", "text", "label"],
        ["text", "label", "label"],
    ]))
    n = draw(st.integers(2, 12))
    rows = []
    for _ in range(n):
        rows.append([draw(_labels) if h in ("label", "gold_label", "sentiment") else
                     draw(st.sampled_from(["1", "2", "a"])) if h == "id" else
                     draw(st.sampled_from(["train", "dev", ""])) if h == "split" else draw(_words)
                     for h in header])
    suffix = {"csv": ".csv", "tsv": ".tsv", "jsonl": ".jsonl"}[fmt]
    return suffix, _table(fmt, header, rows)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with a few random edits."""
    out = bytearray(data)
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3, 4]))):
        kind = draw(st.sampled_from(["flip", "insert", "hostile", "delete", "truncate", "dup"]))
        pos = draw(st.integers(0, max(len(out), 0)))
        if kind == "flip" and out:
            i = min(pos, len(out) - 1)
            out[i] = draw(st.integers(0, 255))
        elif kind == "insert":
            out[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "hostile":
            out[pos:pos] = draw(st.sampled_from(HOSTILE))
        elif kind == "delete":
            del out[pos:pos + draw(st.integers(1, 16))]
        elif kind == "truncate":
            del out[pos:]
        elif kind == "dup" and out:
            line_end = out.find(b"\n", pos)
            if line_end > 0:
                start = out.rfind(b"\n", 0, pos) + 1
                out[line_end + 1:line_end + 1] = out[start:line_end + 1]
    return bytes(out)


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, bytes]:
    """``(file name suffix, bytes on disk)`` for one fuzz case."""
    kind = draw(st.sampled_from(["random", "mutated", "mutated", "mutated", "mutated-gz", "gz-mutated"]))
    if kind == "random":
        return draw(st.sampled_from(SUFFIXES)), draw(st.binary(max_size=600))
    suffix, data = draw(valid_files())
    if kind == "mutated":
        return suffix, draw(mutated(data))
    if kind == "mutated-gz":  # mutate the text, then compress
        return suffix + ".gz", gzip.compress(draw(mutated(data)), mtime=0)
    packed = gzip.compress(data, mtime=0)
    if draw(st.booleans()):  # damage only the end: truncation or a bad checksum/length trailer
        cut = draw(st.integers(1, 12))
        return suffix + ".gz", packed[:-cut] + draw(st.binary(max_size=cut))
    return suffix + ".gz", draw(mutated(packed))  # mutate the compressed bytes anywhere


def digest(project) -> str:
    """A digest of every row of every table: equal digests mean an unchanged project."""
    h = hashlib.sha256()
    for table in sorted(project.db.table_names()):
        for row in project.db.execute(f"SELECT * FROM [{table}] ORDER BY 1"):
            h.update(repr(row).encode())
    return h.hexdigest()


@dataclass
class Tally:
    """Outcomes of the cases run so far."""

    tried: int = 0
    imported: int = 0
    named: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> int:
        return self.imported + sum(self.named.values())


def run_case(project, folder: Path, n: int, suffix: str, data: bytes) -> tuple[str, str | None]:
    """Import one case; ``("imported"|"named:CBxxx"|"failure:Type", traceback or None)``."""
    from engine.errors import CounterbiasError
    from engine.io import ImportOptions, import_file, preview_file

    path = folder / f"case{n}{suffix}"
    path.write_bytes(data)
    try:
        try:
            preview_file(path)
        except CounterbiasError:
            pass
        before = digest(project)
        try:
            import_file(project, path, options=ImportOptions(name=f"case {n}"))
            return "imported", None
        except CounterbiasError as exc:
            if digest(project) != before:
                return "failure:ProjectChanged", f"{exc.code}: project changed after a refused import"
            if not exc.hint:
                return "failure:NoHint", str(exc)
            return f"named:{exc.code}", None
    except Exception as exc:  # noqa: BLE001 - counting them is the point
        return f"failure:{type(exc).__name__}", traceback.format_exc()
    finally:
        path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-project", type=int, default=250, help="cases per fresh project")
    parser.add_argument("--save-failures", type=Path, help="write failing inputs here")
    args = parser.parse_args(argv)

    from engine.store import Project

    tally = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        state: dict = {"project": None}

        def project():
            if state["project"] is None or tally.tried % args.per_project == 0:
                if state["project"] is not None:
                    state["project"].close()
                state["project"] = Project.create(folder / f"fuzz{tally.tried}.cbproj")
            return state["project"]

        @seed(args.seed)
        @settings(max_examples=args.cases, deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(cases())
        def fuzz(case: tuple[str, bytes]) -> None:
            suffix, data = case
            outcome, detail = run_case(project(), folder, tally.tried, suffix, data)
            tally.tried += 1
            if outcome == "imported":
                tally.imported += 1
            elif outcome.startswith("named:"):
                tally.named[outcome[6:]] += 1
            else:
                kind = outcome[8:]
                tally.failures[kind] += 1
                tally.examples.setdefault(kind, detail or "")
                if args.save_failures:
                    args.save_failures.mkdir(parents=True, exist_ok=True)
                    (args.save_failures / f"{kind}-{tally.tried}{suffix}").write_bytes(data)
            if tally.tried % 1000 == 0:
                print(f"  {tally.tried:,} cases, {time.perf_counter() - started:.0f} s", file=sys.stderr)

        fuzz()
        if state["project"] is not None:
            state["project"].close()

    seconds = time.perf_counter() - started
    print(f"cases tried: {tally.tried:,}")
    print(f"passed: {tally.passed:,} (imported {tally.imported:,}, refused with a named error "
          f"{sum(tally.named.values()):,})")
    print("named errors by code: " + ", ".join(f"{c} {n:,}" for c, n in sorted(tally.named.items())))
    print(f"failures (unhandled exceptions or a changed project): {sum(tally.failures.values()):,}"
          + ("" if not tally.failures else " — " + ", ".join(f"{k} {n:,}" for k, n in tally.failures.items())))
    for kind, detail in tally.examples.items():
        print(f"--- first {kind}:\n{detail}")
    print(f"time: {seconds:.0f} s ({seconds / max(tally.tried, 1) * 1000:.1f} ms per case)")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
