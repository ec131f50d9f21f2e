"""Sentence readers of edit mode: which label does one sentence, read on its own, speak for?

Edit mode reads single sentences three times: to choose the sentences to edit beyond those
holding a principal word (``edit_polar``: "This movie really blows" holds no principal word but
keeps a review Negative), to see whether an edit moved its sentence to the target
(``edit_moved``), and to find, in the finished candidate, the sentences that still speak for the
original label (the ``residual`` verification check). A reader is a callable
``polar(sentences, label) -> [float]`` — how much each sentence reads as ``label`` (NaN: no
verdict, which compares false with every threshold) — registered in :data:`SENTENCE_READERS`:

``llm`` (default)
    The generating LLM, one short request per distinct sentence (prompt ``read_sentence``; about
    half a second each with the bundled model on 2 cores, and cached like every answer): 1.0 when
    it names ``label``, 0.0 when it names another label, 0.5 when it names none. On 50 CAD
    candidates read one by one by a person, "no sentence still read as the original label" (with a
    first version of the prompt) passed 3 of the 4 fully flipped, fluent candidates and failed 21
    of the 22 partly flipped ones, where the members' and VADER's sentence readings did not
    separate them.
``members``
    The mean probability of ``label`` by the judge members (trained on whole texts; they misread
    short sentences and ratings). It gives no residual reading.

The LLM's answer is untrusted data: it counts only when it is exactly one label name or the word
for none (``Answer:`` prefixes, quotes and a full stop stripped); otherwise it is asked once more
with a reminder, and a second unusable answer is no verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from engine.errors import CounterbiasError
from engine.registry import Registry

if TYPE_CHECKING:
    from engine.llm.cache import CachedClient
    from engine.progress import CancelToken, ProgressFn
    from engine.store.project import Project

__all__ = ["LLMAsker", "LLMReader", "MIN_WORDS_MEMBERS", "READER_PROMPTS", "SENTENCE_READERS", "ReadsAhead",
           "SentenceReader", "UnknownReaderError", "create_reader", "members_polar", "none_word", "reads_ahead",
           "residual_sentences", "shortest_read"]


class SentenceReader(Protocol):
    """A reader: ``reader(sentences, label) -> [how much each reads as label]`` (NaN: no verdict)."""

    def __call__(self, sentences: Sequence[str], label: str) -> list[float]: ...


@runtime_checkable
class ReadsAhead(Protocol):
    """A reader that reads a batch of sentences ahead of its calls (:meth:`read`, answers kept), says which sentences
    it could not read (:meth:`failure_for`), and whether its reading makes the ``residual`` check: :class:`LLMReader`.
    A reader without these (the members' reading) is a plain :class:`SentenceReader`."""

    checks_residual: bool
    min_words: int

    def __call__(self, sentences: Sequence[str], label: str) -> list[float]: ...

    def read(self, sentences: Sequence[str], progress: ProgressFn | None = None) -> list[str | None]: ...

    def failure_for(self, sentences: Sequence[str]) -> Any: ...


def reads_ahead(reader: Any) -> TypeGuard[ReadsAhead]:
    """Whether ``reader`` is a :class:`ReadsAhead` reader."""
    return isinstance(reader, ReadsAhead)


def shortest_read(reader: Any) -> int:
    """The fewest words of a sentence the reader's reading chooses for an edit (:data:`MIN_WORDS_MEMBERS` unless the
    reader says otherwise)."""
    return reader.min_words if reads_ahead(reader) else MIN_WORDS_MEMBERS


class UnknownReaderError(CounterbiasError):
    """No sentence reader of that name."""

    code = "CB805"


#: Request parameters of a reading: greedy, a word or two.
READ_PARAMS = {"temperature": 0.0, "max_tokens": 6, "seed": 0}


def none_word(labels: Sequence[str]) -> str:
    """The answer meaning "no label": ``none``, or ``no-label`` when a label is called none.

    Examples
    --------
    >>> none_word(["Negative", "Positive"]), none_word(["None", "Spam"])
    ('none', 'no-label')
    """
    return "no-label" if any(str(label).lower() == "none" for label in labels) else "none"


class LLMAsker:
    """What edit mode's short LLM questions about one sentence share: the cached client, the labels and the word for
    none, the task description, the cancel token and the prompt :attr:`prompt_name`.

    Parameters
    ----------
    client
        The generation's cached client (answers stored in the project like every other).
    labels
        The dataset's labels.
    task
        The task description the generation prompts use.
    cancel
        The job's cancel token.
    """

    prompt_name = ""

    def __init__(self, client: CachedClient, labels: Sequence[str], task: str, cancel: CancelToken | None = None):
        from engine.llm.prompts import load_prompt

        self.client = client
        self.labels = [str(label) for label in labels]
        self.none = none_word(self.labels)
        self.task = task
        self.cancel = cancel
        self._prompt = load_prompt(self.prompt_name)


class LLMReader(LLMAsker):
    """Reads sentences with the LLM (see the module doc); answers are cached per sentence. Parameters as
    :class:`LLMAsker`."""

    checks_residual = True
    prompt_name = "read_sentence"
    #: Sentences this short are read too: the LLM reads "Very recommendable." or "Avoid." as well as a long one (the
    #: members, trained on whole texts, do not; see :data:`MIN_WORDS_MEMBERS`).
    min_words = 1

    def __init__(self, client: CachedClient, labels: Sequence[str], task: str, cancel: CancelToken | None = None):
        super().__init__(client, labels, task, cancel)
        self._read: dict[str, str | None] = {}
        #: Sentences whose reading failed in transport (``sentence -> Failure``): not sent again by this reader (like
        #: any failed request of a run); a slot that needed one fails retriably (:meth:`failure_for`), and the next
        #: run sends only those.
        self.failed: dict[str, Any] = {}

    def _messages(self, sentence: str) -> list[dict[str, str]]:
        return self._prompt.render(task=self.task, labels=", ".join(self.labels), none=self.none, sentence=sentence)

    def _parse(self, answer: str) -> str | None:
        from engine.llm.label_answer import parse_label

        return parse_label(answer, [*self.labels, self.none])

    def read(self, sentences: Sequence[str], progress: ProgressFn | None = None) -> list[str | None]:
        """The label each sentence speaks for, :attr:`none` for none, ``None`` for no verdict (``progress`` follows
        the first requests of the sentences not read yet)."""
        from engine.llm.base import ChatRequest, ChatResult
        from engine.progress import no_progress

        todo = list(dict.fromkeys(s for s in sentences if s and s not in self._read and s not in self.failed))
        if todo:
            messages = [self._messages(s) for s in todo]
            first = self.client.chat_many([ChatRequest(m, dict(READ_PARAMS)) for m in messages],
                                          progress=progress or no_progress, cancel=self.cancel).results
            found = [self._parse(a.text) if isinstance(a, ChatResult) else None for a in first]
            again = [i for i, (a, f) in enumerate(zip(first, found, strict=True))
                     if f is None and isinstance(a, ChatResult)]
            if again:
                from engine.llm.label_answer import ask_again

                second = self.client.chat_many(
                    [ChatRequest(ask_again(messages[i], first[i].text, [*self.labels, self.none]), dict(READ_PARAMS))
                     for i in again], cancel=self.cancel).results
                for i, answer in zip(again, second, strict=True):
                    found[i] = self._parse(answer.text) if isinstance(answer, ChatResult) else None
            for sentence, answer, read in zip(todo, first, found, strict=True):
                if isinstance(answer, ChatResult):
                    self._read[sentence] = read
                else:
                    self.failed[sentence] = answer
        return [self._read.get(s) if s else None for s in sentences]

    def failure_for(self, sentences: Sequence[str]) -> Any:
        """The transport failure of the first of ``sentences`` whose reading failed, or ``None``."""
        return next((self.failed[s] for s in sentences if s in self.failed), None)

    def __call__(self, sentences: Sequence[str], label: str) -> list[float]:
        out = []
        for read in self.read(sentences):
            out.append(float("nan") if read is None else 0.5 if read == self.none else float(read == label))
        return out

    def residual(self, sentences: Sequence[str], label: str) -> list[str]:
        """The sentences that still speak for ``label``."""
        return [s for s, read in zip(sentences, self.read(sentences), strict=True) if read == label]


def residual_sentences(reader: LLMReader, items: Sequence[tuple[str, str]]) -> list[list[str]]:
    """For each ``(text, original label)``: the sentences of ``text`` that ``reader`` reads as that label (one
    batch of requests per label; sentences read before come from the reader's memory or the cache)."""
    from engine.text.sentences import split_sentences

    split = [split_sentences(text or "") for text, _ in items]
    out: list[list[str]] = [[] for _ in items]
    for label in dict.fromkeys(str(label) for _, label in items):
        mine = [i for i, (_, own) in enumerate(items) if str(own) == label]
        left = set(reader.residual([s for i in mine for s in split[i]], label))
        for i in mine:
            out[i] = [s for s in split[i] if s in left]
    return out


def _llm(project: Project, client: CachedClient, members: Sequence[str], labels: Sequence[str], task: str,
         cancel: CancelToken) -> LLMReader:
    return LLMReader(client, labels, task, cancel)


#: The shortest sentence (in words) the members' reading chooses for an edit: they misread short ones.
MIN_WORDS_MEMBERS = 3


def members_polar(project: Project, members: Sequence[str], token: CancelToken) -> Any:
    """``polar(sentences, label) -> mean member probability of label`` for each sentence read alone (``None``
    without a single-text member)."""
    from engine.models.predict import predict
    from engine.models.store import get_model

    import numpy as np

    infos = {m: get_model(project, m) for m in members}
    single = [m for m, info in infos.items() if list(info.fields) == ["text"]]
    if not single:
        return None

    def polar(sentences: Sequence[str], label: str) -> list[float]:
        if not sentences:
            return []
        total = np.zeros(len(sentences))
        for name in single:
            labels = list(infos[name].labels)
            if label not in labels:  # no verdict: compares false with any threshold
                return [float("nan")] * len(sentences)
            total += predict(project, name, list(sentences), cancel=token)[:, labels.index(label)]
        return list(total / len(single))

    return polar


def _members(project: Project, client: CachedClient, members: Sequence[str], labels: Sequence[str], task: str,
             cancel: CancelToken) -> Any:
    """The judge members' mean probability (``None`` without single-text members: no reading)."""
    return members_polar(project, members, cancel) if members else None


#: The prompts each reader of :data:`SENTENCE_READERS` sends (recorded in a run's parameters).
READER_PROMPTS: dict[str, tuple[str, ...]] = {"llm": ("read_sentence",), "members": ()}

#: ``name -> factory(project, client, members, labels, task, cancel) -> polar callable or None``.
SENTENCE_READERS: Registry[Any] = Registry("sentence reader", UnknownReaderError,
                                           builtins={"llm": "engine.counterbias.sentence_reading:_llm",
                                                     "members": "engine.counterbias.sentence_reading:_members"})


def create_reader(name: str, project: Project, client: CachedClient, members: Sequence[str], labels: Sequence[str],
                  task: str, cancel: CancelToken) -> Any:
    """The reader called ``name`` (see :data:`SENTENCE_READERS`), or ``None`` when it cannot read."""
    return SENTENCE_READERS.get(name)(project, client, members, labels, task, cancel)
