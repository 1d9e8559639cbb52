# Two commands on a fresh machine (see README):
#   make local   deploy the example app with the real cdk CLI to an embedded AWS emulator
#   make test    lint and run the test suite
# Both install what is missing first: the venv and its packages, and the pinned CDK CLI.

PYTHON ?= python3
VENV := .venv
UV_VERSION := 0.13.9
PY := $(VENV)/bin/python
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
# Byte code is written, whatever the shell says: with PYTHONDONTWRITEBYTECODE set, every process (each pytest
# worker, each `jobqueues`, worker, moto_server and CDK app process) compiles what it imports from source again,
# and pytest rewrites every test module again in each worker.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup local test lint bench docs clean

setup: $(VENV)/.installed node_modules/.installed

# uv (from the package index) resolves and installs in about 20 s where pip took nearly 2 min, and prints no
# build-backend warnings; `make local` and `make test` install the same way.
# pyspark is published as source only, so uv builds its wheel: 400 MB of jars, already compressed, that the build
# would deflate again. Stored as they are, a fresh install took about 5 s less (docs/testing.md).
PYSPARK_WHEEL := --config-settings-package pyspark:--build-option=--compression=stored
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml lambda_src/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	@echo "installing requirements-dev.txt into $(VENV) (uv)"
	$(PY) -m uv pip install --quiet --python $(PY) -r requirements-dev.txt $(PYSPARK_WHEEL)
	# up to 0.1.0 the construct distribution was called jobqueues (a name taken on the index): drop it
	$(PY) -m uv pip uninstall --quiet --python $(PY) jobqueues 2>/dev/null || true
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# `jobqueues local deploy` on the example app (its cdk.json), then the demo (docs/emulator.md).
local: setup
	$(VENV)/bin/jobqueues local deploy --demo

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# Five processes on 2 cores: most tests wait on leases, deploys and Spark rather than compute, so more processes
# than cores keep both busy; each process also collects every test and starts its own emulator and CDK kernel, so
# six cost more CPU than they saved (docs/testing.md: how long it takes with 4, 5, 6 and 8). The work units are a
# test, a module whose tests share a module-scoped fixture, or all the tests sharing a deployed app or the
# SparkSession, the shared ones first (tests/conftest.py).
# On a fresh clone nothing is compiled yet, and five processes starting at once would each compile what they all
# import: beside the lint, one process compiles it first (tests/support/warm_caches.py).
PYTEST_PROCESSES ?= 5
test: setup
	@echo "compiling what the tests import (tests/support/warm_caches.py), beside the lint"
	@$(PY) tests/support/warm_caches.py & warming=$$!; $(MAKE) --no-print-directory lint; linted=$$?; wait $$warming; exit $$linted
	$(PY) -m pytest -n $(PYTEST_PROCESSES) --dist loadgroup --no-loadscope-reorder

# The docs' prop, settings and module tables, rewritten from the docstrings (docs/generate.py --check only reports)
docs: setup
	$(PY) docs/generate.py

bench: setup
	$(PY) bench/synth_bench.py
	$(PY) bench/consumer_synth_bench.py
	$(PY) bench/lease_bench.py
	$(PY) bench/runtime_bench.py --quick
	$(PY) bench/throughput_bench.py --quick
	$(PY) bench/jobstats_bench.py

# spark-submit --py-files dist/jobstats.zip jobstats/__main__.py profile ... (docs/jobstats.md: on a cluster)
dist/jobstats.zip: $(wildcard jobstats/*.py) $(wildcard lambda_src/sqslease/*.py)
	$(PYTHON) -m jobstats.bundle $@

clean:
	rm -rf cdk.out .pytest_cache dist demo-logs
