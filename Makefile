# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PLUGIN_DIRS := $(wildcard plugins/*/pyproject.toml)

.PHONY: install test lint typecheck unit demo serve bench clean

install: $(STAMP)

$(STAMP): pyproject.toml $(PLUGIN_DIRS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,embeddings]' $(foreach p,$(PLUGIN_DIRS),-e $(dir $(p)))
	touch $(STAMP)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -n 2

test: install lint typecheck unit

demo: install
	$(BIN)/pawl demo

serve: install
	$(BIN)/pawl serve

bench: install
	$(BIN)/python bench/run_throughput.py
	$(BIN)/python bench/settle.py

clean:
	rm -rf $(VENV) .pawl-state
