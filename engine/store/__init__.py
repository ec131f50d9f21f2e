"""Project storage: one SQLite file per project, one writer, ordered migrations."""

from engine.store.project import PROJECT_SUFFIX, DatasetInfo, ExampleQuery, Project, insert_dataset
from engine.store.schema import SCHEMA_VERSION
from engine.store.writer import StoreWriter, write_stream

__all__ = [
    "PROJECT_SUFFIX",
    "SCHEMA_VERSION",
    "DatasetInfo",
    "ExampleQuery",
    "Project",
    "StoreWriter",
    "insert_dataset",
    "write_stream",
]
