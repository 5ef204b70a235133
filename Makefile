# Two entry points: `make demo` (the main job) and `make test`. Both build the
# in-repo virtual environment first, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv bench clean

# ridtrace needs Python 3.11: an older $(PYTHON) stops here, before it leaves a venv
# behind. A venv made by another interpreter (python3 before PYTHON=python3.12, as
# README.md suggests) is made afresh: venv keeps an existing bin/python, so the old
# interpreter stayed .venv/bin/python (and `python` after activate), without ridtrace;
# so did a link to an interpreter since removed.
PY_VERSION := import sys; print('%d.%d' % sys.version_info[:2])

# An empty PYTHON (`PYTHON=$UNSET` on the command line) made the recipes' lines start with
# `-c`, whose `-` make reads as "ignore errors": the check below failed, was ignored, and
# the recipe went on to remove a working .venv.
ifeq ($(strip $(PYTHON)),)
$(error PYTHON is empty: name an interpreter, e.g. make $(or $(MAKECMDGOALS),demo) PYTHON=python3.12)
endif

# A .venv whose interpreter no longer runs (uninstalled, or upgraded under it) is made
# afresh, whoever named PYTHON: make ran it and said ".venv/bin/python: No such file or
# directory" of a file `ls` lists.
ifneq ($(shell [ -e $(BIN)/python ] || [ -L $(BIN)/python ] && echo venv),)
ifeq ($(shell $(BIN)/python -c "$(PY_VERSION)" 2>/dev/null),)
.PHONY: $(STAMP)
endif
endif

# `make demo PYTHON=python3.12` over a .venv another Python made: out of date, so made
# afresh. The stamp alone said the venv was built, and the old interpreter stayed. Only
# for a PYTHON named on the command line: the default's next run would flip it back.
ifeq ($(origin PYTHON),command line)
ifneq ($(wildcard $(BIN)/python),)
ifneq ($(shell $(BIN)/python -c "$(PY_VERSION)" 2>/dev/null),$(shell $(PYTHON) -c "$(PY_VERSION)" 2>/dev/null))
.PHONY: $(STAMP)
endif
endif
endif

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  found=$$($(PYTHON) -c "$(PY_VERSION)" 2>/dev/null); \
	  if [ -n "$$found" ]; then hint="make $(or $(MAKECMDGOALS),demo) PYTHON=python3.12 (or another)"; \
	  else hint="name an interpreter that is installed: make $(or $(MAKECMDGOALS),demo) PYTHON=/path/to/python3.11 (or newer)"; fi; \
	  echo "make: ridtrace needs Python 3.11 or newer; $(PYTHON) is $${found:+Python }$${found:-not found}: $$hint" >&2; \
	  exit 1; }
	@if { [ -e $(BIN)/python ] || [ -L $(BIN)/python ]; } && [ "$$($(BIN)/python -c "$(PY_VERSION)" 2>/dev/null)" != "$$($(PYTHON) -c "$(PY_VERSION)")" ]; then \
	  echo "rm -rf $(VENV)  # made by another Python than $(PYTHON)"; rm -rf $(VENV); fi
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,grpc,dask,plot]'
	touch $(STAMP)

venv: $(STAMP)

# Byte-code for src/ before the many Python processes a demo or a test run starts: where
# PYTHONDONTWRITEBYTECODE is set (some CI images and containers set it), none of them
# writes its .pyc, and each compiled ridtrace's ~290 modules from source again, about a
# quarter of a CPU-second per process (compileall writes them whatever that says).
BYTECODE := $(BIN)/python -m compileall -q src

demo: $(STAMP)
	$(BYTECODE)
	$(BIN)/ridtrace demo --out demo-out

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

# One pytest-xdist worker more than this process may use CPUs: the suite waits on its
# servers, their timers and their children for a good part of its run, and the spare
# worker keeps the cores busy meanwhile (2 cores: 411-418 s against 468-469 s with one
# worker per core, same commit, same machine).
TEST_WORKERS = $$($(BIN)/python -c 'import os; print(len(os.sched_getaffinity(0)) + 1)')

# Work stealing: a worker whose queue ran dry takes tests queued for another, so the
# run's end is not one worker's long tail (a fresh clone, 2 cores: 670 s against 712 s
# with the default scheduling, one run each).
test: $(STAMP) lint
	$(BYTECODE)
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

# Each benchmark takes minutes and wants a quiet machine; see docs/performance.md.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_tracing.py
	$(BIN)/python benchmarks/bench_tracing_instructions.py
	$(BIN)/python benchmarks/bench_frontend.py
	$(BIN)/python benchmarks/bench_worker.py --in-process
	$(BIN)/python benchmarks/bench_grpc.py
	$(BIN)/python benchmarks/bench_forensics.py
	$(BIN)/python benchmarks/bench_access.py
	$(BIN)/python benchmarks/bench_start.py
	$(BIN)/python benchmarks/bench_export.py

clean:
	rm -rf $(VENV) demo-out
