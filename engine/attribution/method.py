"""What a word-attribution method is: its settings, its interface and the settings' cache key.

A method is a class with a frozen :class:`MethodSettings` dataclass and a
:meth:`AttributionMethod.group_scores` that, for an :class:`~engine.attribution.batch.EncodedBatch`,
returns one score per word group of every example. Configurations store the method *name*
(see :mod:`engine.attribution.registry`) and its settings as JSON; :func:`settings_key` is the
stable hash used as the cache key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, ClassVar

from engine.attribution.errors import MethodSettingsError

__all__ = ["ALGORITHM_VERSION", "BUDGETS", "AttributionMethod", "MethodSettings", "default_budget", "settings_key"]

#: Bumped when a change to the shared code (alignment, baseline) changes stored scores.
ALGORITHM_VERSION = 1

#: Compute budgets: ``"full"`` (the fixed sizes of CoBA's set-up) and ``"fast"`` (LIME and Shapley
#: samples sized to the number of words, IG with 16 nodes placed where the output changes). A
#: settings object left to itself is ``"full"`` (its cache key is the one stored before budgets
#: existed); settings resolved by method name without a budget get :func:`default_budget`.
BUDGETS = ("fast", "full")


def default_budget(*, import_torch: bool = True) -> str:
    """The budget of an explanation whose budget nobody chose: ``"fast"`` on a CPU, ``"full"`` with a GPU.

    On a CPU the full budget is what makes explaining slow (``benchmarks/explain_cost.py``); on a
    GPU it costs little. ``import_torch``: see :func:`engine.models.device.has_gpu`.
    """
    from engine.models.device import has_gpu

    return "full" if has_gpu(import_torch=import_torch) else "fast"


@dataclasses.dataclass(frozen=True)
class MethodSettings:
    """Base of every method's settings.

    Parameters
    ----------
    output
        Explain the target's softmax probability (``"prob"``) or its logit (``"logit"``).
    budget
        ``"full"`` (default) or ``"fast"`` (see :data:`BUDGETS` and each method). Part of the
        cache key, so results of the two budgets are never mixed; a ``"full"`` key equals the
        key the same settings had before budgets existed.
    """

    output: str = "prob"
    budget: str = "full"

    #: Fields that only change speed or memory, not the scores; left out of the cache key.
    PERFORMANCE_FIELDS: ClassVar[frozenset[str]] = frozenset()
    #: Fields only the ``"fast"`` budget reads; left out of the cache key of ``"full"``.
    FAST_FIELDS: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        if self.output not in ("prob", "logit"):
            raise MethodSettingsError(f"Unknown output {self.output!r}.", "Use 'prob' or 'logit'.")
        if self.budget not in BUDGETS:
            raise MethodSettingsError(f"Unknown budget {self.budget!r}.", f"Use one of: {', '.join(BUDGETS)}.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def resolved(self) -> MethodSettings:
        """These settings with every ``None`` ("follow the budget") field filled in."""
        return self

    def identity(self) -> dict[str, Any]:
        """The settings that change the scores (resolved; ``budget`` and the fast-only fields left out when ``"full"``)."""
        out = {k: v for k, v in self.resolved().to_dict().items() if k not in self.PERFORMANCE_FIELDS}
        if out.get("budget") == "full":
            for k in ("budget", *self.FAST_FIELDS):
                out.pop(k, None)
        return out


class AttributionMethod:
    """A word-attribution method (see :mod:`engine.attribution.ig` for an example)."""

    #: Registry name, set by :func:`engine.attribution.registry.register_method`.
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Settings: ClassVar[type[MethodSettings]] = MethodSettings
    #: Whether the method returns IG-style convergence deltas.
    has_delta: ClassVar[bool] = False

    def group_scores(self, forward: Any, batch: Any, targets: Any, settings: Any, *, seed_ids: list[int]) -> tuple[list[Any], list[float] | None]:
        """Scores per word group for every example of ``batch``.

        Parameters
        ----------
        forward
            :class:`~engine.attribution.forward.ClassifierForward`.
        batch
            :class:`~engine.attribution.batch.EncodedBatch`.
        targets
            ``(B,)`` long tensor of class indices to explain.
        settings
            An instance of :attr:`Settings`.
        seed_ids
            One integer per example (its id) for per-example random seeds.

        Returns
        -------
        scores, deltas
            ``scores[i]`` is a ``(batch.n_groups[i],)`` array; ``deltas`` (IG only) are the
            completeness errors ``sum(attributions) - (f(x) - f(baseline))``.
        """
        raise NotImplementedError


def settings_key(method: str, settings: MethodSettings, *, target: str, max_length: int) -> str:
    """Stable 16-hex-digit hash of everything that determines stored scores.

    Covers the method name, its score-changing settings, the target rule, the truncation
    length and :data:`ALGORITHM_VERSION`; not batch sizes or other performance options.
    """
    payload = {
        "v": ALGORITHM_VERSION,
        "method": method,
        "settings": settings.identity(),
        "target": target,
        "max_length": int(max_length),
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]
