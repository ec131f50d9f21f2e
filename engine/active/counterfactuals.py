"""Sources of counterfactuals for the counterfactual strategy: stored candidates, or LLM edits made on demand.

A source is a callable ``source(example_ids) -> {example_id: [(text, target_label), ...]}`` where a
text is a string (single-text task) or a ``(premise, hypothesis)`` tuple. It has a ``key``
attribute (a short string) so that stored results of different sources are not mixed up.

:class:`StoredCounterfactuals`
    Reads the project's ``candidates`` (statuses ``proposed`` and ``accepted`` by default;
    optionally only those whose verification passed, ``scores.passes``; optionally only some
    methods). Rejected and failed candidates are never used.
:class:`LLMCounterfactuals`
    Calls :func:`engine.counterbias.guided.generate_guided` (method ``llm``: the LLM edits the
    example toward each other label) for the ids that have no such candidates yet, then reads
    them back like :class:`StoredCounterfactuals`. Generation is resumable and cached, so a rerun
    of the simulation sends nothing new.
:class:`VariationCounterfactuals`
    The paper's own condition: pattern-keeping counterfactuals
    (:func:`engine.counterbias.variation.generate_variations`: for each other label, phrases that
    keep the example's symbolic pattern, then an edit holding one) made on demand for the selected
    examples from the dataset's stored patterns, kept when the heuristic and symbolic filters pass
    (a failed pair is stored as failed and never used). An example no pattern of its label matches
    gets a plain minimal edit instead, as in the annotation loop (``fallback``). Resumable like the
    LLM source.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from engine.progress import CancelToken, ProgressFn, no_progress

if TYPE_CHECKING:
    from engine.counterbias.guided import GuidedSettings
    from engine.counterbias.variation import VariationSettings
    from engine.llm.base import ChatBackend
    from engine.llm.config import LLMConfig
    from engine.store import Project

__all__ = ["LLMCounterfactuals", "StoredCounterfactuals", "VariationCounterfactuals"]

#: Candidate statuses a stored source reads by default.
USABLE = ("proposed", "accepted")


def _made(project: Project, ids: Sequence[int], method: str, settings_key: str) -> set[int]:
    """The examples of ``ids`` with a candidate (any status) of ``method`` made with ``settings_key``."""
    return {int(r["example_id"]) for r in project.db.query(
        "SELECT DISTINCT example_id FROM candidates WHERE example_id IN (SELECT value FROM json_each(?)) "
        "AND method = ? AND json_extract(meta, '$.settings_key') = ?", [json.dumps([int(i) for i in ids]), method,
                                                                        settings_key])}


class StoredCounterfactuals:
    """Counterfactuals from the project's stored candidates.

    Parameters
    ----------
    project
        The open project.
    statuses
        Candidate statuses to use (default proposed and accepted).
    verified_only
        Only candidates whose verification passed (``scores.passes`` true).
    methods
        Only candidates of these methods (``None``: any).
    settings_key
        Only candidates made with these generation settings (``meta.settings_key``).
    """

    def __init__(self, project: Project, *, statuses: Sequence[str] = USABLE, verified_only: bool = False,
                 methods: Sequence[str] | None = None, settings_key: str | None = None) -> None:
        self.project = project
        self.statuses = tuple(statuses)
        self.verified_only = bool(verified_only)
        self.methods = tuple(methods) if methods else None
        self.settings_key = settings_key

    @property
    def key(self) -> str:
        """What this source reads, as a short string (part of the stored results' identity)."""
        parts = ["stored", ",".join(self.statuses)]
        if self.verified_only:
            parts.append("verified")
        if self.methods:
            parts.append("methods=" + ",".join(self.methods))
        if self.settings_key:
            parts.append("settings=" + self.settings_key)
        return ":".join(parts)

    def __call__(self, example_ids: Sequence[int]) -> dict[int, list[tuple[Any, str]]]:
        ids = [int(i) for i in example_ids]
        if not ids:
            return {}
        where = ["c.example_id IN (SELECT value FROM json_each(?))", "c.status IN (SELECT value FROM json_each(?))"]
        params: list[Any] = [json.dumps(ids), json.dumps(list(self.statuses))]
        if self.methods:
            where.append("c.method IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(self.methods)))
        if self.settings_key:
            where.append("json_extract(c.meta, '$.settings_key') = ?")
            params.append(self.settings_key)
        if self.verified_only:
            where.append("json_extract(c.scores, '$.passes') = 1")
        sql = ("SELECT c.example_id, c.target_label, c.text, c.premise, c.hypothesis, e.text AS o_text, "
               "e.premise AS o_premise, e.hypothesis AS o_hypothesis FROM candidates c JOIN examples e "
               "ON e.id = c.example_id WHERE " + " AND ".join(where) + " ORDER BY c.example_id, c.id")
        out: dict[int, list[tuple[Any, str]]] = {}
        for r in self.project.db.query(sql, params):
            if r["o_premise"] is not None or r["o_hypothesis"] is not None:
                text: Any = (r["premise"] if r["premise"] is not None else r["o_premise"] or "",
                             r["hypothesis"] if r["hypothesis"] is not None else r["o_hypothesis"] or "")
                if text == (r["o_premise"], r["o_hypothesis"]):
                    continue
            else:
                if r["text"] is None or not str(r["text"]).strip():
                    continue
                text = r["text"]
            out.setdefault(int(r["example_id"]), []).append((text, str(r["target_label"])))
        return out


class LLMCounterfactuals:
    """Counterfactuals made by the LLM on demand (guided edits, method ``llm``), stored, then read back.

    Parameters
    ----------
    project, dataset_id
        The project and the (single-text) dataset whose examples are edited.
    llm_config
        The LLM editor.
    settings
        :class:`~engine.counterbias.guided.GuidedSettings` (default: method ``llm``, every other label).
    backend
        An existing chat backend (default: one made on first use, kept open between calls and
        closed by :meth:`close`).
    verified_only
        Use only candidates whose verification passed.
    progress, cancel
        Passed to each generation call.
    """

    def __init__(self, project: Project, dataset_id: int, llm_config: LLMConfig, *,
                 settings: GuidedSettings | None = None, backend: ChatBackend | None = None,
                 verified_only: bool = False, progress: ProgressFn = no_progress,
                 cancel: CancelToken | None = None) -> None:
        from engine.counterbias.guided import GuidedSettings

        self.project, self.dataset_id, self.llm_config = project, int(dataset_id), llm_config
        self.settings = settings or GuidedSettings(method="llm")
        self.backend = backend
        self._own_backend = False
        self.progress, self.cancel = progress, cancel
        self.sent = 0
        self.stored = StoredCounterfactuals(project, verified_only=verified_only, methods=(self.settings.method,),
                                            settings_key=self.settings.key())

    @property
    def key(self) -> str:
        return f"llm:{self.llm_config.backend}:{self.llm_config.model}:" + self.stored.key

    def __call__(self, example_ids: Sequence[int]) -> dict[int, list[tuple[Any, str]]]:
        from engine.counterbias.guided import generate_guided

        ids = [int(i) for i in example_ids]
        made = _made(self.project, ids, self.settings.method, self.settings.key())
        missing = [i for i in ids if i not in made]
        if missing:
            if self.backend is None:
                from engine.llm.registry import create_backend

                self.backend, self._own_backend = create_backend(self.llm_config), True
            result = generate_guided(self.project, self.dataset_id, missing, self.llm_config, settings=self.settings,
                                     backend=self.backend, progress=self.progress, cancel=self.cancel)
            self.sent += result.sent
        return self.stored(ids)

    def close(self) -> None:
        """Close the backend this source made (not one passed in)."""
        if self._own_backend and self.backend is not None:
            self.backend.close()
            self.backend, self._own_backend = None, False


class VariationCounterfactuals:
    """Pattern-keeping counterfactuals made on demand (method ``vt``), stored, then read back.

    Each selected example that one of its label's stored patterns matches gets, for each other
    label, phrases that keep the pattern and an edit holding one of them; an example no pattern
    matches gets a plain minimal LLM edit toward each other label (method ``llm``, as the
    annotation loop does), or none without ``fallback``.

    Parameters
    ----------
    project, dataset_id
        The project and the dataset (of a pair dataset the hypothesis carries the pattern and is
        edited, the premise kept); its patterns must be stored first
        (:func:`engine.patterns.synthesis.synthesize_dataset`, CLI ``patterns``), best from
        labelled texts outside the simulation's pool so that they carry none of its labels.
    llm_config
        The LLM.
    settings
        :class:`~engine.counterbias.variation.VariationSettings` (default: every other label).
    fallback
        Give an example without a matching pattern a plain LLM edit (default) instead of none.
    verified_only
        Use only candidates whose verification passed.
    backend
        An existing chat backend (default: one made on first use, closed by :meth:`close`).
    progress, cancel
        Passed to each generation call.

    Raises
    ------
    CounterfactualSourceError
        No patterns are stored for the dataset.
    """

    def __init__(self, project: Project, dataset_id: int, llm_config: LLMConfig, *,
                 settings: VariationSettings | None = None, fallback: bool = True, verified_only: bool = False,
                 backend: ChatBackend | None = None, progress: ProgressFn = no_progress,
                 cancel: CancelToken | None = None) -> None:
        from engine.active.errors import CounterfactualSourceError
        from engine.counterbias.guided import GuidedSettings
        from engine.counterbias.variation import METHOD, VariationSettings
        from engine.patterns.store import load_patterns

        self.project, self.dataset_id, self.llm_config = project, int(dataset_id), llm_config
        if not load_patterns(project, self.dataset_id):
            name = project.dataset(self.dataset_id).name
            raise CounterfactualSourceError(
                f"Dataset {name!r} has no stored patterns to keep.",
                f"Synthesize them first: counterbias patterns <project> {name} (from labelled texts outside the pool "
                "if you have them), or add your own with --add.")
        self.settings = settings or VariationSettings()
        self.backend = backend
        self._own_backend = False
        self.progress, self.cancel = progress, cancel
        self.sent = 0
        self.fallback = bool(fallback)
        self.plain = GuidedSettings(method="llm", targets=self.settings.targets)
        self._tried: set[int] = set()
        self.stored = StoredCounterfactuals(project, verified_only=verified_only, methods=(METHOD,),
                                            settings_key=self.settings.key())
        self.stored_plain = StoredCounterfactuals(project, verified_only=verified_only, methods=("llm",),
                                                  settings_key=self.plain.key())

    @property
    def key(self) -> str:
        plain = ":plain=" + self.stored_plain.key if self.fallback else ""
        return f"vt:{self.llm_config.backend}:{self.llm_config.model}:" + self.stored.key + plain

    def __call__(self, example_ids: Sequence[int]) -> dict[int, list[tuple[Any, str]]]:
        from engine.counterbias.guided import generate_guided
        from engine.counterbias.variation import METHOD, generate_variations, patterns_for
        from engine.patterns.match import Matcher

        ids = [int(i) for i in example_ids]
        made = _made(self.project, ids, METHOD, self.settings.key())
        if self.fallback:
            made |= _made(self.project, ids, "llm", self.plain.key())
        missing = [i for i in ids if i not in made and i not in self._tried]  # tried once: what failed stays so
        if missing:
            examples = {int(r["id"]): dict(r) for r in self.project.examples(missing)}
            keep = patterns_for(self.project, self.dataset_id, examples, Matcher(self.settings.soft))
            with_pattern = [i for i in missing if i in keep]
            rest = [i for i in missing if i not in keep] if self.fallback else []
            if (with_pattern or rest) and self.backend is None:
                from engine.llm.registry import create_backend

                self.backend, self._own_backend = create_backend(self.llm_config), True
            if with_pattern:
                result = generate_variations(self.project, self.dataset_id, with_pattern, self.llm_config,
                                             settings=self.settings,
                                             patterns={i: keep[i][0] for i in with_pattern},  # chosen once, here
                                             backend=self.backend, progress=self.progress, cancel=self.cancel)
                self.sent += result.sent
            if rest:
                plain = generate_guided(self.project, self.dataset_id, rest, self.llm_config, settings=self.plain,
                                        backend=self.backend, progress=self.progress, cancel=self.cancel)
                self.sent += plain.sent
            self._tried.update(missing)
        out = self.stored(ids)
        if self.fallback:  # plain edits count only for examples the pattern-keeping step never took
            kept = _made(self.project, ids, METHOD, self.settings.key())
            out.update((i, pairs) for i, pairs in self.stored_plain([i for i in ids if i not in kept]).items())
        return out

    def close(self) -> None:
        """Close the backend this source made (not one passed in)."""
        if self._own_backend and self.backend is not None:
            self.backend.close()
            self.backend, self._own_backend = None, False
