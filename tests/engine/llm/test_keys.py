"""API keys that never show."""

from __future__ import annotations

import pytest

from engine.llm.errors import MissingAPIKeyError
from engine.llm.keys import NO_KEY, Secret, redact, resolve_api_key


def test_key_from_environment(monkeypatch):
    monkeypatch.setenv("CB_TEST_KEY", " sk-test-1234567890 ")
    secret = resolve_api_key("CB_TEST_KEY")
    assert secret.reveal() == "sk-test-1234567890"
    assert "1234567890" not in repr(secret) and "1234567890" not in str(secret)
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(secret)
    assert resolve_api_key(None).reveal() == NO_KEY


@pytest.fixture
def memory_keyring():
    """The real ``keyring`` API over an in-memory backend; the previous backend is restored."""
    keyring = pytest.importorskip("keyring")
    from keyring.backend import KeyringBackend

    store: dict[tuple[str, str], str] = {}

    class Memory(KeyringBackend):
        priority = 1

        def get_password(self, service, username):
            return store.get((service, username))

        def set_password(self, service, username, password):
            store[(service, username)] = password

        def delete_password(self, service, username):
            store.pop((service, username), None)

    previous = keyring.get_keyring()
    keyring.set_keyring(Memory())
    yield keyring
    keyring.set_keyring(previous)


def test_missing_key_says_what_to_do(monkeypatch, memory_keyring):
    monkeypatch.delenv("CB_ABSENT_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError) as info:
        resolve_api_key("CB_ABSENT_KEY")
    assert "CB_ABSENT_KEY" in info.value.message and "export CB_ABSENT_KEY" in info.value.hint


def test_key_from_the_keyring(monkeypatch, memory_keyring):
    monkeypatch.delenv("CB_RING_KEY", raising=False)
    memory_keyring.set_password("counterbias-studio", "CB_RING_KEY", "ring-secret-value")
    assert resolve_api_key("CB_RING_KEY").reveal() == "ring-secret-value"


def test_redact_masks_keys_and_bearer_tokens():
    key = Secret("abc-very-secret-xyz")
    text = "bad key abc-very-secret-xyz; header 'Bearer tok_1234567890'; also sk-proj-AAAABBBBCCCC"
    out = redact(text, key)
    assert "very-secret" not in out and "tok_1234567890" not in out and "AAAABBBB" not in out
    assert out.count("***") == 3
