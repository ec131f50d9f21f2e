"""CF-DPR: a counterfactual retriever trained on real CAD pairs, reopened as a corpus encoder, and its CLI verb.

The retriever is trained once per session (200 changed CAD sentences, one epoch on the bundled MiniLM-L6)
and scored on 100 other pairs against the untrained encoder.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.engine.retrieval.conftest import SHARED_DATA, need_data

CAD = SHARED_DATA / "cad" / "sentiment"
MAX_LENGTH = 48

_MEMO: dict[str, Any] = {}


def _pairs() -> tuple[list, list]:
    from engine.retrieval.pairs import cad_seed_pairs, split_pairs

    if "pairs" not in _MEMO:
        _MEMO["pairs"] = split_pairs(cad_seed_pairs(CAD, limit=300), holdout=1 / 3, seed=0)
    return _MEMO["pairs"]


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    """One torch thread for the duration: on a busy 2-core machine (tests run beside other jobs) two
    threads wait on each other; one trains these 13 steps about 2.5 times faster (measured: 58 s vs 157 s)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A project whose files folder holds retriever ``cad`` trained on 200 pairs, with the timings and scores."""
    need_data()
    if "trained" not in _MEMO:
        from engine.retrieval.dpr import evaluate_retriever, retriever_dir, train_retriever
        from engine.retrieval.encoders import make_encoder
        from engine.store import Project

        train, held_out = _pairs()
        path = tmp_path_factory.mktemp("dpr") / "p.cbproj"
        with Project.create(path) as project:
            folder = retriever_dir(project, "cad")
        steps: list[str] = []
        with _one_thread():
            started = time.perf_counter()
            done = train_retriever(train, out_dir=folder, epochs=1, batch_size=16, max_length=MAX_LENGTH,
                                   progress=lambda f, m="": steps.append(m))
            trained_at = time.perf_counter()
            before = evaluate_retriever(make_encoder("minilm-l6", max_length=MAX_LENGTH), held_out)
            after = evaluate_retriever(make_encoder("trained", path=folder, max_length=MAX_LENGTH), held_out)
        _MEMO["trained"] = {"project": path, "folder": folder, "done": done, "before": before, "after": after,
                            "steps": steps, "train_s": trained_at - started,
                            "eval_s": time.perf_counter() - trained_at}
    return _MEMO["trained"]


def test_cad_seed_pairs_are_changed_sentences_with_the_original_label():
    need_data()
    from engine.retrieval.pairs import cad_seed_pairs

    pairs = cad_seed_pairs(CAD, limit=40)
    assert len(pairs) == 40
    assert pairs[0] == ("Long, boring, blasphemous.", "Long, fascinating, soulful.", "Negative")
    assert all(q != p and label in ("Positive", "Negative") for q, p, label in pairs)
    reviews = cad_seed_pairs(CAD / "combined" / "paired" / "dev_paired.tsv", split="dev", level="review")
    assert len(reviews) == 245  # every dev pair: none is identical or broken
    assert {label for _, _, label in reviews} == {"Positive", "Negative"}


def test_training_beats_the_untrained_encoder_on_held_out_pairs(trained):
    done, before, after = trained["done"], trained["before"], trained["after"]
    print(f"\nCF-DPR on {before.pairs} held-out CAD pairs (trained on {done.pairs}, {done.steps} steps, "
          f"train {trained['train_s']:.1f} s, evaluate {trained['eval_s']:.1f} s)")
    print(f"  untrained minilm-l6: {before.to_dict()}")
    print(f"  trained:             {after.to_dict()}")
    assert (before.pairs, done.pairs, done.steps) == (100, 200, 13)
    # the query's own text always wins for the untrained encoder; the trained one prefers the counterfactual
    assert after.top1 > before.top1
    # over texts of other pairs, its nearest is more often of the other label
    assert after.opposite_top1 > before.opposite_top1
    assert trained["steps"][-1].startswith("saved to") and any("step 13/13" in m for m in trained["steps"])
    record = json.loads((trained["folder"] / "retriever.json").read_text())
    assert record["pairs"] == 200 and record["seed"] == 0 and record["base"] == "minilm-l6"
    assert record["settings"]["max_length"] == MAX_LENGTH and record["settings"]["hard_negatives"] is True


def test_trained_encoder_loads_through_the_registry(trained):
    from engine.retrieval.dpr import trained_retriever
    from engine.retrieval.encoders import encode_queries, make_encoder
    from engine.retrieval.errors import EncoderError, RetrieverNotFoundError
    from engine.store import Project

    encoder = make_encoder("trained", path=trained["folder"], max_length=MAX_LENGTH)
    texts = ["A dull, lifeless film.", "The cast is wonderful."]
    passages, queries = encoder.encode(texts), encode_queries(encoder, texts)
    assert passages.shape == queries.shape == (2, encoder.dimension)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    assert encoder.key.startswith("trained-") and encoder.key.endswith(f"-len{MAX_LENGTH}")
    assert encoder.key != make_encoder("minilm-l6", max_length=MAX_LENGTH).key
    with Project.open(trained["project"]) as project:
        assert trained_retriever(project, "cad") == trained["folder"]
        with pytest.raises(RetrieverNotFoundError) as info:
            trained_retriever(project, "nope")
        assert info.value.code == "CB965" and "cad" in info.value.hint
    with pytest.raises(EncoderError):
        make_encoder("trained", path=trained["folder"].parent)


def test_index_and_retrieve_with_a_trained_retriever(trained, tmp_path):
    from tests.engine.retrieval.conftest import need_faiss

    need_faiss()
    from engine.retrieval.corpus import import_corpus
    from engine.retrieval.index import build_index
    from engine.retrieval.encoders import make_encoder
    from engine.store import Project

    train, held_out = _pairs()
    source = tmp_path / "sentences.txt"
    source.write_text("\n".join(p for _, p, _ in held_out[:40]), encoding="utf-8")
    encoder = make_encoder("trained", path=trained["folder"], max_length=MAX_LENGTH)
    with Project.open(trained["project"]) as project:
        import_corpus(project, "cf", source)
        built = build_index(project, "cf", encoder, kind="flat")
        assert built.rows == 40 and built.key["encoder"] == encoder.key


def _cli(home: Path, *argv: str) -> tuple[int, str, str]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "COUNTERBIAS_HOME": str(home), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "engine", *argv], capture_output=True, text=True, env=env)
    return done.returncode, done.stdout, done.stderr


def test_cli_train_retriever(tmp_path):
    need_data()
    from engine.store import Project

    Project.create(tmp_path / "p.cbproj").close()
    pairs = tmp_path / "pairs.tsv"
    train, held_out = _pairs()
    rows = ["original\trevision\tlabel"] + [f"{q}\t{p}\t{lab}" for q, p, lab in (train[:24] + held_out[:6])]
    pairs.write_text("\n".join(rows) + "\n", encoding="utf-8")
    code, out, err = _cli(tmp_path, "train-retriever", str(tmp_path / "p.cbproj"), "small", "--pairs", str(pairs),
                          "--holdout", "0.2", "--max-length", "32", "--batch-size", "8", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["train_pairs"], result["held_out_pairs"], result["steps"]) == (24, 6, 3)
    for which in ("untrained", "trained"):
        assert 0.0 <= result[which]["top1"] <= 1.0 and result[which]["opposite_top1"] is not None
    assert Path(result["path"]) == tmp_path / "p_files" / "retrievers" / "small"
    assert result["encoder"].startswith("trained-")

    pytest.importorskip("faiss", reason="faiss-cpu (the ml extra) is not installed")
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(p for _, p, _ in held_out[:20]), encoding="utf-8")
    assert _cli(tmp_path, "corpus", str(tmp_path / "p.cbproj"), "cf", str(sentences))[0] == 0
    code, out, err = _cli(tmp_path, "index", str(tmp_path / "p.cbproj"), "cf", "--retriever", "small",
                          "--max-length", "32", "--json")
    assert code == 0, err
    assert json.loads(out)["encoder"] == result["encoder"] and json.loads(out)["rows"] == 20
    code, out, err = _cli(tmp_path, "index", str(tmp_path / "p.cbproj"), "cf", "--retriever", "nope")
    assert code == 3 and "CB965" in err
    code, out, err = _cli(tmp_path, "index", str(tmp_path / "p.cbproj"), "cf", "--encoder", "trained")
    assert code == 3 and "CB958" in err

    code, out, err = _cli(tmp_path, "train-retriever", str(tmp_path / "p.cbproj"), "x", "--pairs", str(tmp_path / "none.tsv"))
    assert code == 3 and "CB963" in err and "What to do" in err
    few = tmp_path / "few.tsv"
    few.write_text("query\tpositive\nbad\tgood\n", encoding="utf-8")
    code, out, err = _cli(tmp_path, "train-retriever", str(tmp_path / "p.cbproj"), "x", "--pairs", str(few))
    assert code == 3 and "CB964" in err
