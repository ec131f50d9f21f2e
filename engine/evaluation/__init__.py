"""Does the augmentation help? A downstream experiment and diversity measures.

:func:`~engine.evaluation.experiment.run_evaluation` trains a registered classifier
(:data:`~engine.evaluation.classifiers.CLASSIFIERS`: ``tfidf-lr``, ``backbone:<name>``) on
training conditions built from dataset versions (:mod:`~engine.evaluation.conditions`) over
seeds, scores every test set marked with a role (:mod:`~engine.evaluation.test_sets`), stores
each result in the project as it is produced (resumable) and summarises mean ± 95% CI
(:mod:`~engine.evaluation.table`). :mod:`~engine.evaluation.diversity`,
:mod:`~engine.evaluation.bleu` and :mod:`~engine.evaluation.diversity_report` measure how
diverse edits are and how close they stay to their parents.

Heavy libraries (scikit-learn, torch, sentence-transformers) are imported inside functions.
"""
