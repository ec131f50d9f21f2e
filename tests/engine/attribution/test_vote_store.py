"""End to end: a three-member ensemble finds principal and spurious words, stored and reused."""

from __future__ import annotations

import pytest

from engine.attribution import (
    MissingAttributionsError,
    VoteConfigError,
    VoteSettings,
    find_principal_words,
    load_votes,
    vote_sets,
    vote_summary,
)
from engine.models import EnsembleConfig, delete_model, train_ensemble
from engine.store import ExampleQuery
from tests.engine.models.fixtures import import_cad_sentiment, tiny_spec

MEMBERS = ("distilbert", "electra", "albert")


@pytest.fixture
def ensemble(project):
    dataset = import_cad_sentiment(project)
    config = EnsembleConfig(tuple(tiny_spec(a) for a in MEMBERS))
    result = train_ensemble(project, dataset.id, config)
    ids = project.example_ids(ExampleQuery(dataset.id, splits=("dev",)))[:8].tolist()
    return project, dataset, result.names, ids


def test_find_principal_words_stores_votes_and_reuses_them(ensemble) -> None:
    project, dataset, names, ids = ensemble
    methods = {"ig": {"n_steps": 8}, "lime": {"num_samples": 24}}
    run = find_principal_words(
        project, dataset.id, names, methods=methods, vote=VoteSettings(k=5, rule="majority"), wordlists=["gender"], user_words=["movie"], example_ids=ids
    )
    assert not run.reused and len(run.attributions) == 6
    assert all(a.computed == len(ids) for a in run.attributions)
    votes = load_votes(project, run.vote_set_id)
    assert set(votes) == {(i, "text") for i in ids}
    texts = {r["id"]: r["text"].lower() for r in project.examples(ids)}
    for (ex, _), vote in votes.items():
        assert set(vote.principal).isdisjoint(vote.spurious)
        assert all(n >= 2 for w, n in vote.votes.items() if w in vote.principal)
        assert all(vote.votes.get(w, 0) < 2 for w in vote.spurious if w not in vote.user_words)
        if "movie" in texts[ex].split():
            assert "movie" in vote.spurious
        assert set(vote.member_words) == set(names)
    assert run.summary.n_examples == len(ids)
    assert run.summary.principal and run.summary.principal[0].examples >= run.summary.principal[-1].examples
    assert vote_summary(project, run.vote_set_id) == run.summary

    again = find_principal_words(
        project, dataset.id, names, methods=methods, vote=VoteSettings(k=5, rule="majority"), wordlists=["gender"], user_words=["movie"], example_ids=ids
    )
    assert again.reused and again.vote_set_id == run.vote_set_id
    # another K reuses the stored attributions: no forward pass at all
    other = find_principal_words(project, dataset.id, names, methods=methods, vote=VoteSettings(k=3, rule="majority"), example_ids=ids)
    assert not other.reused and all(a.computed == 0 and a.forward_calls == 0 for a in other.attributions)
    assert len(vote_sets(project, dataset.id)) == 2

    delete_model(project, names[0])
    assert vote_sets(project, dataset.id) == []
    assert project.db["word_votes"].count == 0


def test_two_members_vote_by_strict_majority_and_stored_attributions_are_needed(ensemble) -> None:
    project, dataset, names, ids = ensemble
    vote = lambda **kw: find_principal_words(project, dataset.id, names[:2], example_ids=ids,  # noqa: E731
                                             vote=VoteSettings(rule="majority", **kw))
    both, explicit, either = vote(), vote(threshold=2), vote(threshold=1)  # unset: both of two members
    assert both.summary.principal == explicit.summary.principal
    assert sum(w.examples for w in both.summary.principal) < sum(w.examples for w in either.summary.principal)
    with pytest.raises(VoteConfigError):
        find_principal_words(project, dataset.id, [], example_ids=ids)
    with pytest.raises(MissingAttributionsError):
        find_principal_words(project, dataset.id, names, example_ids=ids, compute=False)
