"""CLI verbs for projects and data: ``init``, ``import``, ``info``, ``export`` and ``demo``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engine.cli.args import DATASET, JSON, PROJECT
from engine.cli.commands import command
from engine.cli.progress import StderrProgress
from engine.errors import EXIT_OK
from engine.progress import CancelToken


@command("init")
def _add_init(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", parents=[PROJECT], help="create a new, empty project file")
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
        parents=[PROJECT],
        help="import a CSV/TSV/JSONL file (optionally .gz) as a dataset",
        description="Import a labelled text file. Columns are detected from common names "
        "(text/sentence/review, premise/hypothesis/sentence1/sentence2, label/sentiment/gold_label, "
        "id, split) unless given. On any error, a cancel or a kill nothing of the import is kept.",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--name", help="dataset name (default: folder-file, e.g. sst2-train for sst2/train.tsv); no '/', "
                                  "'\\' or control characters, not only digits")
    p.add_argument("--append-to", metavar="DATASET", help="add the rows to this existing dataset (id or name)")
    p.add_argument("--split", default="train", help="split for rows without a split column (default: train)")
    g = p.add_argument_group("column mapping")
    for role in ("text", "premise", "hypothesis", "label", "id"):
        g.add_argument(f"--{role}-col", dest=f"{role}_col", metavar="COLUMN")
    g.add_argument("--split-col", dest="split_col", metavar="COLUMN")
    r = p.add_argument_group("reading")
    r.add_argument("--format", default="auto", choices=["auto", "csv", "tsv", "jsonl"])
    r.add_argument("--delimiter", help="field separator (default: from the extension); use tab (or $'\\t') for a tab")
    r.add_argument("--quoting", default="csv", choices=["csv", "none"],
                   help="'none' when quotes are plain text (e.g. GLUE SST-2 TSVs)")
    r.add_argument("--encoding", default="utf-8")
    r.add_argument("--max-cell-chars", type=int, default=50_000)
    r.add_argument("--skip-empty-text", action="store_true", help="skip rows whose text is empty")
    r.add_argument("--skip-missing-labels", action="store_true", help="skip rows without a label")
    r.add_argument("--labels", default="",
                   help="comma-separated label set of a new dataset whose file holds only some labels (e.g. "
                        "counterfactuals that all flip to one label)")
    p.set_defaults(run=_run_import)


def _run_import(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.io import ColumnMapping, ImportOptions, ReadOptions, detect_mapping, import_file
    from engine.io.importer import check_unambiguous
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
            header_info = reader.header_info
        if given["premise"] or given["hypothesis"] or given["text"]:
            for role in ("text", "premise", "hypothesis"):
                detected[role] = None
        mapping = ColumnMapping(**{r: given[r] or detected[r] for r in given})
        # Roles filled by detection must not land on a repeated column name (text,text,label).
        check_unambiguous(mapping, header_info, args.file.name, tuple(r for r in given if not given[r]))
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
                labels=tuple(x.strip() for x in args.labels.split(",") if x.strip()),
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
                "warnings": [w.as_dict() for w in result.warnings],
            },
            indent=2,
        )
    )
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return EXIT_OK


@command("info")
def _add_info(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("info", parents=[PROJECT, JSON], help="show a project's datasets, labels and table sizes")
    p.set_defaults(run=_run_info)


def _run_info(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.store import Project
    from engine.store.names import shown

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
    # Names and labels are printed with control characters escaped (a terminal would run them).
    print(f"{shown(info['project'])} (schema {info['schema_version']})")
    if not datasets:
        print("  no datasets yet: use 'import'")
    for d in datasets:
        labels = ", ".join(f"{shown(str(k))} {v:,}" for k, v in d["labels"].items())
        print(f"  [{d['id']}] {shown(d['name'])}  {d['kind']} {d['task']}  {d['rows']:,} rows  ({labels})")
    return EXIT_OK


@command("export")
def _add_export(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", parents=[DATASET],
                       help="write a dataset version as CSV or JSONL with provenance columns")
    p.add_argument("out", type=Path, help="output .csv or .jsonl")
    p.add_argument("--format", choices=["csv", "jsonl"], help="default: from the extension")
    p.add_argument("--csv-style", choices=["spreadsheet", "raw"], default="spreadsheet",
                   help="'spreadsheet' (default): cells starting with = + - @ get a leading ' so that Excel or "
                   "LibreOffice shows them as text, and a UTF-8 byte-order mark; 'raw': values exactly as "
                   "stored, for programs (pandas, R) -- do not open a raw file in a spreadsheet")
    p.add_argument("--no-bom", action="store_true", help="no UTF-8 byte-order mark at the start of a CSV")
    p.add_argument("--follow-symlink", action="store_true",
                   help="when OUT is a symbolic link, replace the file it points to (the link stays); "
                   "without it a link is refused")
    p.set_defaults(run=_run_export)


def _run_export(args: argparse.Namespace, progress: StderrProgress, cancel: CancelToken) -> int:
    from engine.io import export_dataset
    from engine.store import Project

    with Project.open(args.project) as project:
        result = export_dataset(
            project, args.dataset, args.out, format=args.format, csv_style=args.csv_style,
            bom=False if args.no_bom else None, follow_symlinks=args.follow_symlink, progress=progress,
            cancel=cancel,
        )
    print(result.describe())
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
