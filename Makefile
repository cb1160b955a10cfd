# Two commands do everything on a fresh machine:
#   make demo   set up, then play the DDPTokenAverage case with the reference and noop agents (bwrap, CPU ranks)
#   make test   set up, then lint, type-check and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SANDBOX ?= auto

.PHONY: setup demo test lint typecheck pytest runtime clean

$(BIN)/trainfail: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,agents]'
	touch $@

setup: $(BIN)/trainfail
	./scripts/bootstrap-system.sh

runtime: setup
	$(BIN)/trainfail runtimes build --arm control

demo: runtime
	$(BIN)/trainfail demo --sandbox $(SANDBOX)

lint: setup
	$(BIN)/ruff check gym_trainfail agents tests benchmarks
	$(BIN)/ruff format --check gym_trainfail agents tests benchmarks

typecheck: setup
	$(BIN)/mypy

pytest: runtime
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache
