# Two commands do everything on a fresh machine:
#   make demo   set up, then play the DDPTokenAverage case with the reference and noop agents (bwrap, CPU ranks)
#   make test   set up, then lint, type-check and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SANDBOX ?= auto
# The demo is the embedded default: bubblewrap and CPU ranks, no Docker needed.
DEMO_SANDBOX ?= bwrap

.PHONY: setup test-setup demo test lint typecheck pytest runtime lock images clean leaderboard qualify

$(BIN)/trainfail: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,agents,docker,ray,leaderboard,serve,inspect]'
	touch $@

setup: $(BIN)/trainfail
	./scripts/bootstrap-system.sh

test-setup: setup
	./scripts/bootstrap-system.sh --for-tests

runtime: setup
	$(BIN)/trainfail runtimes build --arm control

# Re-resolve both arms' requirement sets into the committed hashed locks (after changing one).
lock: setup
	$(BIN)/trainfail runtimes lock --arm all

# Docker runtime images of both arms (needs an engine: DOCKER_HOST, see scripts/start-dockerd.sh).
images: setup
	$(BIN)/trainfail images build --arm all

demo: runtime
	$(BIN)/trainfail demo --sandbox $(DEMO_SANDBOX)

lint: setup
	$(BIN)/ruff check gym_trainfail agents tests benchmarks
	$(BIN)/ruff format --check gym_trainfail agents tests benchmarks

typecheck: setup
	$(BIN)/mypy

# The slowest tests are listed at the end of every run (CI time is a budget).
PYTEST_ARGS ?= --durations=25
pytest: runtime test-setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test: lint typecheck pytest

# The committed leaderboard: every registered case x both arms x the scripted agents x LEADERBOARD_TRIALS,
# graded and rendered into leaderboards/scripted. Re-running resumes runs/leaderboard-scripted
# (finished episodes and receipts are kept); delete that folder to start the batch afresh.
LEADERBOARD_RUN ?= runs/leaderboard-scripted
# Scripted agents are deterministic: a second trial repeats the same trees (graded once) and adds
# only timing noise, while study-traincheck's TrainCheck workflow costs minutes per case.
LEADERBOARD_TRIALS ?= 1
leaderboard: runtime
	$(BIN)/trainfail runtimes build --arm traincheck
	$(BIN)/trainfail batch --cases all --arms control,traincheck --agents study study-traincheck reference noop \
		--trials $(LEADERBOARD_TRIALS) --workers 2 --sandbox $(SANDBOX) --out $(LEADERBOARD_RUN)
	$(BIN)/trainfail leaderboard $(LEADERBOARD_RUN) --out leaderboards/scripted \
		--title "gym-trainfail leaderboard: scripted agents (study, study-traincheck, reference, noop)"

# Re-admit every registered case: the full gate (repeats, reference, wrong repairs, forgeries) and a
# fresh admission record beside each case (envs/<case>/admission.json). CI fails on a stale record
# and names this command. One case: $(BIN)/trainfail qualify CASE_ID --wrong-repairs
qualify: runtime
	$(BIN)/trainfail qualify --all --wrong-repairs --sandbox $(SANDBOX)

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
