# Every target creates .venv and installs what it needs, so each one works on
# a fresh clone with only the machine's base image.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEV := $(VENV)/.stamp-dev
STAMP_DEMO := $(VENV)/.stamp-demo

.PHONY: demo test bench bench-ragas lint docs postgres chromium clean help

help:
	@echo "make demo   - install and run ragaudit demo (every step on a generated company), offline"
	@echo "make test   - install everything (PostgreSQL, Chromium too) and run the test suite"
	@echo "make bench  - run the benchmarks and print their ratios"
	@echo "make bench-ragas - ragaudit and Ragas generate test sets side by side (embedded model)"
	@echo "make lint   - ruff, mypy, and the layers as import contracts (lint-imports)"
	@echo "make docs   - the guides and the API reference (mkdocs, warnings as errors) into site/"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamps depend on pyproject.toml so that a changed dependency list reinstalls.
# torch is pinned to its CPU build first: left to the resolver, torch pulls GBs of CUDA.
$(STAMP_DEMO): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[local,dense]'
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[local,dense,langchain,llamaindex,mlflow,dev,docs]'
	touch $@

# Resumable: a second make demo reuses ragaudit-demo/ and asks the model nothing again.
demo: $(STAMP_DEMO)
	$(BIN)/ragaudit demo ragaudit-demo

postgres:
	bash scripts/ensure-postgres.sh

chromium:
	bash scripts/ensure-chromium.sh

test: $(STAMP_DEV) postgres chromium
	$(BIN)/python -m pytest -n auto --dist loadfile

bench: $(STAMP_DEV)
	$(BIN)/python benchmarks/run_all.py

# Ragas in an environment of its own: its pins (benchmarks/ragas-requirements.txt) are not
# the project's, and ragaudit's benchmark only talks to it through a subprocess.
RAGAS_VENV := .venv-ragas
STAMP_RAGAS := $(RAGAS_VENV)/.stamp

$(STAMP_RAGAS): benchmarks/ragas-requirements.txt
	$(PYTHON) -m venv $(RAGAS_VENV)
	$(RAGAS_VENV)/bin/pip install --quiet -r benchmarks/ragas-requirements.txt
	touch $@

bench-ragas: $(STAMP_DEV) $(STAMP_RAGAS)
	$(BIN)/python benchmarks/run_all.py ragas

docs: $(STAMP_DEV)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP_DEV)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) $(RAGAS_VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache
