"""Batched word-coalition scoring and the fast-budget LIME and Shapley estimators.

A *coalition* of an example is a boolean vector over its word groups: ``True`` keeps the
group's tokens, ``False`` replaces them by the baseline (``[PAD]``, see
:mod:`engine.attribution.batch`). :func:`score_coalitions` evaluates many coalitions of one
example in few large forward passes (rows per pass from a token budget, padding cut off,
``torch.inference_mode``), without captum's per-sample Python loop.

On it sit the two estimators of ``budget="fast"`` (:mod:`engine.attribution.lime`,
:mod:`engine.attribution.shapley`), whose sample sizes follow the number of words:

* :func:`shapley_permutations` — antithetic permutation sampling: each sampled permutation is
  followed by its reverse (which cancels much of the sampling noise; for an additive model one
  pair is exact); the all-off and all-on coalitions shared by every permutation are scored once;
* :func:`lime_coalitions` — LIME's random coalitions plus the full input, weighted with LIME's
  text kernel and fitted with the same weighted ridge surrogate as the full budget.

Both are seeded per example (:func:`~engine.attribution.sampling.example_seed`), so an
example's scores do not depend on which examples share its batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["fast_lime", "fast_shapley", "lime_sample_count", "rows_per_pass", "score_coalitions", "shapley_permutation_count"]

#: Tokens per forward pass of the coalition scorer (CPU: larger passes are no faster).
CPU_TOKEN_BUDGET = 8192
GPU_TOKEN_BUDGET = 65536


def rows_per_pass(length: int, device_type: str) -> int:
    """Coalitions scored per forward pass for sequences of ``length`` tokens."""
    budget = CPU_TOKEN_BUDGET if device_type == "cpu" else GPU_TOKEN_BUDGET
    return max(1, budget // max(1, int(length)))


def shapley_permutation_count(n_words: int, rows: int, most: int) -> int:
    """Permutations for ``n_words`` words: about ``rows`` model evaluations, even, in ``[2, most]``.

    Examples
    --------
    >>> [shapley_permutation_count(n, 256, 10) for n in (3, 30, 60, 100, 300)]
    [10, 10, 6, 4, 2]
    """
    wanted = math.ceil(rows / (max(1, n_words) + 1))
    wanted += wanted % 2
    return int(max(2, min(most - most % 2 if most >= 2 else 2, wanted)))


def lime_sample_count(n_words: int, per_word: float, least: int, most: int) -> int:
    """LIME samples for ``n_words`` words: ``per_word`` each, within ``[least, most]``.

    Examples
    --------
    >>> [lime_sample_count(n, 1.0, 32, 200) for n in (3, 30, 60, 100, 300)]
    [32, 32, 60, 100, 200]
    """
    return int(max(least, min(most, math.ceil(per_word * n_words))))


def score_coalitions(forward: Any, batch: Any, row: int, target: int, coalitions: np.ndarray) -> np.ndarray:
    """The forward function's ``target`` score for coalitions of example ``row`` of ``batch``.

    Parameters
    ----------
    forward
        :class:`~engine.attribution.forward.ClassifierForward`.
    batch
        :class:`~engine.attribution.batch.EncodedBatch`.
    row
        The example.
    target
        Class index.
    coalitions
        ``(S, n_groups)`` booleans: which word groups keep their tokens.

    Returns
    -------
    numpy.ndarray
        ``(S,)`` float64 scores.
    """
    import torch

    length = batch.lengths[row]
    device = batch.input_ids.device
    groups = torch.as_tensor(batch.token_group[row, :length], device=device)
    content = groups >= 0
    safe = torch.where(content, groups, torch.zeros_like(groups))
    ids = batch.input_ids[row, :length]
    base = batch.baseline_ids[row, :length]
    extra = batch.forward_args(slice(row, row + 1), length)
    chunk = rows_per_pass(length, device.type)
    keep_groups = torch.as_tensor(np.asarray(coalitions, dtype=bool), device=device)
    out = np.empty(len(coalitions), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(coalitions), chunk):
            part = keep_groups[start : start + chunk]
            if part.shape[1]:
                keep = part[:, safe] | ~content  # (s, length)
            else:
                keep = torch.ones(len(part), length, dtype=torch.bool, device=device)
            inputs = torch.where(keep, ids, base)
            args = tuple(None if t is None else t.expand(len(part), -1) for t in extra)
            scores = forward(inputs, *args)[:, target]
            out[start : start + len(part)] = scores.double().cpu().numpy()
    return out


def fast_shapley(forward: Any, batch: Any, row: int, target: int, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Antithetic permutation-sampling Shapley values of example ``row``'s word groups."""
    n = batch.n_groups[row]
    if n == 0:
        return np.zeros(0)
    pairs = max(1, n_permutations // 2)
    perms = []
    for _ in range(pairs):
        p = rng.permutation(n)
        perms += [p, p[::-1]]
    # rows: the empty coalition, the full one, then the n - 1 proper prefixes of every permutation
    coalitions = [np.zeros(n, dtype=bool), np.ones(n, dtype=bool)]
    for p in perms:
        prefix = np.zeros(n, dtype=bool)
        for k in range(n - 1):
            prefix[p[k]] = True
            coalitions.append(prefix.copy())
    values = score_coalitions(forward, batch, row, target, np.stack(coalitions))
    empty, full, inner = values[0], values[1], values[2:].reshape(len(perms), n - 1)
    phi = np.zeros(n, dtype=np.float64)
    for j, p in enumerate(perms):
        path = np.concatenate([[empty], inner[j], [full]])
        phi[p] += np.diff(path)
    return phi / len(perms)


def fast_lime(
    forward: Any, batch: Any, row: int, target: int, n_samples: int, rng: np.random.Generator, *, kernel_width: float, alpha: float
) -> np.ndarray:
    """LIME coefficients of example ``row``'s word groups from ``n_samples`` coalitions (+ the input)."""
    import torch

    from engine.attribution.surrogate import WeightedRidge

    n = batch.n_groups[row]
    if n == 0:
        return np.zeros(0)
    coalitions = np.vstack([np.ones((1, n), dtype=bool), rng.random((n_samples, n)) < 0.5])
    values = score_coalitions(forward, batch, row, target, coalitions)
    kept = coalitions.sum(axis=1)
    distance = np.where(kept > 0, 1.0 - np.sqrt(kept / n), 1.0)
    weights = np.exp(-((100.0 * distance) ** 2) / (2.0 * kernel_width**2))
    ridge = WeightedRidge(alpha)
    ridge.fit([(torch.as_tensor(coalitions, dtype=torch.float64), torch.as_tensor(values), torch.as_tensor(weights))])
    return ridge.representation().double().numpy().reshape(-1)
