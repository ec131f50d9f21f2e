"""Ensemble word importance: per-word attributions (IG, LIME, Shapley), cached, and the vote.

Importing this package is cheap: torch and captum are imported inside the functions that
compute attributions.
"""

from engine.attribution.cache import StoredScores, load_attributions
from engine.attribution.kernel import ExampleAttribution, ExampleInput, FieldScores, attribute_texts
from engine.attribution.errors import (
    AttributionError,
    MethodSettingsError,
    MissingAttributionsError,
    TargetLabelError,
    UnknownMethodError,
    VoteConfigError,
    WordlistError,
)
from engine.attribution.ig import IGSettings
from engine.attribution.jobs import AttributionRun, attribute_dataset, attribute_ensemble, settings_key_for
from engine.attribution.lime import LimeSettings
from engine.attribution.method import AttributionMethod, MethodSettings, settings_key
from engine.attribution.registry import available_methods, get_method, register_method, resolve_settings
from engine.attribution.shapley import ShapleySettings
from engine.attribution.vote import (
    ExampleVote,
    VoteContext,
    VoteSettings,
    VoteSummary,
    WordCount,
    combine_methods,
    summarize_votes,
    top_k_words,
    vote_example,
)
from engine.attribution.vote_registry import VOTE_RULES, available_vote_rules
from engine.attribution.vote_store import VoteRun, find_principal_words, load_votes, vote_sets, vote_summary
from engine.attribution.wordlists import (
    available_wordlists,
    combine_wordlists,
    gender_pairs,
    load_wordlist,
    not_swapped,
    parse_wordlist,
    read_wordlist,
    swap_pairs,
)

__all__ = [
    "AttributionError",
    "AttributionMethod",
    "AttributionRun",
    "ExampleAttribution",
    "ExampleInput",
    "ExampleVote",
    "FieldScores",
    "IGSettings",
    "LimeSettings",
    "MethodSettings",
    "MethodSettingsError",
    "MissingAttributionsError",
    "ShapleySettings",
    "StoredScores",
    "TargetLabelError",
    "UnknownMethodError",
    "VOTE_RULES",
    "VoteConfigError",
    "VoteContext",
    "VoteRun",
    "VoteSettings",
    "VoteSummary",
    "WordCount",
    "WordlistError",
    "attribute_dataset",
    "attribute_ensemble",
    "attribute_texts",
    "available_methods",
    "available_vote_rules",
    "available_wordlists",
    "combine_methods",
    "combine_wordlists",
    "find_principal_words",
    "gender_pairs",
    "get_method",
    "load_attributions",
    "load_votes",
    "load_wordlist",
    "not_swapped",
    "parse_wordlist",
    "read_wordlist",
    "register_method",
    "resolve_settings",
    "settings_key",
    "settings_key_for",
    "summarize_votes",
    "swap_pairs",
    "top_k_words",
    "vote_example",
    "vote_sets",
    "vote_summary",
]
