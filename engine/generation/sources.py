"""Where a generate run's words come from: the vote set, its votes, the gender map."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.counterbias.manipulate import gender_map
from engine.counterbias.settings import GenerationConfigError

if TYPE_CHECKING:
    from engine.store.project import DatasetInfo, Project

__all__ = ["gender_mapping", "vote_source", "votes_for"]


def vote_source(project: Project, dataset: DatasetInfo, vote_set_id: int | None) -> dict[str, Any]:
    """The vote set to read W_p / W_s from (the given one, or the newest on the dataset/its parent)."""
    from engine.attribution.vote_store import vote_sets

    if vote_set_id is not None:
        found = [v for v in vote_sets(project) if v["id"] == vote_set_id]
    else:
        found = [v for d in (dataset.id, dataset.parent_id) if d is not None for v in vote_sets(project, d)]
        found.sort(key=lambda v: -int(v["id"]))
    if not found:
        raise GenerationConfigError(
            f"No principal/spurious words for dataset {dataset.name!r}"
            + (f" (vote set {vote_set_id} does not exist)." if vote_set_id is not None else "."),
            "Train the ensemble and run the vote first (Word importance tab, or 'counterbias train' then "
            "'counterbias vote').",
        )
    return found[0]


def votes_for(project: Project, dataset: DatasetInfo, vote_set: dict[str, Any], explicit: bool,
              ids: Sequence[int]) -> dict:
    """``(example id, field) -> vote`` of the examples: of ``vote_set`` when it was given (``explicit``), else the
    newest vote of each example on the dataset or its parent."""
    from engine.attribution.vote_store import latest_votes, load_votes

    if explicit:
        return load_votes(project, int(vote_set["id"]), ids)
    return latest_votes(project, [d for d in (dataset.id, dataset.parent_id) if d is not None], ids)


def gender_mapping() -> dict[str, str]:
    """The gendered word pairs to swap (both directions)."""
    from engine.attribution.wordlists import swap_pairs

    return gender_map(swap_pairs())
