# Two commands: `make reproduce` (every experiment -> reports/) and `make test`.
# Both create .venv and install hierfair into it on first use.
# `make bench` runs the asv suite on this checkout (offline); `make bench-compare
# A=<rev> B=<rev>` compares results that `make bench` saved at two commits.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Real traces are read from here when present (never copied into the project).
export HIERFAIR_DATA ?= $(abspath ../shared/traces)

.PHONY: reproduce reproduce-long audit-production test fuzz bench bench-compare install clean

install: $(STAMP)

# Reinstall when the dependencies change; the package itself is editable.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

# The audit (docs/properties.md) at a size that fits the 30-minute budget;
# `hierfair audit --instances 10000` for a thorough run.
AUDIT_INSTANCES ?= 60
reproduce: $(STAMP)
	$(BIN)/hierfair run experiments/*.yaml --out reports
	$(BIN)/hierfair audit --instances $(AUDIT_INSTANCES) --out reports/audit \
		--counterexamples experiments/counterexamples
	$(BIN)/hierfair report reports --catalogue docs/reproductions.md

# The property audit of the production schedulers as coded (Kueue, Volcano,
# YARN, Mesos, YuniKorn; docs/properties.md): beside make reproduce's, which
# covers the paper schedulers; its table in reports/audit-production.
audit-production: $(STAMP)
	$(BIN)/hierfair audit --instances $(AUDIT_INSTANCES) --out reports/audit-production \
		--algorithms kueue volcano volcano-capacity yarn-fair mesos-drf yunikorn-fair

# The reproductions too long for make reproduce's 30 minutes (experiments/long/:
# H-DRF §5.3.2 for a simulated week, about 5 hours of run time); results beside the
# others in reports/, which the report then includes.
reproduce-long: $(STAMP)
	$(BIN)/hierfair run experiments/long/*.yaml --out reports
	$(BIN)/hierfair report reports --catalogue docs/reproductions.md

# On every core (pytest-xdist): one process was 9 min 51 s of the 10-minute
# budget on this 2-core machine; two workers take about 7.5.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

# The thorough fuzz run (thousands of mutated specs and traces, a sweep stopped
# at 24 random moments, the memory estimate against 8 measured peaks; make
# test runs a sample).
fuzz: $(STAMP)
	HIERFAIR_FUZZ=thorough $(BIN)/python -m pytest -q tests/test_fuzz.py tests/test_attacks.py \
	  tests/test_memory_estimate.py

# asv's "existing" environment is .venv itself (--python=same): nothing is built
# or downloaded, and the working tree is what gets measured; the results are
# saved under .asv/results as HEAD's (commit first if the tree is dirty).
# BENCH=regex runs a subset, e.g. BENCH=latency or BENCH=SwimDay.
BENCH ?=
bench: $(STAMP)
	$(BIN)/asv machine --yes
	$(BIN)/asv run --python=same --set-commit-hash $$(git rev-parse HEAD) \
		--show-stderr --durations 10 $(if $(BENCH),--bench '$(BENCH)')

# Compares the saved results of two commits (run `make bench` at each first);
# offline.  `asv continuous A B` instead builds both from the package index.
bench-compare: $(STAMP)
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make bench-compare A=<rev> B=<rev>"; exit 2; }
	$(BIN)/asv compare --split --factor 1.1 $$(git rev-parse $(A)) $$(git rev-parse $(B))

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
