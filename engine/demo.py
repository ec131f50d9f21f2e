"""The bundled demo project: CAD sentiment (train + dev), imported from ``resources/demo``."""

from __future__ import annotations

from pathlib import Path

import resources
from engine.io import ImportOptions, import_file
from engine.paths import user_data_dir
from engine.progress import CancelToken, ProgressFn, no_progress, scaled
from engine.store import Project

DEMO_DATASET = "CAD sentiment (demo)"
DEMO_FILES = (("cad_sentiment_train.tsv.gz", "train"), ("cad_sentiment_dev.tsv.gz", "dev"))


def default_demo_path() -> Path:
    """Where the demo project is created when no path is given."""
    return user_data_dir() / "demo.cbproj"


def ensure_demo_project(
    path: str | Path | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> Path:
    """Create the demo project at ``path`` unless it already holds the demo dataset.

    Returns
    -------
    Path
        The project file.
    """
    path = Path(path) if path else default_demo_path()
    project = Project.open(path) if path.exists() else Project.create(path)
    try:
        if any(d.name == DEMO_DATASET for d in project.datasets()):
            return path
        dataset_id = None
        for i, (name, split) in enumerate(DEMO_FILES):
            result = import_file(
                project,
                resources.path("demo", name),
                options=ImportOptions(name=DEMO_DATASET, split=split, append_to=dataset_id),
                progress=scaled(progress, i / len(DEMO_FILES), (i + 1) / len(DEMO_FILES)),
                cancel=cancel,
            )
            dataset_id = result.dataset.id
    finally:
        project.close()
    return path
