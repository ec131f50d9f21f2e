"""The one registry type: lazy built-ins, the register decorator, named errors, no duplicates."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from engine.errors import CounterbiasError
from engine.registry import DuplicateNameError, Registry

REPO = Path(__file__).resolve().parents[2]


class WidgetNotFoundError(CounterbiasError):
    code = "CB999"


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A real package on ``sys.path``: a host module holding a registry and two plugin modules.

    ``plug_a`` registers ``"a"`` with the decorator when imported; ``plug_b`` only defines
    ``Bee``, declared as ``"plug_b:Bee"``; ``plug_c`` forgets to register ``"c"``.
    """
    name = f"cb_plugins_{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "host.py").write_text(
        "from engine.registry import Registry\n"
        "from tests.engine.test_registry import WidgetNotFoundError\n"
        f"REG = Registry('widget', WidgetNotFoundError, builtins={{'a': '{name}.plug_a', "
        f"'b': '{name}.plug_b:Bee', 'c': '{name}.plug_c'}})\n"
    )
    (pkg / "plug_a.py").write_text(f"from {name}.host import REG\n\n@REG.register('a')\nclass A:\n    pass\n")
    (pkg / "plug_b.py").write_text("class Bee:\n    def __init__(self, size=1):\n        self.size = size\n")
    (pkg / "plug_c.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def test_builtins_are_imported_only_when_looked_up(plugins):
    import importlib

    reg = importlib.import_module(f"{plugins}.host").REG
    assert reg.names() == ["a", "b", "c"] and "a" in reg and "b" in reg and "zzz" not in reg
    assert len(reg) == 3 and list(reg) == ["a", "b", "c"]
    assert f"{plugins}.plug_a" not in sys.modules and f"{plugins}.plug_b" not in sys.modules
    a = reg.get("a")
    assert a.__name__ == "A" and f"{plugins}.plug_a" in sys.modules
    assert f"{plugins}.plug_b" not in sys.modules
    bee = reg.create("b", size=3)
    assert type(bee).__name__ == "Bee" and bee.size == 3 and f"{plugins}.plug_b" in sys.modules
    assert reg.get("a") is a  # imported once
    with pytest.raises(ImportError, match="did not register the widget 'c'"):
        reg.get("c")


def test_unknown_name_raises_the_named_error_listing_every_name():
    reg = Registry("widget", WidgetNotFoundError, builtins={"beta": "fractions:Fraction"})
    reg.register("alpha", dict)
    with pytest.raises(WidgetNotFoundError) as info:
        reg.get("gamma")
    assert info.value.code == "CB999"
    assert "gamma" in info.value.message and info.value.hint == "Use one of: alpha, beta."


def test_register_decorator_and_direct_registration():
    seen = []
    reg: Registry = Registry("widget", WidgetNotFoundError, on_register=lambda n, e: seen.append((n, e)))

    @reg.register("double")
    def double(x):
        return 2 * x

    assert double(2) == 4  # the decorator returns the function unchanged
    assert reg.register("triple", lambda x: 3 * x)(1) == 3
    assert reg.names() == ["double", "triple"] and reg.create("double", 5) == 10
    assert reg.load_all() == {"double": double, "triple": reg.get("triple")}
    assert [n for n, _ in seen] == ["double", "triple"]
    with pytest.raises(ValueError):
        reg.register("")


def test_duplicate_registration_is_refused():
    reg = Registry("widget", WidgetNotFoundError, builtins={"fraction": "fractions:Fraction"})

    class One:
        pass

    class Other:
        pass

    reg.register("one", One)
    reg.register("one", One)  # the same object again: harmless
    with pytest.raises(DuplicateNameError, match="already registered"):
        reg.register("one", Other)
    with pytest.raises(DuplicateNameError, match="built-in of fractions:Fraction"):
        reg.register("fraction", Other)  # a built-in name, from another module
    assert reg.get("one") is One and reg.get("fraction").__name__ == "Fraction"


def test_concurrent_first_lookups_get_the_same_entry(plugins):
    import importlib

    reg = importlib.import_module(f"{plugins}.host").REG
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(reg.get("a"))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(g) for g in got}) == 1


def test_the_engine_registries_import_their_built_ins_lazily():
    # (engine.attribution's package imports its three methods to export their settings classes.)
    code = (
        "import sys\n"
        "from engine.llm.registry import BACKENDS, backend_names\n"
        "from engine.models.registry import BACKBONES\n"
        "from engine.attribution.registry import METHODS\n"
        "from engine.cli.commands import COMMANDS\n"
        "names = (backend_names(), 'minilm-l6' in BACKBONES, METHODS.names(), len(COMMANDS))\n"
        "lazy = ['engine.llm.openai_backend', 'engine.llm.local_backend', 'engine.models.backbones',\n"
        "        'engine.cli.stats', 'engine.cli.generate']\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "BACKENDS.get('openai'); BACKBONES.get('tiny-electra'); METHODS.get('lime'); COMMANDS.get('zfilter')\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "print(sorted({'openai', 'torch', 'transformers', 'captum'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    before, after, heavy = out.stdout.strip().splitlines()
    assert before == "[]"
    assert after == str(["engine.cli.stats", "engine.llm.openai_backend", "engine.models.backbones"])
    assert heavy == "[]"


@pytest.mark.parametrize(
    ("lookup", "error", "listed"),
    [
        ("engine.llm.registry:get_backend_factory", "BackendNotFoundError", "local, openai"),
        ("engine.attribution.registry:get_method", "UnknownMethodError", "ig, lime, shapley"),
        ("engine.models.registry:get_backbone", "UnknownBackboneError", "minilm-l6"),
    ],
)
def test_each_engine_registry_names_its_valid_entries(lookup, error, listed):
    import importlib

    module, _, function = lookup.partition(":")
    with pytest.raises(CounterbiasError) as info:
        getattr(importlib.import_module(module), function)("no-such-thing")
    assert type(info.value).__name__ == error
    assert "'no-such-thing'" in info.value.message and listed in info.value.hint


def test_a_built_in_backbone_name_cannot_be_taken_over():
    from engine.models.backbone import Backbone
    from engine.models.registry import BACKBONES, register_backbone

    original = BACKBONES.get("minilm-l6")
    with pytest.raises(DuplicateNameError):

        @register_backbone("minilm-l6")
        class Impostor(Backbone):
            pass

    assert BACKBONES.get("minilm-l6") is original and original.name == "minilm-l6"
