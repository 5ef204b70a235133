# Two entry points: `make demo` (the main job) and `make test`. Both build the
# in-repo virtual environment first, so a fresh clone needs nothing else.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint venv bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,grpc,dask,plot]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/ridtrace demo --out demo-out

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

test: $(STAMP) lint
	$(BIN)/pytest -q -n auto

# Each benchmark takes minutes and wants a quiet machine; see docs/performance.md.
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_tracing.py
	$(BIN)/python benchmarks/bench_tracing_instructions.py
	$(BIN)/python benchmarks/bench_frontend.py
	$(BIN)/python benchmarks/bench_worker.py --in-process
	$(BIN)/python benchmarks/bench_grpc.py
	$(BIN)/python benchmarks/bench_forensics.py
	$(BIN)/python benchmarks/bench_access.py

clean:
	rm -rf $(VENV) demo-out
