"""Import (CSV, TSV, JSONL, optionally gzip) and export (CSV, JSONL) of datasets."""

from engine.io.checks import DataWarning
from engine.io.escaping import escape_cell, unescape_cell
from engine.io.exporter import ExportResult, export_dataset
from engine.io.importer import ImportOptions, ImportResult, Preview, import_file, preview_file
from engine.io.mapping import ColumnMapping, detect_mapping
from engine.io.readers import ReadOptions

__all__ = [
    "ColumnMapping",
    "DataWarning",
    "ExportResult",
    "ImportOptions",
    "ImportResult",
    "Preview",
    "ReadOptions",
    "detect_mapping",
    "escape_cell",
    "export_dataset",
    "import_file",
    "preview_file",
    "unescape_cell",
]
