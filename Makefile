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
# H-DRF §5.3.2 for a simulated week, on the paper's cluster at 1:20, about 5 hours
# of run time, and at its full 1,200 servers, about 25 CPU-hours, estimated);
# results beside the others in reports/, which the report then includes.  LONG=
# picks specs (LONG=experiments/long/hdrf-fig13-7days.yaml: the 1:20 week
# alone); ONLY= runs a slice, one grid value at a time over several sittings
# (ONLY=workload.arrivals.offered_load=0.5; the claims at other loads are n/a
# until their slice runs; several PATH=VALUE separated by spaces, none with a
# space in it).  SCHEDULER=tcp://host:8786 runs them on a Dask
# cluster (docs/dask.md: same checkout and a shared reports/ on every worker).
SCHEDULER ?=
LONG ?= experiments/long/*.yaml
ONLY ?=
reproduce-long: $(STAMP)
	$(BIN)/hierfair run $(LONG) --out reports $(if $(SCHEDULER),--scheduler $(SCHEDULER)) \
		$(foreach o,$(ONLY),--only '$(o)')
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

# asv runs in .venv as it is (nothing built or downloaded; the working tree is
# what gets measured) through the plugin benchmarks/asv_env.py: environment
# type "venv", results named venv-py3.11 rather than after the interpreter's
# path, so two checkouts' results compare.  Saved under .asv/results/<machine>
# as HEAD's (--set-commit-hash: asv saves nothing for an existing environment
# without it; commit first if the tree is dirty).  MACHINE names the machine
# (default: the host name).  BENCH=regex runs a subset, e.g. BENCH=Decision.
# Timed benchmarks take repeated CPU-time samples in two processes each
# (benchmarks/bench_latency.py); the whole suite took 10 minutes on this
# 2-core machine, shared (docs/performance.md, "Catching regressions").
BENCH ?=
MACHINE ?= $(shell hostname)
bench: $(STAMP)
	$(BIN)/asv machine --yes --machine $(MACHINE) >/dev/null
	$(BIN)/asv run -E venv:$(BIN)/python --machine $(MACHINE) \
		--set-commit-hash $$(git rev-parse HEAD) \
		--show-stderr --durations 10 $(if $(BENCH),--bench '$(BENCH)')

# Compares the results `make bench` saved at two commits (offline): marks a
# benchmark + (slower) or - (faster) only if the ratio passes FACTOR and asv's
# Mann-Whitney test on the samples says they differ (p < 0.002); "~" is a
# ratio past FACTOR that the test does not back.  FACTOR 1.2: the same code
# measured at two machine loads differed by up to 1.09x, significantly by the
# test alone.  `asv continuous A B` instead builds both from the package index.
FACTOR ?= 1.2
bench-compare: $(STAMP)
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make bench-compare A=<rev> B=<rev>"; exit 2; }
	$(BIN)/asv compare --machine $(MACHINE) --split --factor $(FACTOR) \
		$$(git rev-parse $(A)) $$(git rev-parse $(B))

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
