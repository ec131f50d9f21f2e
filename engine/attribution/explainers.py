"""Which ensemble members explain, and which judge, by default.

Every member judges (its prediction counts in the ensemble's flip checks: :func:`default_judges`), but
by default only the members whose training moved the whole network *explain*. A member of which only the top
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

A vote stores the members that explained it; the candidates made from that vote are judged by those
*and* by the members that only judge (:func:`default_judges`) — the top-layer MPNet classifies best
on a CPU (89.0 % on CAD dev against 82.4 / 78.8 % for the sample-cpu MiniLMs). The explainers are
trained first, so highlights and candidates can come while that judge still trains; until it is
stored it judges nothing, and :func:`judges_in_training` names it so that the caller can say so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.models.config import EXPLAINING_STRATEGIES

__all__ = ["EXPLAINING_STRATEGIES", "default_explainers", "default_judges", "explains_by_default", "judges_in_training"]


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


def default_judges(project: Any, dataset_id: int, voted: Sequence[str] | None = None) -> list[str]:
    """The members that judge a dataset's candidates by default, by name.

    The members of ``voted`` (default: the newest vote on the dataset or on the version it was
    derived from), then every other member trained on either of them — a member that only judges
    is one of them. Empty when nothing is trained.

    Parameters
    ----------
    project
        The open :class:`~engine.store.Project`.
    dataset_id
        The dataset whose candidates are judged.
    voted
        The members of the vote the candidates come from, when the caller knows it.
    """
    from engine.attribution.vote_store import vote_sets
    from engine.models.store import list_models

    dataset = project.dataset(int(dataset_id))
    ids = [i for i in (dataset.id, dataset.parent_id) if i is not None]
    if voted is None:
        found = sorted((v for i in ids for v in vote_sets(project, i)), key=lambda v: -int(v["id"]))
        voted = list(found[0]["params"].get("models") or []) if found else []
    trained = [m.name for m in list_models(project) if m.dataset_id in ids]
    return list(dict.fromkeys([*voted, *trained]))


def judges_in_training(project: Any, dataset_id: int) -> list[str]:
    """The members a running training job (of a live process) will add to the dataset's judges and has not stored
    yet, in the job's order: candidates judged now go without them."""
    import json

    from engine.models.store import list_models
    from engine.store.liveness import run_alive

    dataset = project.dataset(int(dataset_id))
    ids = [i for i in (dataset.id, dataset.parent_id) if i is not None]
    stored = {m.name for m in list_models(project)}
    names: list[str] = []
    for row in project.db.query(
            "SELECT params, pid, pid_started, host, heartbeat_at FROM runs WHERE kind = 'train' AND status = 'running' "
            "AND dataset_id IN (SELECT value FROM json_each(?)) ORDER BY id", [json.dumps(ids)]):
        if not run_alive(row["pid"], row["pid_started"], row["host"], row["heartbeat_at"]):
            continue
        try:
            members = json.loads(row["params"])["ensemble"]["members"]
            names += [str(m["name"]) for m in members if str(m["name"]) not in stored]
        except (ValueError, KeyError, TypeError):  # a row of another shape names nothing
            continue
    return list(dict.fromkeys(names))
