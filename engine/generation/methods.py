"""The generation methods, one registry: each turns selected examples into stored candidates the same way.

Every method is a :class:`Generator` in :data:`GENERATORS` (built-ins imported only when first used), run as
``generator.run(project, dataset_id, example_ids, llm_config, inputs, *, judge, progress, cancel)`` and
answering a :class:`GenerationOutcome`. ``inputs`` is the method's own typed record (:class:`CobaInputs`,
:class:`CoreInputs`, :class:`~engine.counterbias.guided.GuidedSettings` for ``llm``, :class:`VtInputs`);
``judge=None`` means the same for every method: the dataset's default judges (the members of its newest vote,
then every other member trained on it — :func:`~engine.counterbias.verify.judge_members`).

========================  =====================================================  =======================
name                      what it does                                           candidates' ``method``
========================  =====================================================  =======================
``coba-edit``             CoBA, the sentences to edit rewritten (default)         ``coba``
``coba-reconstruct``      CoBA, the text rewritten from its triples               ``coba``
``core``                  CORE: retrieved excerpts of the target guide an edit    ``core``
``llm``                   the same edit without retrieval (CORE's baseline)       ``llm``
``vt``                    variation theory: an edit that keeps a pattern          ``vt``
========================  =====================================================  =======================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from engine.generate_settings import GenerateSettings, GenerationConfigError
from engine.progress import CancelToken, ProgressFn, no_progress
from engine.registry import Registry

if TYPE_CHECKING:
    from engine.counterbias.guided import GuidedSettings
    from engine.counterbias.retrieve_edit import RetrievalSettings
    from engine.counterbias.variation import VariationSettings
    from engine.llm.config import LLMConfig
    from engine.store import Project

__all__ = ["GENERATORS", "CobaInputs", "CoreInputs", "GenerationOutcome", "Generator", "VtInputs", "generate"]


@dataclass(frozen=True)
class GenerationOutcome:
    """What a run of any method did: its run record, the ``method`` its candidates are stored under, counts."""

    run_id: int | None
    method: str
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Generator:
    """One generation method: its name, a line of help, the stored candidates' method, the step that runs it."""

    name: str
    help: str
    stored_as: str
    run: Callable[..., GenerationOutcome]


@dataclass(frozen=True)
class CobaInputs:
    """CoBA's inputs: its settings and the vote giving the principal and spurious words (``None``: the newest)."""

    settings: GenerateSettings = field(default_factory=GenerateSettings)
    vote_set_id: int | None = None


@dataclass(frozen=True)
class CoreInputs:
    """CORE's inputs: where to retrieve from, and the guided edit's settings."""

    retrieval: RetrievalSettings
    settings: GuidedSettings | None = None


@dataclass(frozen=True)
class VtInputs:
    """Variation theory's inputs: its settings and one pattern for every example (``None``: each its best)."""

    settings: VariationSettings | None = None
    pattern: str | None = None


GENERATORS: Registry[Generator] = Registry(
    "generation method", GenerationConfigError,
    builtins={name: f"engine.generation.methods:_{name.replace('-', '_')}"
              for name in ("coba-edit", "coba-reconstruct", "core", "llm", "vt")},
)


def generate(project: Project, dataset_id: int, example_ids: Sequence[int] | None, llm_config: LLMConfig,
             method: str, inputs: Any = None, *, judge: Sequence[str] | None = None,
             progress: ProgressFn = no_progress, cancel: CancelToken | None = None) -> GenerationOutcome:
    """Run generation method ``method`` (a name of :data:`GENERATORS`) on the selected examples.

    Parameters
    ----------
    project, dataset_id, example_ids
        The examples to augment (``None``: the whole dataset).
    llm_config
        The LLM.
    method
        ``coba-edit``, ``coba-reconstruct``, ``core``, ``llm``, ``vt`` or a registered method.
    inputs
        The method's typed inputs (``None``: its defaults; ``core`` has none and needs them).
    judge
        Members that judge the new candidates (``None``: the dataset's default judges; ``()``: none).
    """
    generator = GENERATORS.get(method)
    return generator.run(project, dataset_id, example_ids, llm_config, inputs, judge=judge, progress=progress,
                         cancel=cancel)


def _judges(project: Project, dataset_id: int, judge: Sequence[str] | None) -> list[str]:
    from engine.counterbias.verify import judge_members

    return list(judge) if judge is not None else judge_members(project, dataset_id)


def _run_coba(mode: str) -> Callable[..., GenerationOutcome]:
    def run(project, dataset_id, example_ids, llm_config, inputs=None, *, judge=None, progress=no_progress,
            cancel=None) -> GenerationOutcome:
        from engine.generation.job import generate_counterbias

        inputs = inputs or CobaInputs()
        settings = inputs.settings
        if settings.mode != mode:
            settings = replace(settings, mode=mode)
        done = generate_counterbias(project, dataset_id, example_ids, llm_config, settings=settings,
                                    vote_set_id=inputs.vote_set_id, judge=judge, progress=progress, cancel=cancel)
        summary = done.summary()
        if done.judges_training:
            summary["judges_training"] = list(done.judges_training)
        return GenerationOutcome(done.run_id, "coba", summary)

    return run


def _run_guided(project, dataset_id, example_ids, llm_config, inputs=None, *, judge=None, progress=no_progress,
                cancel=None) -> GenerationOutcome:
    from engine.counterbias.guided import GuidedSettings, generate_guided

    settings = replace(inputs or GuidedSettings(), method="llm")
    done = generate_guided(project, dataset_id, example_ids, llm_config, settings=settings,
                           judge=_judges(project, dataset_id, judge), progress=progress, cancel=cancel)
    return GenerationOutcome(done.run_id, "llm", done.summary())


def _run_core(project, dataset_id, example_ids, llm_config, inputs: CoreInputs | None = None, *, judge=None,
              progress=no_progress, cancel=None) -> GenerationOutcome:
    from engine.counterbias.guided import GuidedSettings
    from engine.counterbias.retrieve_edit import core_edit

    if inputs is None:
        raise GenerationConfigError("CORE needs a corpus to retrieve from and the member that labelled it.",
                                    "Give CoreInputs(RetrievalSettings(corpus=..., model=...)).")
    settings = replace(inputs.settings or GuidedSettings(), method="core")
    done = core_edit(project, dataset_id, example_ids, llm_config, inputs.retrieval, settings=settings,
                     judge=_judges(project, dataset_id, judge), progress=progress, cancel=cancel)
    return GenerationOutcome(done.edit.run_id, "core", done.summary())


def _run_vt(project, dataset_id, example_ids, llm_config, inputs: VtInputs | None = None, *, judge=None,
            progress=no_progress, cancel=None) -> GenerationOutcome:
    from engine.counterbias.variation import generate_variations
    from engine.patterns.syntax import parse

    inputs = inputs or VtInputs()
    patterns = None
    if inputs.pattern:
        parse(inputs.pattern)  # a pattern that does not parse is a named error before any request
        if example_ids is None:
            from engine.store import ExampleQuery

            example_ids = project.example_ids(ExampleQuery(dataset_id))
        ids = list(example_ids)
        patterns = {int(i): inputs.pattern for i in ids}
    done = generate_variations(project, dataset_id, example_ids, llm_config, settings=inputs.settings,
                               patterns=patterns, judge=_judges(project, dataset_id, judge), progress=progress,
                               cancel=cancel)
    return GenerationOutcome(done.run_id, "vt", done.summary())


_coba_edit = Generator("coba-edit", "CoBA: rewrite the sentences to edit, keep the rest (default)", "coba",
                       _run_coba("edit"))
_coba_reconstruct = Generator("coba-reconstruct", "CoBA: rewrite the text from its triples (the paper's method)",
                              "coba", _run_coba("reconstruct"))
_core = Generator("core", "CORE: excerpts of the target label, retrieved from a corpus, guide a minimal edit",
                  "core", _run_core)
_llm = Generator("llm", "a minimal LLM edit toward the target, without retrieval (CORE's baseline)", "llm",
                 _run_guided)
_vt = Generator("vt", "variation theory: an edit that keeps the example's pattern and turns its label", "vt",
                _run_vt)
