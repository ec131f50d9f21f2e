"""Headless command line: every step the GUI runs, for scripts and large datasets.

Run ``python -m engine --help`` (or the ``counterbias`` console script).

Exit codes
----------
0  success
1  internal error (a bug: please report it with the traceback)
2  usage error (bad arguments)
3  the input or project is not usable; the message says what to do
130 cancelled (Ctrl+C)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from engine import __version__
from engine.errors import (
    EXIT_CANCELLED,
    EXIT_INTERNAL_ERROR,
    EXIT_OK,
    EXIT_USER_ERROR,
    Cancelled,
    CounterbiasError,
)
from engine.progress import CancelToken

EPILOG = """exit codes: 0 success, 1 internal error, 2 usage error, 3 unusable input or project
(the message says what to do), 130 cancelled.  Progress goes to stderr, results to stdout."""

#: Sub-command registry: later steps (stats, train, generate, ...) add themselves here.
COMMANDS: dict[str, Callable[[argparse._SubParsersAction], None]] = {}
#: Modules whose import registers more sub-commands (their heavy imports stay inside the commands).
COMMAND_MODULES = ("engine.cli_stats", "engine.cli_models", "engine.cli_llm", "engine.cli_generate")


def command(name: str) -> Callable[[Callable[[argparse._SubParsersAction], None]], Callable]:
    """Register a function that adds sub-command ``name`` to the parser."""

    def register(fn: Callable[[argparse._SubParsersAction], None]) -> Callable:
        COMMANDS[name] = fn
        return fn

    return register


class StderrProgress:
    """A ``progress(fraction, message)`` callback printing a throttled line to stderr."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False, interval: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.interval = interval
        self._last = 0.0
        self._tty = self.stream.isatty()

    def __call__(self, fraction: float, message: str = "") -> None:
        if self.quiet:
            return
        t = time.monotonic()
        if fraction < 1.0 and t - self._last < self.interval:
            return
        self._last = t
        line = f"[{fraction * 100:5.1f}%] {message}"
        if self._tty:
            self.stream.write("\r" + line.ljust(79)[:79] + ("\n" if fraction >= 1.0 else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


# ---------------------------------------------------------------------------- commands


@command("init")
def _add_init(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="create a new, empty project file")
    p.add_argument("project", type=Path, help="project file to create (.cbproj)")
    p.set_defaults(run=_run_init)


def _run_init(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.store import Project

    with Project.create(args.project):
        pass
    print(f"created {args.project}")
    return EXIT_OK


@command("import")
def _add_import(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="import a CSV/TSV/JSONL file (optionally .gz) as a dataset",
        description="Import a labelled text file. Columns are detected from common names "
        "(text/sentence/review, premise/hypothesis/sentence1/sentence2, label/sentiment/gold_label, "
        "id, split) unless given. The import is one transaction: on any error nothing is written.",
    )
    p.add_argument("project", type=Path)
    p.add_argument("file", type=Path)
    p.add_argument("--name", help="dataset name (default: folder/file name)")
    p.add_argument("--append-to", metavar="DATASET", help="add the rows to this existing dataset (id or name)")
    p.add_argument("--split", default="train", help="split for rows without a split column (default: train)")
    g = p.add_argument_group("column mapping")
    for role in ("text", "premise", "hypothesis", "label", "id"):
        g.add_argument(f"--{role}-col", dest=f"{role}_col", metavar="COLUMN")
    g.add_argument("--split-col", dest="split_col", metavar="COLUMN")
    r = p.add_argument_group("reading")
    r.add_argument("--format", default="auto", choices=["auto", "csv", "tsv", "jsonl"])
    r.add_argument("--delimiter", help="field separator (default: from the extension); use $'\\t' for tab")
    r.add_argument("--quoting", default="csv", choices=["csv", "none"],
                   help="'none' when quotes are plain text (e.g. GLUE SST-2 TSVs)")
    r.add_argument("--encoding", default="utf-8")
    r.add_argument("--max-cell-chars", type=int, default=50_000)
    r.add_argument("--skip-empty-text", action="store_true", help="skip rows whose text is empty")
    r.add_argument("--skip-missing-labels", action="store_true", help="skip rows without a label")
    p.set_defaults(run=_run_import)


def _run_import(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.io import ColumnMapping, ImportOptions, ReadOptions, detect_mapping, import_file
    from engine.io.readers import TableReader
    from engine.store import Project

    read = ReadOptions(
        format=args.format,
        delimiter=args.delimiter,
        quoting=args.quoting,
        encoding=args.encoding,
        max_cell_chars=args.max_cell_chars,
    )
    given = {r: getattr(args, f"{r}_col") for r in ("text", "premise", "hypothesis", "label", "id", "split")}
    mapping = None
    if any(given.values()):
        with TableReader(args.file, read) as reader:
            detected = detect_mapping(reader.header).as_dict()
        if given["premise"] or given["hypothesis"] or given["text"]:
            for role in ("text", "premise", "hypothesis"):
                detected[role] = None
        mapping = ColumnMapping(**{r: given[r] or detected[r] for r in given})
    with Project.open(args.project) as project:
        append_to = project.dataset(args.append_to).id if args.append_to else None
        result = import_file(
            project,
            args.file,
            mapping,
            read,
            ImportOptions(
                name=args.name,
                split=args.split,
                append_to=append_to,
                skip_empty_text=args.skip_empty_text,
                skip_missing_labels=args.skip_missing_labels,
            ),
            progress=progress,
            cancel=cancel,
        )
    print(
        json.dumps(
            {
                "dataset": result.dataset.name,
                "dataset_id": result.dataset.id,
                "task": result.dataset.task,
                "rows": result.rows,
                "labels": result.label_counts,
                "skipped_empty_text": result.skipped_empty_text,
                "skipped_missing_label": result.skipped_missing_label,
                "seconds": round(result.seconds, 2),
            },
            indent=2,
        )
    )
    return EXIT_OK


@command("info")
def _add_info(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", help="show a project's datasets, labels and table sizes")
    p.add_argument("project", type=Path)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=_run_info)


def _run_info(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.store import Project

    with Project.open(args.project) as project:
        datasets = []
        for d in project.datasets():
            datasets.append(
                {
                    "id": d.id,
                    "name": d.name,
                    "kind": d.kind,
                    "parent_id": d.parent_id,
                    "task": d.task,
                    "rows": d.row_count,
                    "labels": project.label_counts(d.id),
                    "splits": {str(k): v for k, v in project.split_counts(d.id).items()},
                }
            )
        info: dict[str, Any] = {
            "project": str(args.project),
            "schema_version": project.schema_version,
            "datasets": datasets,
            "tables": project.counts(),
        }
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    print(f"{info['project']} (schema {info['schema_version']})")
    if not datasets:
        print("  no datasets yet: use 'import'")
    for d in datasets:
        labels = ", ".join(f"{k} {v:,}" for k, v in d["labels"].items())
        print(f"  [{d['id']}] {d['name']}  {d['kind']} {d['task']}  {d['rows']:,} rows  ({labels})")
    return EXIT_OK


@command("export")
def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help="write a dataset version as CSV or JSONL with provenance columns")
    p.add_argument("project", type=Path)
    p.add_argument("dataset", help="dataset id or name")
    p.add_argument("out", type=Path, help="output .csv or .jsonl")
    p.add_argument("--format", choices=["csv", "jsonl"], help="default: from the extension")
    p.add_argument("--no-bom", action="store_true", help="no UTF-8 byte-order mark at the start of a CSV")
    p.set_defaults(run=_run_export)


def _run_export(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.io import export_dataset
    from engine.store import Project

    with Project.open(args.project) as project:
        result = export_dataset(
            project, args.dataset, args.out, format=args.format, bom=not args.no_bom,
            progress=progress, cancel=cancel,
        )
    print(f"wrote {result.rows:,} rows to {result.path}")
    return EXIT_OK


@command("demo")
def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="create the bundled demo project (CAD sentiment sample)")
    p.add_argument("project", type=Path, nargs="?", help="where (default: the user data folder)")
    p.set_defaults(run=_run_demo)


def _run_demo(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.demo import ensure_demo_project

    path = ensure_demo_project(args.project, progress=progress, cancel=cancel)
    print(path)
    return EXIT_OK


# ---------------------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (all registered sub-commands)."""
    parser = argparse.ArgumentParser(
        prog="counterbias",
        description="Counterbias Studio, headless: projects, import/export and every analysis step.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    import importlib

    for module in COMMAND_MODULES:
        importlib.import_module(module)
    for add in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = StderrProgress(quiet=args.quiet)
    cancel = CancelToken()
    try:
        return int(args.run(args, progress, cancel))
    except CounterbiasError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (Cancelled, KeyboardInterrupt):
        print("cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except Exception:  # a bug: show everything
        import traceback

        traceback.print_exc()
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
