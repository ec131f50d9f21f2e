"""CoBA counterbias generation, laid out as its pipeline (the design and its reasons: ``docs/design/generation.md``).

- :mod:`~engine.generation.job` — the one LLM job: lock, run record, judges, the chunk loop, rate and time left;
- :mod:`~engine.generation.sources` — the vote set and its votes, the judge members, the gender map;
- :mod:`~engine.generation.plan` — the slots (example × target × sample) still to make, resume, the seed rule;
- :mod:`~engine.generation.store` — one ``candidates`` row per slot, triples marked;
- :mod:`~engine.generation.reconstruct` — reconstruct mode (``GenerateSettings.mode="reconstruct"``);
- :mod:`~engine.generation.edit` — edit mode (the default), a chunk walked through
  :data:`~engine.generation.edit.pipeline.EDIT_STAGES`, in this order (the option that turns each on):

  1. ``read`` (``edit_polar``): every sentence of the chunk read alone, in one batch;
  2. ``mark`` (``edit_opinion``): the opinion words of the sentences read as the original label (prompt
     ``opinion_words``);
  3. ``plan``: the sentences to edit, their words to change and to copy, their first requests;
  4. ``first``: one request per sentence, one repair of an unusable or unmoved answer (``edit_sentence``,
     ``edit_sentence_repair``);
  5. ``fresh`` (``edit_fresh``): one try with a new seed (``edit_sentence_strong`` for a sentence nothing moved);
  6. ``swap`` (``edit_swap``): the marked phrases replaced by their opposites (``opposite_phrase``);
  7. ``drop``: edits still unmoved dropped;
  8. ``remove`` (``edit_remove``): stubborn sentences removed;
  9. ``unedited``: a slot with no edited sentence failed;
  10. ``build``: the original with the edited sentences replaced;
  11. ``residual``: the sentences still read as the original label recorded;
  12. ``unread``: a slot whose sentences could not be read failed.

The prompts a run records are those of its enabled stages (:func:`~engine.generation.job.run_prompts`).
Nothing is raised out of the job except :class:`~engine.errors.Cancelled` and errors that stop every slot alike.
"""

from engine.generation.job import GenerateResult, generate_counterbias
from engine.generation.reconstruct import clean_reconstruction

__all__ = ["GenerateResult", "clean_reconstruction", "generate_counterbias"]
