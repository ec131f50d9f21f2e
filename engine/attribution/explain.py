"""One example's word importance from stored attributions: the per-member top-K and the vote.

Cheap (a few indexed reads and a pure vote), so a viewer can re-vote instantly when the user
toggles members or methods or changes K. Nothing is computed with a model here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.attribution.cache import load_attributions
from engine.attribution.jobs import settings_key_for
from engine.attribution.vote import ExampleVote, VoteContext, VoteSettings, top_k_words, vote_example
from engine.attribution.vote_store import vote_context
from engine.models.store import ModelInfo
from engine.store import Project
from engine.text import normalize


@dataclass(frozen=True)
class FieldExplanation:
    """The vote on one text field and what to highlight."""

    field: str
    text: str
    vote: ExampleVote
    spans: list[tuple[int, int, str]]
    strength: dict[tuple[int, int], float]
    user_spans: set[tuple[int, int]]


@dataclass(frozen=True)
class ExampleExplanation:
    """Per-field votes plus each member's top-K words per method (first field)."""

    example_id: int
    fields: list[FieldExplanation] = field(default_factory=list)
    tops: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    missing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing and bool(self.fields)


def explain_example(
    project: Project,
    example: dict,
    members: Sequence[ModelInfo],
    methods: Sequence[str],
    settings: VoteSettings = VoteSettings(),
    *,
    user_words: Iterable[str] = (),
    method_settings: Mapping[str, Any] | None = None,
) -> ExampleExplanation:
    """Vote on ``example`` with the stored scores of ``members`` × ``methods``.

    Members or methods without stored scores for this example are listed in ``missing`` and
    left out of the vote (the threshold then follows the members that remain).
    ``method_settings`` (method → settings, e.g. a stored vote's ``params["methods"]``) picks
    which cached scores are read; a method not in it reads those of its default settings.
    """
    example_id = int(example["id"])
    users = {normalize(w) for w in user_words}
    fields = members[0].fields if members else ("text",)
    scores: dict[str, dict[str, dict[str, list]]] = {f: {} for f in fields}
    words: dict[str, list[str]] = {f: [] for f in fields}
    missing: list[tuple[str, str]] = []
    for info in members:
        for method in methods:
            key = settings_key_for(info, method, (method_settings or {}).get(method))
            stored = load_attributions(project, info.id, method, key, [example_id])
            for f in fields:
                got = stored.get((example_id, f))
                if got is None:
                    if (info.name, method) not in missing:
                        missing.append((info.name, method))
                    continue
                if len(got.words) > len(words[f]):
                    words[f] = got.words
                scores[f].setdefault(info.name, {})[method] = got.scores
    out: list[FieldExplanation] = []
    tops: dict[str, dict[str, list[str]]] = {}
    context: VoteContext | None = None  # member weights and word prior, as the stored vote has them
    for f in fields:
        per_member = scores[f]
        if not per_member:
            continue
        if context is None:
            context = vote_context(project, members, settings)
        vote = vote_example(words[f], per_member, settings, user_words=users, context=context)
        if not tops:
            tops = {m: {meth: top_k_words(words[f], s, settings.k, rank_by=settings.rank_by) for meth, s in ms.items()}
                    for m, ms in per_member.items()}
        text = example.get(f) or ""
        n = max(1, len(per_member))
        spans = vote.spans(text)
        strength = {(s, e): vote.votes.get(normalize(text[s:e]), 0) / n for s, e, _ in spans}
        user_spans = {(s, e) for s, e, _ in spans if normalize(text[s:e]) in vote.user_words}
        out.append(FieldExplanation(f, text, vote, spans, strength, user_spans))
    return ExampleExplanation(example_id, out, tops, missing)
