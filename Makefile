# clusterproof: the two commands of the README, and a few more.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python

.PHONY: setup run lint test test-fast spack acceptance published-shape cluster-up cluster-down clean help

help:
	@echo "make run         set up, then run the suite on this machine (system local, mode smoke)"
	@echo "make test        set up, then run the whole test suite on an empty /tmp and /dev/shm of its own: the fast tier in 2 processes, then the rest (PYTEST_ARGS='...' for pytest; tests named there run alone)"
	@echo "make test-fast   the tests that need neither the local cluster nor root and are not slow (minutes)"
	@echo "make lint        ruff (pinned) with the rules of pyproject.toml; make test and make test-fast run it first"
	@echo "make setup       set up only (Debian packages as root, .venv/ with pinned packages)"
	@echo "make spack       concretize and install the Spack environment (needs spack)"
	@echo "make acceptance SYSTEM=S   the full methodology on system S"
	@echo "make published-shape [INSTANCE=K] [MAX_THREADS=N]   the storage plan at its published thread counts, 16-node local cluster, tiny files (as root)"

setup:
	@bash scripts/setup

run: setup
	@bash scripts/run-local

# The Python of the repository: the package, tests, checks, site files and
# scripts (those without .py found by their first line).
LINT_PATHS := clusterproof tests scripts reframe_checks site_config \
              $(shell grep -ls '^\#!/usr/bin/env python' scripts/*)
lint: setup
	@$(VENV)/bin/ruff check --quiet $(LINT_PATHS) && echo "lint: ruff found nothing"

# The fast tier (docs/testing.md): parsers, the store, configuration, docs;
# in one worker process per processor (pytest-xdist).
FAST := not cluster and not root and not slow

# The whole suite: the fast tier in 2 processes, then the rest in one
# (tests named in PYTEST_ARGS: those, in one run).
test: setup lint
	@bash scripts/run-tests --fast-first "$(FAST)" $(PYTEST_ARGS)
test-fast: setup lint
	@bash scripts/run-tests -m "$(FAST)" -n auto $(PYTEST_ARGS)

spack: setup
	@$(VENV)/bin/clusterproof spack concretize
	@$(VENV)/bin/clusterproof spack install

acceptance: setup
	@test -n "$(SYSTEM)" || { echo "make acceptance: name the system, e.g. make acceptance SYSTEM=pixstor" >&2; exit 2; }
	@$(VENV)/bin/clusterproof acceptance --system "$(SYSTEM)"

published-shape: setup
	@$(PY) -m clusterproof published-shape --instance $(or $(INSTANCE),0) $(if $(MAX_THREADS),--max-threads $(MAX_THREADS))

clean:
	rm -rf results build .pytest_cache
