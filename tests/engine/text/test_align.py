"""Offset-based alignment gives the same words under WordPiece, byte-level BPE and MPNet tokenizers."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.text import align_tokens, segment, token_to_word_scores
from tests.engine.models.fixtures import CAD, need_cad

TEXTS = [
    "I didn't like the café — it's well-made, but 3.5/10!! 😀👍🏽",
    "Naïve, cafe\u0301-goers won't LOVE it... <br /><br />The end.",
    "Rock'n'roll’s   back (sort of): “amazing” 🇫🇷 résumé",
]


@pytest.fixture(scope="module")
def tokenizers() -> dict:
    """BERT WordPiece (MiniLM), a locally trained RoBERTa byte-level BPE, and MPNet."""
    need_cad()
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    from engine.models import get_backbone

    with open(CAD / "sentiment" / "orig" / "dev.tsv", encoding="utf-8", newline="") as f:
        corpus = [row["Text"] for row in csv.DictReader(f, delimiter="\t")]
    bpe = ByteLevelBPETokenizer(add_prefix_space=True, trim_offsets=True)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(corpus, vocab_size=1500, min_frequency=2, special_tokens=specials)
    bpe._tokenizer.post_processor = processors.RobertaProcessing(
        ("</s>", bpe.token_to_id("</s>")), ("<s>", bpe.token_to_id("<s>")), trim_offsets=True, add_prefix_space=True
    )
    roberta = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>", mask_token="<mask>", cls_token="<s>", sep_token="</s>",
    )
    return {
        "wordpiece": get_backbone("minilm-l6").load_tokenizer(),
        "bytelevel-bpe": roberta,
        "mpnet": get_backbone("mpnet-base").load_tokenizer(),
    }


def _align(tok, text: str):
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    return enc, align_tokens(segment(text), enc["offset_mapping"], special_mask=enc["special_tokens_mask"])


@pytest.mark.parametrize("text", TEXTS)
def test_every_word_is_covered_by_every_tokenizer_family(tokenizers: dict, text: str) -> None:
    words = segment(text)
    for name, tok in tokenizers.items():
        enc, al = _align(tok, text)
        assert al.words == tuple(words), name
        uncovered = [w.text for w, ok in zip(words, al.covered) if not ok]
        assert not uncovered, f"{name} left {uncovered} without a token"
        # special tokens never align
        assert all(g == -1 for g, s in zip(al.token_group, enc["special_tokens_mask"]) if s), name


def test_tokens_land_on_the_word_they_overlap(tokenizers: dict) -> None:
    text = "It's unbelievably well-made"
    for name, tok in tokenizers.items():
        enc, al = _align(tok, text)
        for t, (a, b) in enumerate(enc["offset_mapping"]):
            g = al.token_group[t]
            if g < 0:
                continue
            word = al.words[int(np.flatnonzero(al.word_group == g)[0])]
            assert a < word.end and word.start < b, (name, text[a:b], word.text)
        # three words, three groups: the pieces of each word stay together
        assert al.n_groups == 3 and list(al.group_size) == [1, 1, 1], name


def test_a_token_spanning_two_words_merges_them_into_one_group(tokenizers: dict) -> None:
    # BERT keeps the two emoji in one [UNK]; byte-level BPE splits them.
    _, bert = _align(tokenizers["wordpiece"], "fun 😀👍")
    _, bpe = _align(tokenizers["bytelevel-bpe"], "fun 😀👍")
    assert list(bert.word_group) == [0, 1, 1] and list(bert.group_size) == [1, 2]
    assert list(bpe.word_group) == [0, 1, 2]


def test_sum_aggregation_preserves_the_total(tokenizers: dict) -> None:
    text = TEXTS[0]
    for name, tok in tokenizers.items():
        enc, al = _align(tok, text)
        rng = np.random.default_rng(0)
        token_scores = rng.normal(size=len(enc["input_ids"]))
        words = token_to_word_scores(al, token_scores)
        assert np.isclose(np.nansum(words), token_scores[al.token_group >= 0].sum()), name


def test_truncation_leaves_the_tail_uncovered(tokenizers: dict) -> None:
    text = "one two three four five six seven eight"
    tok = tokenizers["wordpiece"]
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=True, max_length=5)
    al = align_tokens(segment(text), enc["offset_mapping"], special_mask=enc["special_tokens_mask"])
    assert al.n_covered_prefix == 3
    assert np.isnan(token_to_word_scores(al, np.ones(len(enc["input_ids"])))[3:]).all()


def test_pair_alignment_uses_sequence_ids(tokenizers: dict) -> None:
    tok = tokenizers["mpnet"]
    premise, hypothesis = "A man sleeps.", "Nobody sleeps."
    enc = tok(premise, hypothesis, return_offsets_mapping=True, return_special_tokens_mask=True)
    seq = enc.sequence_ids()
    a = align_tokens(segment(premise), enc["offset_mapping"], special_mask=enc["special_tokens_mask"], sequence_ids=seq, sequence=0)
    b = align_tokens(segment(hypothesis), enc["offset_mapping"], special_mask=enc["special_tokens_mask"], sequence_ids=seq, sequence=1)
    assert a.covered.all() and b.covered.all()
    assert not np.any((a.token_group >= 0) & (b.token_group >= 0))
