"""The combined settings of a statistics run (features + z-statistics)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.stats.errors import StatsConfigError
from engine.stats.features import FeatureConfig
from engine.stats.zstats import ZStatsConfig


@dataclass(frozen=True)
class StatsConfig:
    """Feature families and z-statistics settings of one statistics run."""

    features: FeatureConfig = field(default_factory=FeatureConfig)
    zstats: ZStatsConfig = field(default_factory=ZStatsConfig)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings."""
        return {"features": self.features.to_dict(), "zstats": self.zstats.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatsConfig:
        """Settings from :meth:`to_dict` (unknown keys are an error)."""
        unknown = set(data) - {"features", "zstats"}
        if unknown:
            raise StatsConfigError(f"Unknown statistics settings {sorted(unknown)}.", "Use 'features' and 'zstats'.")
        return cls(
            features=FeatureConfig.from_dict(data.get("features", {})),
            zstats=ZStatsConfig.from_dict(data.get("zstats", {})),
        )
