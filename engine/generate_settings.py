"""The settings of counterbias generation, :class:`GenerateSettings`, each option declared once.

Every option of :class:`GenerateSettings` is declared once, with :func:`option`: its default, label, help, the
modes it applies to and the options it needs. The ``generate`` CLI (:mod:`engine.cli.generate_options`), the LLM
settings dialog (:mod:`widgets.llm_dialog`) and the stored GUI settings are built from that declaration
(:data:`OPTIONS`); :meth:`GenerateSettings.validate` refuses an option set where it has no effect, and
:meth:`GenerateSettings.key` hashes only the options that take effect.

A light module (the error classes only): the CLI builds its parser from it without importing the generation
engine. :mod:`engine.counterbias.settings` re-exports it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import CounterbiasError

__all__ = ["MODES", "OPTIONS", "RETIRED", "RETIRED_FLAGS", "GenerateSettings", "GenerationConfigError", "Option",
           "inactive_options", "option"]

#: Options removed after runs were stored, with the value every run since has in effect: part of
#: :meth:`GenerateSettings.key`, so that candidates made before keep their key. ``repair_flip`` (one repair of a
#: half-flipped candidate) and ``edit_hold`` (a first try keeping spurious opinion words) were removed on the
#: ablation in ``benchmarks/RESULTS.md``; their stages now never run.
RETIRED: dict[str, Any] = {"repair_flip": True, "edit_hold": True}
#: Their old flags: accepted by ``generate`` and refused with what to do (CB801).
RETIRED_FLAGS = ("--repair-flip", "--no-repair-flip", "--no-flip-repair", "--edit-hold", "--no-edit-hold",
                 "--release-at-once")

#: Generation modes: edit-preserving (default) and the paper's full reconstruction.
MODES = ("edit", "reconstruct")


class GenerationConfigError(CounterbiasError):
    """Counterbias generation cannot start with these settings or this project state."""

    code = "CB801"


@dataclass(frozen=True)
class Option:
    """The declaration of one generation option (a :class:`GenerateSettings` field's metadata).

    ``modes``: the modes it takes effect in; ``needs``: options that must be on (true, or a threshold above 0) for
    it to take effect. ``cli``: ``"generate"`` (a flag of ``generate``, ``--`` + the name with dashes; a boolean
    gets ``--name``/``--no-name``), ``"llm"`` (the shared LLM sampling flag of ``generate``, ``triples`` and
    ``verify``, with that flag's default). ``aliases``: old flags, still accepted but hidden, each with the value
    it sets. ``gui``: where the LLM dialog shows it (``"generation"``, ``"llm"``; ``None``: CLI only).
    ``items``: ``(value, label)`` choices (``closed``: no other value); ``minimum``/``maximum``/``step``/
    ``decimals``/``off`` shape a spin box (``off``: the text shown at the minimum, which turns it off).
    ``help``: one line (``generate --help``, and the dialog's tooltip); ``more``: the details (the tooltip).
    """

    label: str
    help: str
    modes: tuple[str, ...] = MODES
    needs: tuple[str, ...] = ()
    cli: str = "generate"
    aliases: tuple[tuple[str, Any], ...] = ()
    gui: str | None = "generation"
    items: tuple[tuple[str, str], ...] = ()
    closed: bool = False
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    decimals: int = 2
    off: str | None = None
    more: str = ""
    #: Added after runs were stored: at its default it is left out of :meth:`GenerateSettings.key`, so that the
    #: candidates made before keep their key (resume does not make them again).
    later: bool = False
    name: str = ""
    default: Any = None
    kind: type = object

    @property
    def flag(self) -> str:
        """The CLI flag: the name with dashes (``edit_swap`` → ``--edit-swap``, its negation ``--no-edit-swap``)."""
        return "--" + self.name.replace("_", "-")

    def flags(self) -> tuple[str, ...]:
        """The flags ``generate --help`` lists for it."""
        return (self.flag, "--no-" + self.flag[2:]) if self.kind is bool else (self.flag,)


def option(default: Any, *, label: str, help: str, **declared: Any) -> Any:  # noqa: A002 - argparse's word
    """A :class:`GenerateSettings` field declared as an option (see :class:`Option` for ``declared``)."""
    return dataclasses.field(default=default, metadata={"option": Option(label=label, help=help, **declared)})


_EDIT = ("edit",)
_OPINION = ("edit_opinion",)


@dataclass(frozen=True)
class GenerateSettings:
    """How counterbias candidates are made (CoBA): each field is an option declared with :func:`option`.

    ``mode="edit"`` (default) rewrites only the sentences holding a principal word (and those the options below
    add), one LLM request each, and keeps every other sentence byte for byte (up to the gender swap);
    ``"reconstruct"`` is the paper's full reconstruction (rewrite the principal triples, shuffle/drop the normal
    ones, write the whole text from the triples). Both check that the spurious words survive. Each option's help
    says what it does; :data:`OPTIONS` holds the declarations, :func:`inactive_options` which ones take no effect.
    """

    mode: str = option(
        "edit", label="Mode:", closed=True,
        items=(("edit", "Edit sentences (keeps the rest of the text)"),
               ("reconstruct", "Reconstruct from triples (CoBA paper)")),
        help="edit (default): rewrite the sentences to edit, keep the rest; reconstruct: rewrite it from its triples",
        more="Edit: only the sentences holding principal words (and those the edit options add) are rewritten, every "
        "other sentence is kept as it is. Reconstruct: the CoBA paper's full rewrite of the text from its triples "
        "(shuffle and drop apply only here).")
    targets: str = option(
        "other", label="Target labels:", items=(("other", "other"), ("each", "each")),
        help="other (default), each, or comma-separated label names",
        more="'other': binary tasks get the other label, multi-class tasks every other label; 'each': every other "
        "label.")
    samples: int = option(1, label="Samples:", minimum=1, maximum=50,
                          help="candidates per example and target label (default 1)",
                          more="Sample i uses seed + i.")
    temperature: float = option(0.7, label="Temperature:", cli="llm", gui="llm", minimum=0.0, maximum=2.0, step=0.1,
                                help="sampling temperature of the rewrite and reconstruct requests")
    seed: int = option(13, label="Seed:", cli="llm", minimum=0, maximum=2**31 - 1,
                       help="seeds the LLM's sampling and the shuffle/drop of normal triples")
    max_tokens: int = option(384, label="Max tokens:", cli="llm", gui=None,
                             help="the longest answer of a rewrite or reconstruct request")
    shuffle: bool = option(True, label="Shuffle normal triples", modes=("reconstruct",),
                           help="shuffle the normal triples (default: on)", more="Seeded per candidate.")
    drop_prob: float = option(0.1, label="Drop probability:", modes=("reconstruct",), minimum=0.0, maximum=0.9,
                              step=0.05, help="chance to drop each normal triple (default 0.1)",
                              more="Never a principal or spurious triple; seeded per candidate.")
    swap_gender: bool = option(
        True, label="Swap gendered words (binary word-pair list)", aliases=(("--no-gender-swap", False),),
        help="swap gendered words: he/she, actor/actress (default: on)",
        more="Each word naming a person's gender is replaced by its counterpart with the bundled WinoBias and "
        "GN-GloVe pairs, in edited and untouched sentences alike. Not swapped: a text that names a person (spaCy's "
        "entity recogniser), names (\"Stephen King\"), verbs (\"miss it\"), exclamations (\"Oh boy\"), idioms, the "
        "deity, and pairs that name no person of either gender (not_swapped.txt).")
    fields: tuple[str, ...] | None = option(
        None, label="Fields:", gui=None, kind=tuple,
        help="comma-separated fields to edit (default: text, or a pair's hypothesis)",
        more="The premise of a pair is kept as the context that the new hypothesis must relate to differently.")
    task: str | None = option(None, label="Task:", gui=None, kind=str,
                              help="task description for the prompts (default: guessed from the labels)")
    edit_polar: float = option(
        0.8, label="Edit sentences read as original, P ≥", modes=_EDIT, minimum=0.0, maximum=1.0, step=0.05,
        off="off", help="also edit sentences read alone as the original label (default 0.8; 0: off)",
        more="Every sentence that the sentence reader, reading it alone, gives the original label (the members: with "
        "at least this probability; any length with the LLM reader, three words or more with the members, who "
        "misread short ones) is edited, even without a principal word: human editors change every sentence that "
        "carries the label. 0: only sentences holding principal words are edited.")
    edit_moved: float = option(
        0.25, label="Repair edits that did not move, gain <", modes=_EDIT, minimum=0.0, maximum=1.0, step=0.05,
        off="off", help="repair once an edit not read as the target, risen less than this (default 0.25; 0: off)",
        more="An edited sentence the sentence reader still does not give the target (P < 0.5) whose target "
        "probability rose by less than this is sent back once, saying it still reads as the original label (a "
        "small model often answers a synonym, \"tired\" → \"weary\"); the repair is kept only when it reads more "
        "as the target. 0: off, and the labels' word z-statistics test the direction instead.")
    edit_fresh: bool = option(
        True, label="Try an unusable or unmoved edit once more, in a fresh conversation", modes=_EDIT,
        help="retry an unusable or unmoved edit in a fresh conversation (default: on)",
        more="A sentence whose edit and repair were both unusable, or that the sentence reader still reads as "
        "unmoved, gets one more request with a new seed (about one sentence in four with the bundled model).")
    edit_opinion: bool = option(
        True, label="Ask which words carry the opinion of a sentence read as original", modes=_EDIT,
        aliases=(("--no-opinion-words", False),),
        help="ask which words carry a sentence's original label (default: on)",
        more="For each sentence read as the original label, the LLM marks the words that make it so (one short "
        "request each); they are named to change instead of the principal words, and a spurious word among them "
        "may change too (recorded with the candidate, not held against it).")
    edit_swap: bool = option(
        True, label="Swap each opinion phrase for its opposite where every edit failed", modes=_EDIT, needs=_OPINION,
        aliases=(("--no-phrase-swap", False),),
        help="swap the marked phrases for their opposites where every edit failed (default: on)",
        more="A sentence that still reads as the original label after every edit gets one more try: the LLM gives "
        "the opposite of each marked phrase, which replaces it in the sentence as written (every other word stays), "
        "kept only when the sentence then reads more as the target.")
    edit_remove: bool = option(
        True, label="Remove a sentence still read as original after every try", modes=_EDIT,
        aliases=(("--keep-stubborn", False),),
        help="remove a sentence still read as the original label after every try (default: on)",
        more="A sentence read as the original label with no usable edit after every try (\"Very recommendable.\" "
        "sent back unchanged) is removed, as human editors often do, when it holds no word to keep, another "
        "sentence was edited and at most a third of the sentences go. Off: it stays and the residual check counts "
        "it.")
    edit_triples: bool = option(
        False, label="Also edit sentences holding a principal triple (one more LLM request per sentence)",
        modes=_EDIT, help="also edit the sentences holding a principal triple (default: off)",
        more="Extracts the fact triples of every sentence first (one request per sentence, as the reconstruct mode "
        "does) and edits the sentences whose triples hold a principal word; off, sentences are chosen by their "
        "principal words, ratings and the sentence reader, and no triple request is sent.")
    demonstrations: int = option(
        2, label="Demonstrations per edit:", modes=_EDIT, minimum=0, maximum=8, off="off", later=True,
        help="human pairs or accepted candidates shown as examples in each sentence edit request (default 2; 0: off)",
        more="The sentence edits of the dataset's demonstration pairs (imported with 'counterbias demos import', "
        "and every candidate accepted in review) nearest to the sentence being edited, going the same way, replace "
        "the prompt's invented examples in its first request. The pool is read again before each chunk. Without "
        "pairs the invented examples stay.")
    sentence_reader: str = option(
        "llm", label="Sentences read by:", modes=_EDIT,
        items=(("llm", "The LLM (one short request per sentence)"), ("members", "The ensemble members")),
        help="who reads single sentences: llm (default) or members",
        more="The reader finds the sentences that speak for the original label (edit_polar), sees whether an edit "
        "moved (edit_moved) and holds back candidates with a sentence still read as the original label (the "
        "residual check; not with the members). The LLM: one short cached request per distinct sentence. The "
        "members are trained on whole texts and misread short sentences.")

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise GenerationConfigError(f"Unknown generation mode {self.mode!r}.", "Use 'edit' or 'reconstruct'.")
        if self.samples < 1 or self.samples > 50:
            raise GenerationConfigError(f"samples must be 1-50, got {self.samples}.", "Use e.g. 1 to 5 samples.")
        if not 0.0 <= self.drop_prob < 1.0:
            raise GenerationConfigError(f"drop_prob {self.drop_prob} is out of range.", "Use a value in [0, 1), e.g. 0.1.")
        if not 0.0 <= self.temperature <= 2.0:
            raise GenerationConfigError(f"temperature {self.temperature} is out of range.", "Use 0 to 2.")
        if not 0.0 <= self.edit_polar <= 1.0:
            raise GenerationConfigError(f"edit_polar {self.edit_polar} is out of range.",
                                        "Use a probability in [0, 1], e.g. 0.8, or 0 to turn it off.")
        if not 0.0 <= self.edit_moved <= 1.0:
            raise GenerationConfigError(f"edit_moved {self.edit_moved} is out of range.",
                                        "Use a probability gain in [0, 1], e.g. 0.25, or 0 to turn it off.")
        from engine.counterbias.sentence_reading import SENTENCE_READERS

        if self.sentence_reader not in SENTENCE_READERS:
            raise GenerationConfigError(f"Unknown sentence reader {self.sentence_reader!r}.",
                                        "Use one of: " + ", ".join(SENTENCE_READERS.names()) + ".")
        if not 0 <= self.demonstrations <= 8:
            raise GenerationConfigError(f"demonstrations {self.demonstrations} is out of range.",
                                        "Use 0 (off) to 8 demonstrations per edit request.")
        if self.fields is not None:
            object.__setattr__(self, "fields", tuple(self.fields))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GenerateSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def validate(self, explicit: Sequence[str] = ()) -> GenerateSettings:
        """Refuse an option set where it has no effect (``generate`` calls this before anything is sent).

        An option that cannot take effect with the other settings (its mode is not chosen, or an option it needs
        is off) is refused when it differs from its default, or when it is named in ``explicit`` (the options a
        user gave, e.g. on the command line); at its default it is simply not used. Returns ``self``.

        Raises
        ------
        GenerationConfigError
            Naming the first such option and why it has no effect.
        """
        given = set(explicit)
        for name, why in inactive_options(self.to_dict()).items():
            declared = OPTIONS[name]
            value = getattr(self, name)
            if name in given or value != declared.default:
                raise GenerationConfigError(
                    f"Option {name} ({declared.flag}) = {value!r} has no effect: {why}.",
                    f"Leave {declared.flag} out, or {_enable_hint(declared)}.")
        return self

    def effective_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` with every option that takes no effect at its default (what :meth:`key` hashes)."""
        data = self.to_dict()
        for name in inactive_options(data):
            data[name] = OPTIONS[name].default
        for name, declared in OPTIONS.items():
            if declared.later and data[name] == declared.default:
                del data[name]
        data.update(RETIRED)
        return data

    def key(self) -> str:
        """Identity of what is generated (16 hex digits): resume skips candidates with this key.

        Only the options that take effect count: settings differing in an option without effect share a key
        (the hash of :meth:`effective_dict`, so default settings keep the key they always had).
        """
        raw = json.dumps(self.effective_dict(), sort_keys=True, default=list)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    @property
    def uses_triples(self) -> bool:
        """Whether generation needs the examples' fact triples (reconstruct mode, or edit mode with ``edit_triples``)."""
        return self.mode == "reconstruct" or self.edit_triples

    def edit_fields(self, task: str) -> tuple[str, ...]:
        if self.fields:
            allowed = ("premise", "hypothesis") if task == "pair" else ("text",)
            bad = [f for f in self.fields if f not in allowed]
            if bad:
                raise GenerationConfigError(f"Cannot edit field(s) {bad} of a {task} dataset.",
                                            f"Choose among: {', '.join(allowed)}.")
            return self.fields
        return ("hypothesis",) if task == "pair" else ("text",)

    def task_description(self, labels: Sequence[str]) -> str:
        if self.task:
            return self.task
        lower = {label.lower() for label in labels}
        if lower & {"entailment", "contradiction", "neutral"}:
            return "natural language inference: how the hypothesis relates to the premise"
        if lower & {"positive", "negative", "pos", "neg"}:
            return "sentiment of a review"
        return "text classification"


#: The declared options by name, in declaration order (each :class:`Option` with its name, default and type).
OPTIONS: dict[str, Option] = {
    f.name: dataclasses.replace(f.metadata["option"], name=f.name, default=f.default,
                                kind=f.metadata["option"].kind if f.metadata["option"].kind is not object
                                else type(f.default))
    for f in dataclasses.fields(GenerateSettings)
}


def _on(value: Any) -> bool:
    return bool(value) and value != 0


def inactive_options(values: Mapping[str, Any]) -> dict[str, str]:
    """The options that take no effect with ``values`` (option name → value; missing: the default), and why.

    An option takes no effect in a mode it is not declared for, or while an option it needs is off (false,
    or a threshold at 0) or itself takes no effect.
    """
    values = {name: values.get(name, o.default) for name, o in OPTIONS.items()}
    out: dict[str, str] = {}
    for name, declared in OPTIONS.items():
        if values["mode"] not in declared.modes:
            out[name] = f"it applies to the {' and '.join(declared.modes)} mode only, not {values['mode']!r}"
            continue
        off = [n for n in declared.needs if n in out or not _on(values[n])]
        if off:
            out[name] = "it needs " + " and ".join(f"{n} ({OPTIONS[n].flag})" for n in off)
    return out


def _enable_hint(declared: Option) -> str:
    parts = []
    if len(declared.modes) < len(MODES):
        parts.append(f"use --mode {declared.modes[0]}")
    parts += [f"turn {OPTIONS[n].flag} on" for n in declared.needs]
    return " and ".join(parts) or "change the options it depends on"
