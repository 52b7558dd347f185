# Two commands: `make reproduce` (every experiment -> reports/) and `make test`.
# Both create .venv and install hierfair into it on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Real traces are read from here when present (never copied into the project).
export HIERFAIR_DATA ?= $(abspath ../shared/traces)

.PHONY: reproduce test fuzz install clean

install: $(STAMP)

# Reinstall when the dependencies change; the package itself is editable.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

reproduce: $(STAMP)
	$(BIN)/hierfair run experiments/*.yaml --out reports
	$(BIN)/hierfair report reports --catalogue docs/reproductions.md

test: $(STAMP)
	$(BIN)/python -m pytest -q

# The thorough fuzz run (thousands of mutated specs and traces; make test runs a sample).
fuzz: $(STAMP)
	HIERFAIR_FUZZ=thorough $(BIN)/python -m pytest -q tests/test_fuzz.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
