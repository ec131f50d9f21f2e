"""CORE end to end: retrieve counterfactual excerpts for examples, then edit each example with them.

:func:`guides_for` turns stored retrieval results (:mod:`engine.retrieval.retrieve`) into the
:class:`~engine.counterbias.guided.Guide` of each (example, target label): the retrieved excerpts
whose label is the target (best first, over the text's sentences or the whole text), and their
content words as keywords, the example's own words left out. :func:`core_edit` runs the two
steps as one job — retrieval (stored, skipped on a rerun), then the guided edit
(:func:`~engine.counterbias.guided.generate_guided`, method ``core``) — with one progress bar
and one cancel token. Examples for which nothing of the target label was retrieved are still
edited, without guidance, and counted in ``unguided``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.counterbias.guided import Guide, GuidedResult, GuidedSettings
from engine.counterbias.settings import targets_for
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled

if TYPE_CHECKING:
    from engine.llm.config import LLMConfig
    from engine.store.project import Project

__all__ = ["CoreResult", "RetrievalSettings", "core_edit", "guides_for"]


@dataclass(frozen=True)
class RetrievalSettings:
    """Where CORE's excerpts come from.

    Parameters
    ----------
    corpus
        The corpus name (imported with ``counterbias corpus``, indexed with ``counterbias index``).
    model
        The member that labelled the corpus.
    k
        Excerpts retrieved per query.
    per_sentence
        One query per sentence of the example (CORE's choice); else one per text.
    encoder, kind, params
        The index to search (see :func:`engine.retrieval.retrieve.open_retriever`).
    max_length
        Token limit of the query encoder (as the index was built with).
    diversity
        Maximal-marginal-relevance weight when picking the ``k`` excerpts (0: the ``k`` nearest;
        default 0.3: near-duplicate excerpts give way to others, so the keywords cover more ways
        of expressing the target label; see :meth:`engine.retrieval.retrieve.Retriever.search`).
    retriever
        A retriever trained with :func:`engine.retrieval.dpr.train_retriever` (its name in the project):
        the index built with it is searched (``encoder`` is then ``"trained"``).
    """

    corpus: str
    model: str
    k: int = 5
    per_sentence: bool = True
    encoder: str = "minilm-l6"
    kind: str = "auto"
    params: Mapping[str, Any] | None = None
    max_length: int = 64
    retriever: str | None = None
    diversity: float = 0.3

    def describe(self) -> str:
        """A short stable text of these settings (part of the candidates' settings key)."""
        params = ",".join(f"{k}={v}" for k, v in sorted((self.params or {}).items()))
        return (f"{self.corpus}/{self.model}/k{self.k}/{'sent' if self.per_sentence else 'text'}/"
                f"{self.encoder}-len{self.max_length}/{self.kind}{'/' + params if params else ''}"
                + (f"/retriever={self.retriever}" if self.retriever else "")
                + (f"/mmr={self.diversity:g}" if self.diversity > 0 else ""))


@dataclass
class CoreResult:
    """What :func:`core_edit` did: the retrieval (computed now / stored before), guides, the edit."""

    retrieved: int = 0
    retrieval_skipped: int = 0
    guided: int = 0
    unguided: int = 0
    edit: GuidedResult = dataclasses.field(default_factory=GuidedResult)

    def summary(self) -> dict[str, Any]:
        return {"retrieved": self.retrieved, "retrieval_skipped": self.retrieval_skipped, "guided": self.guided,
                "unguided": self.unguided, **self.edit.summary()}


def guides_for(
    results: Iterable[Mapping[str, Any]],
    examples: Mapping[int, Mapping[str, Any]],
    labels: Sequence[str],
    *,
    targets: str = "other",
    max_excerpts: int = 6,
    max_keywords: int = 20,
    use_tagger: bool = True,
) -> dict[tuple[int, str], Guide]:
    """The guide of each (example, target label) from stored retrieval results.

    Parameters
    ----------
    results
        Rows of :func:`~engine.retrieval.retrieve.stored_retrievals` (``example_id``, ``hits``).
    examples
        ``{example id: row}`` with ``text`` and ``label``.
    labels
        The dataset's labels.
    targets
        As for generation (``other``, ``each`` or label names).
    max_excerpts
        Excerpts kept per guide: the best-scoring hits of the target label, each text once.
    max_keywords
        Keywords kept per guide.
    use_tagger
        Keep only content-word parts of speech (spaCy); else a function-word list.

    Returns
    -------
    dict
        Only pairs with at least one excerpt of the target label.

    Examples
    --------
    >>> rows = [{"example_id": 1, "hits": [{"text": "A witty, warm film.", "label": "pos", "score": 0.8},
    ...                                    {"text": "Dull.", "label": "neg", "score": 0.9}]}]
    >>> g = guides_for(rows, {1: {"text": "A cold film.", "label": "neg"}}, ["neg", "pos"], use_tagger=False)
    >>> g[(1, "pos")].excerpts, g[(1, "pos")].keywords
    (('A witty, warm film.',), ('witty', 'warm'))
    """
    from engine.retrieval.keywords import extract_keywords

    hits: dict[int, list[Mapping[str, Any]]] = {}
    for row in results:
        hits.setdefault(int(row["example_id"]), []).extend(row.get("hits") or [])
    out: dict[tuple[int, str], Guide] = {}
    for example_id, found in hits.items():
        example = examples.get(example_id)
        if example is None:
            continue
        ranked = sorted(found, key=lambda h: -float(h.get("score", 0.0)))
        for target in targets_for(str(example["label"]), labels, targets):
            excerpts: list[str] = []
            for h in ranked:
                text = str(h.get("text") or "").strip()
                if h.get("label") == target and text and text not in excerpts:
                    excerpts.append(text)
                if len(excerpts) >= max_excerpts:
                    break
            if not excerpts:
                continue
            words = extract_keywords(excerpts, exclude=str(example.get("text") or ""), max_words=max_keywords,
                                     use_tagger=use_tagger)
            out[(example_id, target)] = Guide(excerpts=tuple(excerpts), keywords=tuple(words))
    return out


def core_edit(
    project: Project,
    dataset_id: int,
    example_ids: Sequence[int] | None,
    llm_config: LLMConfig,
    retrieval: RetrievalSettings,
    *,
    settings: GuidedSettings | None = None,
    judge: Sequence[str] = (),
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> CoreResult:
    """Retrieve excerpts of the target labels for the examples, then make CORE's guided edits.

    Parameters
    ----------
    project, dataset_id, example_ids
        The examples (``None``: the whole dataset).
    llm_config
        The LLM editor.
    retrieval
        Corpus, labelling member, index and k (:class:`RetrievalSettings`).
    settings
        Guided-edit settings (method ``core`` is forced; the retrieval settings become part of
        their key, so other retrieval settings make new candidates instead of skipping).
    judge
        Ensemble members that judge each candidate.

    Raises
    ------
    engine.retrieval.errors.RetrievalError
        No such corpus, an index not built, a labelling member of other labels.
    engine.llm.errors.LLMError
        A failure every request would share (stopped at once; what was made is kept).
    Cancelled
        Stored retrievals and candidates are kept; a rerun goes on from there.
    """
    from engine.counterbias.guided import generate_guided
    from engine.retrieval.retrieve import open_retriever, retrieve_for_examples
    from engine.store.runs import recorded_run

    token = ensure_token(cancel)
    dataset = project.dataset(dataset_id)
    ids = ([int(r["id"]) for r in project.iter_examples(dataset.id)] if example_ids is None
           else list(dict.fromkeys(int(i) for i in example_ids)))
    base = settings or GuidedSettings()
    settings = dataclasses.replace(base, method="core", guides_from=retrieval.describe())
    result = CoreResult()
    progress(0.0, f"CORE: opening the {retrieval.corpus!r} index")
    encoder, encoder_options = retrieval.encoder, {"max_length": retrieval.max_length}
    if retrieval.retriever:
        from engine.retrieval.dpr import trained_retriever

        encoder, encoder_options["path"] = "trained", trained_retriever(project, retrieval.retriever)
    retriever = open_retriever(project, retrieval.corpus, retrieval.model, encoder=encoder,
                               encoder_options=encoder_options, kind=retrieval.kind,
                               params=dict(retrieval.params) if retrieval.params else None)
    params = {"corpus": retrieval.corpus, "model": retrieval.model, "k": retrieval.k,
              "per_sentence": retrieval.per_sentence, "index": retriever.index.key,
              "search": retriever.index.search, "diversity": retrieval.diversity}
    with recorded_run(project, "retrieve", dataset.id, params) as run:
        done = retrieve_for_examples(project, retriever, ids, k=retrieval.k, per_sentence=retrieval.per_sentence,
                                     diversity=retrieval.diversity, run_id=run.id, progress=scaled(progress, 0.0, 0.25), cancel=token)
        run.result = {"computed": done.computed, "skipped": done.skipped, "settings_key": done.settings_key}
    result.retrieved, result.retrieval_skipped = done.computed, done.skipped
    examples = {int(r["id"]): dict(r) for r in project.examples(ids)}
    guides = guides_for(done.results, examples, dataset.labels, targets=settings.targets,
                        max_keywords=max(settings.max_keywords, 1))
    pairs = [(i, t) for i in ids if i in examples
             for t in targets_for(str(examples[i]["label"]), dataset.labels, settings.targets)]
    result.guided = sum(1 for p in pairs if p in guides)
    result.unguided = len(pairs) - result.guided
    token.raise_if_cancelled()
    result.edit = generate_guided(project, dataset.id, ids, llm_config, settings=settings, guides=guides,
                                  judge=judge, progress=scaled(progress, 0.25, 1.0), cancel=token)
    progress(1.0, f"CORE: {len(result.edit.created)} candidates, {len(result.edit.failed)} failed "
                  f"({result.unguided} without an excerpt of the target label)")
    return result
