"""Which ensemble members explain by default.

Every member judges (its prediction counts in the ensemble's flip checks), but by default only
the members whose training moved the whole network *explain*. A member of which only the top
layer or the head was trained (``cached-top`` / ``cached-head``: the large backbones under the
``sample-cpu`` preset, the default without a GPU) classifies well, yet its gradients and its
perturbation responses run through layers the task never changed, and its words show it: on the
231 CAD sentiment dev pairs (``benchmarks/principal_words.py``, IG) the words of MPNet trained on
its top layer matched the words the human editors changed for P@5 0.256, and MiniLM-L6 trained on
its top layer 0.259 — below VADER's lexicon (0.343) — while the fine-tuned MiniLM-L6 and -L3 reached
0.413 and 0.371, and their two-member vote 0.413, level with the three-member vote (0.412). That
member is also the costly one to explain (MPNet: 80-98 % of the explain time on a CPU).

So :func:`default_explainers` keeps the fine-tuned members when at least two are trained, and
every member otherwise (one explainer is no vote); the vote then needs both of two members (a
strict majority, :meth:`~engine.attribution.vote.VoteSettings.tau`). The analyst can tick any
member back on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.models.config import EXPLAINING_STRATEGIES

__all__ = ["EXPLAINING_STRATEGIES", "default_explainers", "explains_by_default"]


def explains_by_default(member: Any) -> bool:
    """Whether ``member`` (a :class:`~engine.models.store.ModelInfo`) had its whole network trained."""
    return str(getattr(member, "strategy", "fine-tune")) in EXPLAINING_STRATEGIES


def default_explainers(members: Sequence[Any]) -> list[Any]:
    """The members that explain by default (see the module doc), in their order.

    >>> from types import SimpleNamespace as M
    >>> [m.name for m in default_explainers([M(name="a", strategy="fine-tune"), M(name="b", strategy="cached-top"),
    ...                                      M(name="c", strategy="fine-tune")])]
    ['a', 'c']
    >>> [m.name for m in default_explainers([M(name="a", strategy="fine-tune"), M(name="b", strategy="cached-top")])]
    ['a', 'b']
    """
    chosen = [m for m in members if explains_by_default(m)]
    return chosen if len(chosen) >= 2 else list(members)
