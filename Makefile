# `make run` sets up remem and runs its daemon; `make test` runs every check; `make test-quick`
# runs the unit tier alone.
# Both build .venv themselves.
# The newest interpreter of 3.11 or later on PATH (each candidate must run: a shim of a missing
# version does not count); `make PYTHON=/path/to/python3.12` chooses one.
PYTHON ?= $(shell for candidate in python3.14 python3.13 python3.12 python3.11 python3; do \
	$$candidate -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 \
	&& { echo $$candidate; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-quick lint typecheck pytest bench help-text clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || test -n "$(PYTHON)" || { echo "make: remem needs Python 3.11 \
	or newer, and none is on PATH: install one, or run make PYTHON=/path/to/python3.11" >&2; \
	exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# init asks before connecting any agent (on a terminal) and says how to connect those it did
# not; the daemon prints one line and logs to a file. A daemon already running (exit 3) is
# said in one line, and is no failure of `make run`.
run: $(STAMP)
	$(BIN)/remem init
	$(BIN)/remem worker || test $$? -eq 3

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check remem workers tests bench alembic
	$(BIN)/ruff format --check remem workers tests bench alembic

typecheck: $(STAMP)
	$(BIN)/mypy

# The suite runs on every CPU (-n auto). pytest keeps the test modules it rewrote for its asserts
# only where Python may write bytecode: without that, every run rewrites all of them again.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n auto

pytest: $(STAMP)
	$(PYTEST)

# The unit tier alone: pure code, no database, no process; well under a minute.
test-quick: $(STAMP)
	$(PYTEST) tests/unit

bench: $(STAMP)
	$(BIN)/python bench/report.py

# `remem --help` is answered from a rendered copy; a test says when it needs rendering again.
help-text: $(STAMP)
	$(BIN)/python -c 'from remem.cli.commands import write_help_text; write_help_text()'

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
