"""Which sentences of a text are edited, and how each is asked: the reading, marking and planning stages."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.counterbias.edit import FUNCTION_WORDS, SentenceEdit, fact_words, has_word, surface_words
from engine.counterbias.manipulate import names_person, swap_gender
from engine.counterbias.sentence_reading import reads_ahead, shortest_read
from engine.generation.edit.request import edit_request
from engine.generation.edit.state import EditRun, Job, plan_key
from engine.generation.plan import FieldPlan, Slot, keep_words
from engine.text import normalize, segment
from engine.text.ratings import against
from engine.text.sentences import sentence_spans, split_sentences

__all__ = ["CUES", "CUE_Z", "content_words", "cue_words", "mark_opinions", "plan_chunk", "read_sentences", "sentences_as_written"]


def read_sentences(run: EditRun) -> None:
    """Read every sentence of the chunk's texts in one batch (a server answers them concurrently), not one batch per
    text as each is planned; a slot one of whose sentences could not be read fails before its edits are planned."""
    if not reads_ahead(run.reader):
        return
    read = {slot.key: [s for plan in slot.fields if plan.field == "text"
                       for s in sentences_as_written(plan.original)[2]] for slot in run.slots if slot.error is None}
    run.reader.read([s for mine in read.values() for s in mine])
    _fail_unplanned(run.slots, run.reader, read, "read")


def mark_opinions(run: EditRun) -> None:
    """Ask the opinion words of every sentence to mark (see :func:`_to_mark`) in one batch."""
    if run.finder is None:
        return
    min_polar = run.settings.edit_polar
    items: dict[tuple[int, str, int], list[tuple[str, str]]] = {}
    for slot in run.slots:
        for plan in slot.fields if slot.error is None else ():
            raw = sentences_as_written(plan.original)[2] if plan.field == "text" else []
            label = str(slot.example["label"])
            items.setdefault(slot.key, []).extend(
                (raw[i], label) for i in _to_mark(plan, raw, _polar_sentences(run.reader, raw, label, min_polar),
                                                  min_polar > 0))
    run.finder.find([i for mine in items.values() for i in mine])
    _fail_unplanned(run.slots, run.finder, {k: [s for s, _ in mine] for k, mine in items.items()},
                    "marked for its opinion words")


def plan_chunk(run: EditRun) -> None:
    """Plan the edits of every field of the chunk's slots (:func:`_plan_edits`) and their first requests."""
    jobs: list[Job] = []
    for slot in run.slots:
        if slot.error is not None:
            continue
        for plan in slot.fields:
            found = _plan_edits(run, slot, plan)
            if found is None:
                break
            run.layout[plan_key(slot, plan)] = found
            jobs.extend(Job(slot, plan, e, edit_request(run, slot, plan, e)) for e in plan.edits)
    run.jobs = [j for j in jobs if j.slot.error is None]


def _fail_unplanned(slots: Sequence[Slot], asker: Any, sentences: Mapping[tuple[int, str, int], Sequence[str]],
                    what: str) -> None:
    """Fail (retriably, step "read") a slot one of whose ``sentences`` (``{slot.key: [...]}``) could not be read or
    marked before its edits were planned: planned without that answer, its edit requests would differ from the next
    run's, and be sent for nothing."""
    for slot in slots:
        failure = asker.failure_for(sentences.get(slot.key, [])) if slot.error is None else None
        if failure is not None:
            slot.fail("read", f"A sentence could not be {what}: {failure.message}", retriable=failure.retriable,
                      hint=failure.hint)


def content_words(words: Sequence[str]) -> list[str]:
    """``words`` without function words (a vote may rank "this" or "how"; naming them misleads the LLM)."""
    return [w for w in words if w.lower() not in FUNCTION_WORDS]


def _chosen_sentences(plan: FieldPlan, sentences: Sequence[str], polar: Iterable[int] = (),
                      rated: Iterable[int] = ()) -> list[int]:
    """Sentences to rewrite: those holding a principal triple or a principal content word, ``polar``
    ones (read as the original label on their own) and ``rated`` ones (a rating such as "9/10" that
    goes with the original label); else all.

    A sentence holding a principal word goes in even when no triple of it does: the triples of a
    small LLM miss words, and a principal word left in an unedited sentence keeps the label.
    """
    chosen = _principal_sentences(plan, sentences) | ((set(polar) | set(rated)) & set(range(len(sentences))))
    return sorted(chosen) or list(range(len(sentences)))


def _principal_sentences(plan: FieldPlan, sentences: Sequence[str]) -> set[int]:
    """The sentences holding a principal triple or a principal content word."""
    chosen = {plan.sentence_of[i] for i, c in enumerate(plan.categories)
              if c == "principal" and i < len(plan.sentence_of)} & set(range(len(sentences)))
    return chosen | {i for i, s in enumerate(sentences) if surface_words(s, content_words(plan.principal))}


def _to_mark(plan: FieldPlan, sentences: Sequence[str], polar: Sequence[int], read: bool) -> list[int]:
    """The sentences whose opinion words the LLM marks: those read as the original label, and, when the sentences
    were ``read``, those holding a principal word (a sentence of neither kind is not edited)."""
    if plan.field != "text":
        return []
    return sorted(set(polar) | (_principal_sentences(plan, sentences) if read else set()))


def sentences_as_written(text: str) -> tuple[str, list[tuple[int, int]], list[str]]:
    """The text's base, its sentences' spans in it, and the sentences as written there (what the LLM edits)."""
    sentences = split_sentences(text)
    if not sentences:
        return text, [], []
    base, spans = sentence_spans(text, sentences)
    return base, spans, [base[a:b] for a, b in spans]


def _polar_sentences(polar_fn: Any, raw: Sequence[str], label: str, min_polar: float) -> list[int]:
    """The sentences the reader reads alone as ``label`` with at least ``min_polar`` (of the reader's ``min_words``
    or more: any length for the LLM, three words for the members)."""
    if polar_fn is None or min_polar <= 0 or not raw:
        return []
    shortest = shortest_read(polar_fn)
    return [i for i, p in enumerate(polar_fn(list(raw), label))
            if p >= min_polar and len(raw[i].split()) >= shortest]


def _plan_edits(run: EditRun, slot: Slot, plan: FieldPlan) -> tuple[str, list[tuple[int, int]]] | None:
    """Fill ``plan.edits`` (the sentences to rewrite, as written); return the text's base and spans.

    With the run's opinion finder, a sentence read as the original label names its opinion words to change (not the
    principal words), and the spurious words among them are released (:mod:`engine.counterbias.opinion_words`).
    """
    mapping, polar_fn, finder = run.mapping, run.reader, run.finder
    min_polar = run.settings.edit_polar
    base, spans, raw = sentences_as_written(plan.original)
    if not raw:
        slot.fail("edit", f"Example {slot.example['id']} ({plan.field}) has no sentence to edit.", retriable=False,
                  reason="no sentence")
        return None
    plan.gender = bool(mapping) and not names_person(plan.original)
    mapping = mapping if plan.gender else {}
    swaps = [swap_gender(sentence, mapping)[1] if mapping else [] for sentence in raw]  # tagged once per sentence
    plan.swaps = [pair for found in swaps for pair in found]
    # the LLM edits the sentences as written; the gender swap is applied to its answer (a model asked to
    # copy "the male lead" of a swapped text wrote "the female lead" back, and the edit was refused)
    plan.others = list(raw)
    label = str(slot.example["label"])
    polar: list[int] = []
    if plan.field == "text":
        polar = plan.polar = _polar_sentences(polar_fn, raw, label, min_polar)
    marked = _to_mark(plan, raw, polar, min_polar > 0) if finder else []
    opinions = dict(zip(marked, finder.find([(raw[i], label) for i in marked]), strict=True)) if finder else {}
    # a rating ("9/10") that goes with the original label is an opinion to turn, whatever the vote says
    ratings = ({i: [r.text for r in against(s, slot.target, str(slot.example["label"]), slot.sides)]
                for i, s in enumerate(raw)} if plan.field == "text" and slot.sides else {})
    rated = [i for i, found in ratings.items() if found]
    edits: list[SentenceEdit] = []
    spoken: list[SentenceEdit] = []  # sentences whose principal words all speak for the target already
    plain: list[SentenceEdit] = []  # principal sentences neither read as the label nor holding an opinion word
    for i in _chosen_sentences(plan, raw, polar, rated):
        gendered = [a for a, _ in swaps[i]]
        # names, places, titles and dates are facts, not the label: kept like the spurious words (not in a
        # hypothesis, whose entities an NLI edit may well have to change)
        facts = fact_words(raw[i], slot.cues) if plan.field == "text" else []
        keep = list(dict.fromkeys([*keep_words(raw[i], plan, {}), *gendered, *facts]))
        # a principal word that is a fact ("Amazing" of the title "Amazing Grace") is copied, not changed: named, the
        # bundled model's last try wrote "Terrible Grace"
        fact_keys = {normalize(w) for w in facts}
        named = [w for w in surface_words(raw[i], content_words(plan.principal)) if normalize(w) not in fact_keys]
        # a principal word that already speaks for the target ("outstanding" in a review to make Positive) is not
        # one to change: naming it got synonyms ("amazing") and wrong-way edits ("joy" -> "sorrow")
        principal = ([w for w in named if slot.target_z.get(normalize(w), 0.0) < CUE_Z] if plan.field == "text"
                     else named)
        # the label's strongest words stand in only where no principal word was (their z lists "take", "D" of
        # "D&D", "horror" too: named in place of a dropped "joy", they got "joy" -> "sorrow" and "Dungeons & Dragons")
        change = principal or (cue_words(raw[i], slot.cues, keep) if not named or i in polar else [])
        # the words that make the sentence read as its label, instead of the vote's (a single word the data tie
        # to the target already speaks for it, as with principal words)
        opinion = opinions.get(i)
        if opinion:
            opinion = [o for o in opinion if not _all_fixed(o, [*gendered, *facts])
                       and (len(o.split()) > 1 or slot.target_z.get(normalize(o), 0.0) < CUE_Z)]
        released: list[str] = []
        if opinion:
            # a principal word outside the marked phrases still goes in when it reads alone as the label ("bad" left
            # out of "annoyed"), not when it reads as none ("movie", "could", "2001": named, the LLM swapped synonyms)
            rest = [w for w in principal if not any(has_word(o, w) for o in opinion)]
            change = [*opinion, *(w for w, p in zip(rest, polar_fn(rest, label) if rest else [], strict=True)
                                  if p >= min_polar)]
            fixed = {w.lower() for w in [*gendered, *facts]}
            released = [w for w in keep if w.lower() not in fixed and any(has_word(o, w) for o in opinion)]
        done = named and not change and i not in polar and i not in rated
        change = list(dict.fromkeys([*ratings.get(i, []), *(named if done else change)]))
        keep = [w for w in keep if w.lower() not in {c.lower() for c in change} and w not in released]
        unmarked = opinions.get(i) == [] and i not in polar and i not in rated and min_polar > 0
        (spoken if done else plain if unmarked else edits).append(
            SentenceEdit(i, raw[i], raw[i], change, keep, opinion=opinion, released=released))
    if not edits:  # every chosen sentence spoke for the target already, or carried no opinion: edit them as before
        edits = spoken or plain  # rather than none
    plan.plain = [e.index for e in plain if e not in edits]
    plan.edits.extend(edits)
    plan.keep = list(dict.fromkeys(w for e in plan.edits for w in e.keep))
    return base, spans


def _all_fixed(phrase: str, fixed: Sequence[str]) -> bool:
    """Whether every word of a marked phrase is a name, title, date or gendered word to copy ("Prom Night II",
    "Clockwork Orange"): named to change, it would contradict the words to copy.

    Examples
    --------
    >>> _all_fixed("Clockwork Orange", ["Clockwork", "Orange", "15"]), _all_fixed("this crap", ["Clockwork"])
    (True, False)
    """
    keys = {w.key for w in segment(phrase) if w.is_lexical}
    return bool(keys) and keys <= {w.key for f in fixed for w in segment(f) if w.is_lexical}


#: At most this many words named to change in a sentence without a principal word, each with z >= CUE_Z.
CUES, CUE_Z = 2, 2.5


def cue_words(sentence: str, z: dict[str, float], keep: Sequence[str] = ()) -> list[str]:
    """The words of a sentence without a principal word that most carry its label (word z-statistics).

    Named to change in a sentence edited because the reader reads it as the original label (``edit_polar``), which
    would otherwise name no word. At most :data:`CUES` words with z >= :data:`CUE_Z`, strongest first; words to keep
    (spurious, gendered) are never named.

    Examples
    --------
    >>> cue_words("A dull plot, a waste of time.", {"waste": 8.7, "dull": 4.7, "plot": 5.0, "time": 1.0}, ["plot"])
    ['waste', 'dull']
    """
    kept = {k.lower() for k in keep}
    found = {w.key: w.text for w in segment(sentence) if w.is_lexical and w.key not in FUNCTION_WORDS
             and w.text.lower() not in kept and z.get(w.key, 0.0) >= CUE_Z}
    return [found[k] for k in sorted(found, key=lambda k: -z[k])[:CUES]]
