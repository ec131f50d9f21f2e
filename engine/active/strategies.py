"""Selection strategies: the order in which a simulated analyst annotates the unlabelled pool.

A strategy returns an *annotation order* over the pool; the first ``n`` examples of it are the
training set at a budget of ``n`` shots, so the budgets of one seed are nested (10 ⊂ 15 ⊂ 30 …),
as in an annotation session. A strategy may also add rows that are not annotations
(:meth:`Strategy.augment`): the counterfactual strategy pairs every selected example with its
counterfactuals, each labelled with its target label.

``random``
    A seeded permutation of the pool (the paper's condition 1).
``cluster``
    k-means over MiniLM sentence embeddings of the pool; the order takes the most central
    example of each cluster (largest cluster first), then the second most central of each, and
    so on: rotation among the clusters (condition 2). Deterministic given the seed.
``counterfactual`` / ``counterfactual-cluster``
    Random (or cluster) selection, each selected example paired with its counterfactuals
    (condition 3). The paper does not say how condition 3 selects its examples; ``counterfactual``
    selects exactly as ``random`` does with the same seed, so its difference to ``random`` is the
    effect of the counterfactuals alone.

The counterfactuals come from an injected callable ``counterfactuals(example_ids) ->
{example_id: [(text, target_label), ...]}`` (:mod:`engine.active.counterfactuals`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.active.errors import CounterfactualSourceError, UnknownStrategyError
from engine.registry import Registry

__all__ = [
    "STRATEGIES",
    "ClusterStrategy",
    "CounterfactualSource",
    "CounterfactualStrategy",
    "Pool",
    "RandomStrategy",
    "Strategy",
    "make_strategy",
]

Text = tuple[str, ...]
#: ``counterfactuals(example_ids) -> {example_id: [(text, target_label), ...]}``; a text is a string
#: (single-text task) or a tuple of field texts (premise, hypothesis).
CounterfactualSource = Callable[[Sequence[int]], Mapping[int, Sequence[tuple[Any, str]]]]


@dataclass
class Pool:
    """The unlabelled pool: example ids, their texts (field tuples) and gold labels (the simulated analyst).

    ``vectors`` (one row per example) are filled by the simulation for strategies that need them.
    """

    ids: tuple[int, ...]
    texts: tuple[Text, ...]
    labels: tuple[str, ...]
    vectors: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not len(self.ids) == len(self.texts) == len(self.labels):
            raise ValueError("pool ids, texts and labels differ in length")

    def __len__(self) -> int:
        return len(self.ids)


class Strategy:
    """Base class: an annotation order over the pool, and optionally extra training rows."""

    #: Registry name.
    name = ""
    #: Whether :meth:`order` reads ``pool.vectors``.
    needs_vectors = False
    #: Whether the strategy needs a counterfactual source.
    needs_counterfactuals = False

    def params(self) -> dict[str, Any]:
        """JSON parameters that, with the name, identify the strategy."""
        return {}

    def order(self, pool: Pool, n: int, seed: int) -> list[int]:
        """Positions in ``pool`` of the first ``n`` examples to annotate, in annotation order."""
        raise NotImplementedError

    def augment(self, example_ids: Sequence[int]) -> list[tuple[Text, str]]:
        """Extra labelled rows for the selected examples (none by default)."""
        return []


class RandomStrategy(Strategy):
    """A seeded random permutation of the pool.

    Examples
    --------
    >>> pool = Pool((10, 11, 12, 13), (("a",), ("b",), ("c",), ("d",)), ("x", "y", "x", "y"))
    >>> a = RandomStrategy().order(pool, 3, seed=1)
    >>> a == RandomStrategy().order(pool, 3, seed=1), len(set(a)), a == RandomStrategy().order(pool, 4, seed=1)[:3]
    (True, 3, True)
    """

    name = "random"

    def order(self, pool: Pool, n: int, seed: int) -> list[int]:
        rng = np.random.default_rng([seed, 7919])
        return [int(i) for i in rng.permutation(len(pool))[:n]]


class ClusterStrategy(Strategy):
    """k-means over the pool's embeddings, then rotation among clusters, most central first.

    Parameters
    ----------
    n_clusters
        k (default 10, the smallest budget: at 10 shots every example comes from its own cluster).
    """

    name = "cluster"
    needs_vectors = True

    def __init__(self, n_clusters: int = 10) -> None:
        if int(n_clusters) < 1:
            raise UnknownStrategyError(f"n_clusters {n_clusters} is not positive.", "Use 1 or more clusters.")
        self.n_clusters = int(n_clusters)

    def params(self) -> dict[str, Any]:
        return {"n_clusters": self.n_clusters, "embeddings": "all-MiniLM-L6-v2"}

    def clusters(self, pool: Pool, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``(cluster of each example, distance to its centroid)`` for this seed."""
        from sklearn.cluster import KMeans

        if pool.vectors is None:
            raise ValueError("the cluster strategy needs pool.vectors")
        k = min(self.n_clusters, len(pool))
        km = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(pool.vectors)
        assigned = km.labels_.astype(int)
        distance = np.linalg.norm(pool.vectors - km.cluster_centers_[assigned], axis=1)
        return assigned, distance

    def order(self, pool: Pool, n: int, seed: int) -> list[int]:
        assigned, distance = self.clusters(pool, seed)
        members = {}
        for c in np.unique(assigned):
            idx = np.flatnonzero(assigned == c)
            members[int(c)] = [int(i) for i in idx[np.lexsort((idx, distance[idx]))]]
        queue = sorted(members, key=lambda c: (-len(members[c]), c))
        out: list[int] = []
        depth = 0
        while len(out) < min(n, len(pool)):
            for c in queue:
                if depth < len(members[c]):
                    out.append(members[c][depth])
            depth += 1
        return out[:n]


class CounterfactualStrategy(Strategy):
    """Examples selected by a base rule, each paired with its counterfactuals (labelled with their target).

    Parameters
    ----------
    counterfactuals
        The source of counterfactuals (``example_ids -> {id: [(text, target label), ...]}``).
    base
        ``"random"`` (default) or ``"cluster"``: how the examples to annotate are selected.
    n_clusters
        k for the cluster base.
    """

    name = "counterfactual"
    needs_counterfactuals = True

    def __init__(self, counterfactuals: CounterfactualSource | None = None, base: str = "random",
                 n_clusters: int = 10) -> None:
        if counterfactuals is None:
            raise CounterfactualSourceError("The counterfactual strategy needs a source of counterfactuals.",
                                            "Pass --counterfactuals stored (candidates of the project) or llm.")
        if base not in ("random", "cluster"):
            raise UnknownStrategyError(f"Unknown base selection {base!r} for the counterfactual strategy.",
                                       "Use random or cluster.")
        self.source = counterfactuals
        self.base_name = base
        self.base: Strategy = RandomStrategy() if base == "random" else ClusterStrategy(n_clusters)
        self.needs_vectors = self.base.needs_vectors
        self._seen: dict[int, list[tuple[Text, str]]] = {}

    def params(self) -> dict[str, Any]:
        return {"base": self.base_name, **self.base.params(),
                "source": getattr(self.source, "key", None) or getattr(self.source, "__name__", "callable")}

    def order(self, pool: Pool, n: int, seed: int) -> list[int]:
        return self.base.order(pool, n, seed)

    def augment(self, example_ids: Sequence[int]) -> list[tuple[Text, str]]:
        wanted = [int(i) for i in example_ids if int(i) not in self._seen]
        if wanted:
            try:
                found = self.source(wanted)
            except Exception as exc:  # a CounterbiasError passes through unchanged below
                from engine.errors import CounterbiasError

                if isinstance(exc, CounterbiasError):
                    raise
                raise CounterfactualSourceError(f"The counterfactual source failed: {exc}.",
                                                "Check the LLM settings or the stored candidates.") from exc
            for i in wanted:
                self._seen[i] = [(_as_text(t), str(label)) for t, label in found.get(i, ())]
        return [row for i in example_ids for row in self._seen[int(i)]]


class ClusterCounterfactualStrategy(CounterfactualStrategy):
    """:class:`CounterfactualStrategy` with the cluster base."""

    name = "counterfactual-cluster"

    def __init__(self, counterfactuals: CounterfactualSource | None = None, n_clusters: int = 10) -> None:
        super().__init__(counterfactuals, base="cluster", n_clusters=n_clusters)


def _as_text(text: Any) -> Text:
    return (str(text),) if isinstance(text, str) else tuple(str(t) for t in text)


#: Strategy classes by name.
STRATEGIES: Registry[Any] = Registry(
    "selection strategy",
    UnknownStrategyError,
    builtins={
        "random": "engine.active.strategies:RandomStrategy",
        "cluster": "engine.active.strategies:ClusterStrategy",
        "counterfactual": "engine.active.strategies:CounterfactualStrategy",
        "counterfactual-cluster": "engine.active.strategies:ClusterCounterfactualStrategy",
    },
)


def make_strategy(name: str, *, counterfactuals: CounterfactualSource | None = None, **params: Any) -> Strategy:
    """A strategy from its registry name (the counterfactual source goes only to those needing one).

    Raises
    ------
    UnknownStrategyError
        Unknown name or options.
    CounterfactualSourceError
        A counterfactual strategy without a source.

    Examples
    --------
    >>> make_strategy("cluster", n_clusters=4).params()["n_clusters"]
    4
    """
    factory = STRATEGIES.get(name)
    if getattr(factory, "needs_counterfactuals", False):
        params = {"counterfactuals": counterfactuals, **params}
    try:
        return factory(**params)
    except TypeError as exc:
        raise UnknownStrategyError(f"Bad options for strategy {name!r}: {exc}.", "Check the option names.") from exc
