"""One settings definition: the generation options are declared once, with their metadata, and ``generate --help``,
the LLM dialog and the stored GUI settings are built from it; an option without effect is refused; ``key()``
hashes only the options that take effect."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from engine.cli import main
from engine.cli.generate_options import generate_flags, settings_from_args
from engine.counterbias.settings import OPTIONS, GenerateSettings, GenerationConfigError, Option, inactive_options
from engine.errors import EXIT_USER_ERROR

#: ``GenerateSettings().key()`` at the commit before the declaration (981e9ff): resume finds the candidates every
#: existing project made with the default settings.
DEFAULT_KEY = "657e40aa64b71510"


def _generate_parser() -> argparse.ArgumentParser:
    from engine.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["generate"]


def _parse(*argv: str) -> argparse.Namespace:
    return _generate_parser().parse_args(["p.cbproj", "d", *argv])


def test_every_field_is_a_declared_option():
    fields = dataclasses.fields(GenerateSettings)
    assert all(isinstance(f.metadata.get("option"), Option) for f in fields)
    assert list(OPTIONS) == [f.name for f in fields]
    for name, declared in OPTIONS.items():
        assert declared.label and declared.help and set(declared.modes) <= {"edit", "reconstruct"}
        assert all(need in OPTIONS for need in declared.needs), name
        assert declared.default == getattr(GenerateSettings(), name)
        assert declared.cli in ("generate", "llm") and declared.gui in ("generation", "llm", None)


def test_generate_help_lists_exactly_the_declared_options_in_one_vocabulary():
    listed = generate_flags(_generate_parser())
    assert set(listed) == set(OPTIONS)
    for name, declared in OPTIONS.items():
        assert declared.flag == "--" + name.replace("_", "-")
        assert listed[name] == declared.flags(), name  # no other visible spelling (old flags are hidden)
    help_text = _generate_parser().format_help()
    for old in ("--release-at-once", "--keep-stubborn", "--no-phrase-swap", "--no-opinion-words",
                "--no-flip-repair", "--no-gender-swap"):
        assert old not in help_text


def test_the_llm_dialog_shows_a_widget_for_exactly_the_declared_gui_options(qtbot):
    from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QSpinBox

    from app.settings import DEFAULTS
    from widgets.llm_dialog import FIELDS, LLMDialog

    dialog = LLMDialog({"backend": "local", "model": "smollm2-135m"})
    qtbot.addWidget(dialog)
    gui = [name for name, declared in OPTIONS.items() if declared.gui is not None]
    shown = [name for name in FIELDS if name in OPTIONS]
    assert shown == gui
    assert {name for name in OPTIONS if OPTIONS[name].gui is None} == {"fields", "task", "max_tokens"}
    kinds = {bool: QCheckBox, int: QSpinBox, float: QDoubleSpinBox}
    for name in gui:
        declared = OPTIONS[name]
        widget = getattr(dialog, name)
        assert isinstance(widget, QComboBox if declared.items else kinds[declared.kind]), name
        assert declared.help[1:] in widget.toolTip()
        assert DEFAULTS[f"llm_{name}"] == declared.default  # the stored settings' defaults are the declaration's
    # the dialog and the CLI list the same generation options, but those the dialog leaves to the CLI
    assert set(generate_flags(_generate_parser())) - set(shown) == {"fields", "task", "max_tokens"}
    assert dialog.generate_settings() == GenerateSettings()


def test_the_dialog_greys_out_exactly_the_options_without_effect(qtbot):
    from widgets.llm_dialog import GUI_OPTIONS, LLMDialog, settings_from_values

    dialog = LLMDialog({"backend": "local", "model": "smollm2-135m", "edit_opinion": False, "edit_swap": False})
    qtbot.addWidget(dialog)
    for mode in ("edit", "reconstruct"):
        dialog.mode.setCurrentIndex(dialog.mode.findData(mode))
        inactive = inactive_options(dialog.values())
        assert {n for n in GUI_OPTIONS if not getattr(dialog, n).isEnabled()} == set(inactive), mode
    assert {"edit_swap", "edit_remove", "demonstrations"} <= set(inactive)
    # greyed values stay in the dialog, and the settings take the declared default instead
    assert dialog.values()["edit_swap"] is False
    assert settings_from_values(dialog.values()) == GenerateSettings(mode="reconstruct")


def test_an_option_without_effect_is_refused():
    with pytest.raises(GenerationConfigError, match="edit_swap .*no effect.*edit_opinion") as caught:
        GenerateSettings(edit_opinion=False, edit_swap=False).validate()
    assert caught.value.code == "CB801" and "--edit-swap" in caught.value.hint
    with pytest.raises(GenerationConfigError, match="drop_prob .*reconstruct mode only"):
        GenerateSettings(drop_prob=0.0).validate()
    with pytest.raises(GenerationConfigError, match="edit_remove"):
        GenerateSettings(mode="reconstruct", edit_remove=False).validate()
    # at its default an option without effect is simply not used; an explicitly given one is refused
    GenerateSettings(mode="reconstruct").validate()
    GenerateSettings(edit_opinion=False).validate()
    with pytest.raises(GenerationConfigError, match="edit_remove"):
        GenerateSettings(mode="reconstruct").validate(explicit=["edit_remove"])


@pytest.mark.parametrize("argv", [
    ("--mode", "reconstruct", "--edit-remove"),
    ("--mode", "reconstruct", "--keep-stubborn"),
    ("--no-edit-opinion", "--edit-swap"),
    ("--drop-prob", "0"),
])
def test_generate_refuses_an_option_given_without_effect_before_anything_is_sent(argv, tmp_path, capsys):
    # the project does not exist: the settings are refused before it is opened or any request is sent
    code = main(["-q", "generate", str(tmp_path / "absent.cbproj"), "d", *argv])
    assert code == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "CB801" in err and "no effect" in err


def test_generate_refusal_in_a_real_process(tmp_path):
    from tests.reliability.storage_fs import cli

    done = cli("generate", str(tmp_path / "absent.cbproj"), "d", "--no-edit-opinion", "--no-phrase-swap",
               timeout=120)
    assert done.returncode == EXIT_USER_ERROR, done.stderr
    assert "CB801" in done.stderr and "edit_swap" in done.stderr


@pytest.mark.parametrize(("old", "new", "values"), [
    (("--keep-stubborn",), ("--no-edit-remove",), {"edit_remove": False}),
    (("--no-phrase-swap",), ("--no-edit-swap",), {"edit_swap": False}),
    (("--no-opinion-words",), ("--no-edit-opinion",), {"edit_opinion": False}),
    (("--no-gender-swap",), ("--no-swap-gender",), {"swap_gender": False}),
    (("--mode", "reconstruct", "--no-shuffle", "--drop-prob", "0"),
     ("--mode", "reconstruct", "--no-shuffle", "--drop-prob", "0"),
     {"mode": "reconstruct", "shuffle": False, "drop_prob": 0.0}),
    (("--fields", "text", "--edit-triples", "--edit-polar", "0.5"), ("--fields", "text", "--edit-triples",
                                                                     "--edit-polar", "0.5"),
     {"fields": ("text",), "edit_triples": True, "edit_polar": 0.5}),
])
def test_old_flags_still_parse_to_the_same_settings(old, new, values):
    plain = _parse()  # the shared LLM sampling flags, with their defaults
    cli_defaults = {name: getattr(plain, name) for name, declared in OPTIONS.items() if declared.cli == "llm"}
    expected = GenerateSettings(**cli_defaults, **values)
    assert settings_from_args(_parse(*old)) == expected == settings_from_args(_parse(*new))


def test_the_default_key_is_unchanged_and_options_without_effect_do_not_count():
    assert GenerateSettings().key() == DEFAULT_KEY
    assert GenerateSettings(edit_opinion=True, edit_swap=True).key() == DEFAULT_KEY
    reconstruct = GenerateSettings(mode="reconstruct")
    for name, value in (("edit_swap", False), ("edit_remove", False), ("edit_polar", 0.3),
                        ("sentence_reader", "members"), ("demonstrations", 4)):
        assert GenerateSettings(mode="reconstruct", **{name: value}).key() == reconstruct.key(), name
    assert GenerateSettings(drop_prob=0.0).key() == DEFAULT_KEY  # edit mode: no triple is dropped
    assert GenerateSettings(edit_opinion=False, edit_swap=False).key() == GenerateSettings(edit_opinion=False).key()
    # an option that takes effect still makes a new key
    assert GenerateSettings(edit_swap=False).key() != DEFAULT_KEY
    assert GenerateSettings(mode="reconstruct", drop_prob=0.0).key() != reconstruct.key()
    # the stored settings keep every value as given
    assert GenerateSettings(mode="reconstruct", edit_swap=False).to_dict()["edit_swap"] is False


@pytest.mark.parametrize("flag", ["--no-repair-flip", "--no-flip-repair", "--release-at-once", "--edit-hold"])
def test_the_flags_of_removed_stages_are_refused_with_what_to_do(flag, tmp_path, capsys):
    code = main(["-q", "generate", str(tmp_path / "absent.cbproj"), "d", flag])
    assert code == EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert "CB801" in err and f"{flag} was removed" in err and f"Leave {flag} out" in err
