"""Active learning: the paper's simulation of annotation strategies (variation theory, issue 14).

:mod:`~engine.active.strategies` (random, cluster, counterfactual-paired selection, in a registry),
:mod:`~engine.active.learners` (embed-lr, tfidf-lr), :mod:`~engine.active.counterfactuals` (stored
candidates or LLM edits), :mod:`~engine.active.simulation` (:func:`simulate`, stored and resumable) and
:mod:`~engine.active.datasets` (the IMDb 4-class and CAD NLI sets). Heavy parts import lazily.
"""
