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
	$(BIN)/pytest -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) demo-out
