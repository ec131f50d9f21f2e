"""Z-Aug, Par-Z and Seq-Z (Wu et al. 2022) over stored datasets, saved as a new version."""

from __future__ import annotations

from typing import Any

from engine.errors import CounterbiasError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.stats.features import FeatureConfig
from engine.stats.project_io import (
    _check_compatible,
    _concat,
    _relabel,
    features_of,
    load_dataset_texts,
)
from engine.stats.zfilter import PresetResult, ZFilterConfig, par_z, seq_z, z_aug
from engine.store import DatasetInfo, Project

PRESETS = {"z-aug": z_aug, "par-z": par_z, "seq-z": seq_z}


class UnknownPresetError(CounterbiasError):
    code = "CB405"


def zfilter_preset_project(
    project: Project,
    preset: str,
    original_id: int,
    augmented_id: int,
    config: ZFilterConfig | None = None,
    *,
    features: FeatureConfig | None = None,
    name: str | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> tuple[DatasetInfo, PresetResult]:
    """Build ``D0 ∪ Z(D′|D0)`` (Z-Aug), ``Z(D0) ∪ Z(D′)`` (Par-Z) or ``Z(D′|Z(D0))`` (Seq-Z).

    Parameters
    ----------
    project
        The open project.
    preset
        ``"z-aug"``, ``"par-z"`` or ``"seq-z"``.
    original_id, augmented_id
        ``D0`` (e.g. the original data) and ``D′`` (e.g. its augmentation); same task and labels.
    config, features
        z-filter and feature settings.
    name
        Name of the new version (default ``"<D0> + <D′> (<preset>)"``).
    progress, cancel
        Progress callback and cancel token (nothing is written if cancelled).

    Returns
    -------
    (DatasetInfo, PresetResult)
        The saved version (child of ``D0``; rows of ``D0`` first) and the filtering details.
    """
    key = preset.lower()
    if key not in PRESETS:
        raise UnknownPresetError(f"Unknown preset {preset!r}.", f"Use one of: {', '.join(PRESETS)}.")
    config = config or ZFilterConfig()
    features = features or FeatureConfig()
    token = ensure_token(cancel)
    if name is not None:
        project.check_name_free(name)
    original = load_dataset_texts(project, original_id, progress=scaled(progress, 0, 0.1), cancel=token)
    augmented = load_dataset_texts(project, augmented_id, progress=scaled(progress, 0.1, 0.2), cancel=token)
    _check_compatible(original, augmented)
    original = _relabel(original, augmented.labels)
    matrix = features_of(_concat(original, augmented), features, progress=scaled(progress, 0.2, 0.5), cancel=token)
    n0 = len(original)
    result = PRESETS[key](
        matrix.rows(slice(0, n0)), original.y, matrix.rows(slice(n0, None)), augmented.y, augmented.labels,
        config, progress=scaled(progress, 0.5, 0.95), cancel=token,
    )
    token.raise_if_cancelled()
    ids = original.example_ids[result.original].tolist() + augmented.example_ids[result.augmented].tolist()
    params: dict[str, Any] = {
        "method": f"z-filter preset {result.preset}",
        "original": original_id,
        "augmented": augmented_id,
        "kept_original": len(result.original),
        "kept_augmented": len(result.augmented),
        "accepted": len(ids),
        "rejected": n0 + len(augmented) - len(ids),
        "settings": {"zfilter": config.to_dict(), "features": features.to_dict()},
    }
    label = f"{original.dataset.name} + {augmented.dataset.name} ({result.preset})"
    info = project.add_derived_dataset(
        name or project.unique_dataset_name(label), kind="filtered", parent_id=original_id,
        example_ids=ids, params=params,
    )
    progress(1.0, f"{result.preset}: kept {len(ids):,} rows")
    return info, result
