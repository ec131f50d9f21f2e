"""Shapley values of canonical words: permutation sampling (batched) or KernelSHAP.

``estimator="sampling"`` (default) runs ``captum.attr.ShapleyValueSampling`` on a whole batch
at once: every example gets its own word-group feature mask (special tokens outside it, see
:mod:`engine.attribution.batch`), and a sampled permutation adds groups one by one, switching
the group's tokens from ``[PAD]`` to the input. Cost: ``num_samples x (words + 1)`` batched
evaluations. The permutations of one batch are shared by its examples (valid, since examples
do not interact), so the sampling noise depends on the batch's random seed, which is derived
from ``seed`` and the batch's first example id.

``estimator="kernel"`` runs ``captum.attr.KernelShap`` per example with ``num_samples``
coalitions and a weighted least-squares surrogate; cheaper for long texts, noisier for short
ones.

``budget="fast"`` (the default without a GPU, see :func:`~engine.attribution.method.default_budget`) uses batched antithetic permutation sampling instead
(:func:`engine.attribution.perturb.fast_shapley`), seeded per example, with the number of
permutations sized to the example's words: about ``rows`` model evaluations, even, at least 2
and at most ``num_samples`` (10). ``budget="full"`` is the captum estimator above.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from engine.attribution.errors import MethodSettingsError
from engine.attribution.method import AttributionMethod, MethodSettings
from engine.attribution.registry import register_method
from engine.attribution.perturb import fast_shapley, shapley_permutation_count
from engine.attribution.sampling import example_seed, per_example_scores

__all__ = ["ShapleySettings", "ShapleyWords"]

ESTIMATORS = ("sampling", "kernel")


@dataclasses.dataclass(frozen=True)
class ShapleySettings(MethodSettings):
    """Settings of :class:`ShapleyWords`.

    Parameters
    ----------
    estimator
        ``"sampling"`` (permutation sampling) or ``"kernel"`` (KernelSHAP).
    num_samples
        Permutations (sampling; default 10; with ``budget="fast"`` the most per example) or
        coalitions (kernel; use ~200).
    rows
        ``budget="fast"``: model evaluations to aim at per example (permutations =
        ``rows / (words + 1)``, even, between 2 and ``num_samples``).
    seed
        Base random seed.
    perturbations_per_eval
        Evaluations packed into one forward pass.
    """

    estimator: str = "sampling"
    num_samples: int = 10
    seed: int = 0
    perturbations_per_eval: int = 16
    rows: int = 256

    PERFORMANCE_FIELDS: ClassVar[frozenset[str]] = frozenset({"perturbations_per_eval"})
    FAST_FIELDS: ClassVar[frozenset[str]] = frozenset({"rows"})

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.estimator not in ESTIMATORS:
            raise MethodSettingsError(f"Unknown Shapley estimator {self.estimator!r}.", f"Use one of: {', '.join(ESTIMATORS)}.")
        if self.num_samples < 1:
            raise MethodSettingsError(f"num_samples must be positive, got {self.num_samples}.", "Use e.g. 10.")


@register_method("shapley")
class ShapleyWords(AttributionMethod):
    description = "Shapley values of words: permutation sampling (batched) or KernelSHAP"
    Settings = ShapleySettings

    def group_scores(
        self, forward: Any, batch: Any, targets: Any, settings: ShapleySettings, *, seed_ids: list[int]
    ) -> tuple[list[np.ndarray], None]:
        if settings.estimator == "kernel":
            return self._kernel(forward, batch, targets, settings, seed_ids), None
        if settings.budget == "fast":
            return self._fast(forward, batch, targets, settings, seed_ids), None
        return self._sampling(forward, batch, targets, settings, seed_ids), None

    def _fast(self, forward: Any, batch: Any, targets: Any, settings: ShapleySettings, seed_ids: list[int]) -> list[np.ndarray]:
        out = []
        for i in range(len(batch)):
            rng = np.random.default_rng(example_seed(settings.seed, seed_ids[i]))
            count = shapley_permutation_count(batch.n_groups[i], settings.rows, settings.num_samples)
            out.append(fast_shapley(forward, batch, i, int(targets[i]), count, rng))
        return out

    def _sampling(self, forward: Any, batch: Any, targets: Any, settings: ShapleySettings, seed_ids: list[int]) -> list[np.ndarray]:
        import torch
        from captum.attr import ShapleyValueSampling

        torch.manual_seed(example_seed(settings.seed, seed_ids[0]))
        with torch.no_grad():
            attrs = ShapleyValueSampling(forward).attribute(
                batch.input_ids,
                baselines=batch.baseline_ids,
                target=targets,
                additional_forward_args=batch.forward_args(),
                feature_mask=batch.feature_mask(),
                n_samples=settings.num_samples,
                perturbations_per_eval=settings.perturbations_per_eval,
            )
        values = attrs.detach().float().cpu().numpy()
        out = []
        for i in range(len(batch)):
            first = batch.first_token_of_group(i)
            out.append(values[i, first].astype(np.float64) if len(first) else np.zeros(0))
        return out

    def _kernel(self, forward: Any, batch: Any, targets: Any, settings: ShapleySettings, seed_ids: list[int]) -> list[np.ndarray]:
        from captum.attr import KernelShap

        from engine.attribution.surrogate import WeightedRidge

        shap = KernelShap(forward)
        shap.interpretable_model = WeightedRidge(alpha=1e-6)  # weighted least squares, no scikit-learn
        return per_example_scores(
            shap, batch, targets, seed=settings.seed, seed_ids=seed_ids,
            n_samples=settings.num_samples, perturbations_per_eval=settings.perturbations_per_eval,
        )
