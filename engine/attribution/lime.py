"""LIME with one interpretable feature per canonical word (group), via ``captum.attr.Lime``.

Each sample switches a random subset of words off (their tokens become ``[PAD]``, the same
baseline as IG); special tokens are never switched (they are outside the feature mask, see
:mod:`engine.attribution.batch`). Samples are weighted like the original LIME for text: an
exponential kernel on the cosine distance between the kept-words vector and the all-ones
vector (distance x 100, kernel width 25). The surrogate is a weighted ridge regression
(:class:`~engine.attribution.surrogate.WeightedRidge`); its coefficients are the word scores.

Captum explains one example per surrogate, so examples are processed one by one
(:func:`engine.attribution.sampling.per_example_scores`, shared with KernelSHAP); each
example's sampling is seeded from ``seed`` and its example id, so scores do not depend on
which other examples were computed with it.

``budget="fast"`` (the default without a GPU, see :func:`~engine.attribution.method.default_budget`) draws the same kind of samples in batched forward passes
(:func:`engine.attribution.perturb.fast_lime`, plus the unperturbed input) and sizes them to the
example: ``samples_per_word`` per word, at least 64 and at most ``num_samples`` (200).
``budget="full"`` is captum's ``Lime`` with ``num_samples`` samples.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from engine.attribution.errors import MethodSettingsError
from engine.attribution.method import AttributionMethod, MethodSettings
from engine.attribution.registry import register_method
from engine.attribution.perturb import fast_lime, lime_sample_count
from engine.attribution.sampling import example_seed, per_example_scores

__all__ = ["LimeSettings", "LimeText"]


@dataclasses.dataclass(frozen=True)
class LimeSettings(MethodSettings):
    """Settings of :class:`LimeText`.

    Parameters
    ----------
    num_samples
        Perturbed samples per example (default 200; with ``budget="fast"`` the most).
    samples_per_word
        ``budget="fast"``: samples per word of the example (at least :attr:`MIN_SAMPLES`).
    kernel_width
        LIME's text kernel width (on 100 x cosine distance; default 25).
    alpha
        Ridge penalty of the surrogate.
    seed
        Base random seed.
    perturbations_per_eval
        Samples scored per forward pass.
    """

    num_samples: int = 200
    kernel_width: float = 25.0
    alpha: float = 1.0
    seed: int = 0
    perturbations_per_eval: int = 32
    samples_per_word: float = 1.0

    PERFORMANCE_FIELDS: ClassVar[frozenset[str]] = frozenset({"perturbations_per_eval"})
    FAST_FIELDS: ClassVar[frozenset[str]] = frozenset({"samples_per_word"})
    MIN_SAMPLES: ClassVar[int] = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_samples < 2:
            raise MethodSettingsError(f"num_samples must be at least 2, got {self.num_samples}.", "Use e.g. 200.")


def text_kernel(kernel_width: float):
    """LIME's text similarity: ``exp(-(100 d)^2 / (2 width^2))`` with ``d`` the cosine distance to all-ones."""

    def similarity(original: Any, perturbed: Any, interpretable: Any, **kwargs: Any) -> float:
        z = interpretable.float().reshape(-1)
        n = z.numel()
        kept = float(z.sum())
        distance = 1.0 - math.sqrt(kept / n) if kept > 0 else 1.0
        return math.exp(-((100.0 * distance) ** 2) / (2.0 * kernel_width**2))

    return similarity


@register_method("lime")
class LimeText(AttributionMethod):
    description = "LIME over canonical words (PAD = word removed), weighted ridge surrogate"
    Settings = LimeSettings

    def group_scores(
        self, forward: Any, batch: Any, targets: Any, settings: LimeSettings, *, seed_ids: list[int]
    ) -> tuple[list[np.ndarray], None]:
        if settings.budget == "fast":
            out = []
            for i in range(len(batch)):
                rng = np.random.default_rng(example_seed(settings.seed, seed_ids[i]))
                count = lime_sample_count(batch.n_groups[i], settings.samples_per_word, min(self.Settings.MIN_SAMPLES, settings.num_samples), settings.num_samples)
                out.append(fast_lime(forward, batch, i, int(targets[i]), count, rng, kernel_width=settings.kernel_width, alpha=settings.alpha))
            return out, None

        from captum.attr import Lime

        from engine.attribution.surrogate import WeightedRidge

        lime = Lime(forward, interpretable_model=WeightedRidge(settings.alpha), similarity_func=text_kernel(settings.kernel_width))
        return per_example_scores(
            lime, batch, targets, seed=settings.seed, seed_ids=seed_ids,
            n_samples=settings.num_samples, perturbations_per_eval=settings.perturbations_per_eval,
        ), None
