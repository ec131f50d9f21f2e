"""Bias statistics: features, z-statistics (Gardner et al. 2021) and z-filtering (Wu et al. 2022).

Modules
-------
tokenize
    Lower-case, punctuation-free whitespace tokens; fast column tokenizer.
features
    One sparse examples × features count matrix with names and kinds.
zstats
    z-statistics, Bonferroni threshold, biased features per label.
zfilter
    z-filtering (Algorithm 1) and the Z-Aug / Par-Z / Seq-Z presets.
compare
    Δz between two datasets' statistics.
project_io
    The same steps on datasets stored in a project.

The one-text tokenizer is :func:`engine.stats.tokenize.tokenize` (not re-exported here, so
that ``engine.stats.tokenize`` stays the module).
"""

from engine.stats.compare import compare_zstats
from engine.stats.config import StatsConfig
from engine.stats.errors import (
    DatasetMismatchError,
    EmptyDatasetError,
    LabelSetError,
    StatsConfigError,
    StatsError,
)
from engine.stats.features import FeatureConfig, FeatureMatrix, build_features
from engine.stats.names import FeatureNames
from engine.stats.project_io import (
    DatasetTexts,
    ProjectZFilterResult,
    compute_project_stats,
    load_dataset_texts,
    zfilter_project,
)
from engine.stats.tokenize import TokenizedTexts, count_tokens, tokenize_many
from engine.stats.zfilter import (
    BatchRecord,
    PresetResult,
    ZFilterConfig,
    ZFilterResult,
    par_z,
    seq_z,
    z_aug,
    z_filter,
)
from engine.stats.zstats import (
    ZStatsConfig,
    ZStatsResult,
    bonferroni_threshold,
    compute_zstats,
    label_counts,
    significance_curve,
    zstats_from_counts,
)

__all__ = [
    "BatchRecord",
    "DatasetMismatchError",
    "DatasetTexts",
    "EmptyDatasetError",
    "FeatureConfig",
    "FeatureMatrix",
    "FeatureNames",
    "LabelSetError",
    "PresetResult",
    "ProjectZFilterResult",
    "StatsConfig",
    "StatsConfigError",
    "StatsError",
    "TokenizedTexts",
    "ZFilterConfig",
    "ZFilterResult",
    "ZStatsConfig",
    "ZStatsResult",
    "bonferroni_threshold",
    "build_features",
    "compare_zstats",
    "compute_project_stats",
    "compute_zstats",
    "count_tokens",
    "label_counts",
    "load_dataset_texts",
    "par_z",
    "seq_z",
    "significance_curve",
    "tokenize_many",
    "z_aug",
    "z_filter",
    "zfilter_project",
    "zstats_from_counts",
]
