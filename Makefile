# `make run` sets up remem and runs its daemon; `make test` runs every check.
# Both build .venv themselves.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/remem init
	$(BIN)/remem worker

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check remem workers tests bench alembic
	$(BIN)/ruff format --check remem workers tests bench alembic

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python bench/report.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
