"""The per-example loop shared by the surrogate sampling methods (LIME, KernelSHAP).

captum's ``Lime`` and ``KernelShap`` fit one interpretable surrogate per input, so
:func:`per_example_scores` explains the examples of an encoded batch one at a time: padding
cut off, one interpretable feature per canonical word group (special tokens outside the
feature mask), the model evaluations of one example batched ``perturbations_per_eval`` at a
time. Each example's sampling is seeded from the method's ``seed`` and the example's id
(:func:`example_seed`), so its scores do not depend on which other examples share its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["example_seed", "per_example_scores"]


def example_seed(seed: int, example_id: int) -> int:
    """A per-example seed that does not depend on batch composition.

    Examples
    --------
    >>> example_seed(0, 7), example_seed(1, 7)
    (7, 1000010)
    """
    return (int(seed) * 1_000_003 + int(example_id)) % (2**31 - 1)


def per_example_scores(
    explainer: Any,
    batch: Any,
    targets: Any,
    *,
    seed: int,
    seed_ids: Sequence[int],
    n_samples: int,
    perturbations_per_eval: int,
) -> list[np.ndarray]:
    """One score per word group for every example of ``batch``, one surrogate fit each.

    Parameters
    ----------
    explainer
        A captum surrogate explainer over the classifier's forward function
        (``captum.attr.Lime``, ``captum.attr.KernelShap``).
    batch
        The :class:`~engine.attribution.batch.EncodedBatch`.
    targets
        Target class per example (a ``torch`` tensor).
    seed
        The method's base seed.
    seed_ids
        The example ids the per-example seeds are derived from.
    n_samples
        Perturbed samples per example.
    perturbations_per_eval
        Samples scored per forward pass.

    Returns
    -------
    list of numpy.ndarray
        The surrogate's coefficients per word group (float64); empty for an example
        without words.
    """
    import torch

    mask = batch.feature_mask()
    out = []
    with torch.no_grad():
        for i in range(len(batch)):
            n = batch.n_groups[i]
            if n == 0:
                out.append(np.zeros(0))
                continue
            torch.manual_seed(example_seed(seed, seed_ids[i]))
            length = batch.lengths[i]
            coefs = explainer.attribute(
                batch.input_ids[i : i + 1, :length],
                baselines=batch.baseline_ids[i : i + 1, :length],
                target=targets[i : i + 1],
                additional_forward_args=batch.forward_args(slice(i, i + 1), length),
                feature_mask=mask[i : i + 1, :length],
                n_samples=n_samples,
                perturbations_per_eval=perturbations_per_eval,
                return_input_shape=False,
            )
            out.append(coefs.detach().float().cpu().numpy().reshape(-1)[:n].astype(np.float64))
    return out
