"""CoBA counterbias generation: manipulate triples, rewrite, reconstruct, judge, review, augment.

Importing this package is cheap: the LLM client, spaCy and torch are imported where used.
"""

from engine.counterbias.augment import AugmentResult, NothingAcceptedError, build_augmented_dataset
from engine.counterbias.generate import GenerateResult, clean_reconstruction, generate_counterbias
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
