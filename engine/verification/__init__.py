"""Verification of generated candidates: named checks with verdicts and reasons, and the LLM judge.

:mod:`engine.verification.checks` holds the check registry (:data:`~engine.verification.checks.CHECKS`),
:mod:`engine.verification.heuristics` the string checks for LLM failure modes and
:mod:`engine.verification.llm_judge` the optional LLM judge. The ensemble judge and the accept
rule live in :mod:`engine.counterbias.verify`, which runs every check when it judges.
"""
