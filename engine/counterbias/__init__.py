"""CoBA counterbias generation: manipulate triples, rewrite, reconstruct, judge, review, augment.

Importing this package is cheap: the LLM client, spaCy and torch are imported where used.
Generation itself is :mod:`engine.generation`; its entry points are re-exported here, imported on first use.
"""

from typing import Any

from engine.counterbias.augment import AugmentResult, NothingAcceptedError, build_augmented_dataset
from engine.counterbias.review import CandidateState, ReviewError, candidate_rows, load_candidate, restore, set_decision
from engine.counterbias.settings import GenerateSettings, GenerationConfigError, targets_for
from engine.counterbias.verify import CandidateFilter, flip_rates, judge_candidates

__all__ = [
    "AugmentResult",
    "CandidateFilter",
    "CandidateState",
    "GenerateResult",
    "GenerateSettings",
    "GenerationConfigError",
    "NothingAcceptedError",
    "ReviewError",
    "build_augmented_dataset",
    "candidate_rows",
    "clean_reconstruction",
    "flip_rates",
    "generate_counterbias",
    "judge_candidates",
    "load_candidate",
    "restore",
    "set_decision",
    "targets_for",
]

_GENERATION = ("GenerateResult", "clean_reconstruction", "generate_counterbias")


def __getattr__(name: str) -> Any:
    if name in _GENERATION:  # imported on first use: engine.generation imports modules of this package
        import engine.generation

        return getattr(engine.generation, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
