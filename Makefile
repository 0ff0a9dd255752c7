# Two commands: `make demo` and `make test`. Both set up first (idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# torch first and pinned: a plain `torch` requirement would pull a multi-GB CUDA build
TORCH_PIN := torch==2.13.0

.PHONY: setup demo test test-fast lint format bench clean system-deps

setup: $(STAMP) resources

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet "$(TORCH_PIN)"
	$(PIP) install --quiet -e ".[all,dev]"
	touch $(STAMP)

# Debian packages, when missing and running as root: WordNet (for NLTK when it
# cannot download it) and Chromium (the report's browser test)
system-deps:
	@missing=""; \
	[ -f /usr/share/wordnet/data.noun ] || missing="$$missing wordnet-base wordnet-sense-index"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "installing Debian packages:$$missing"; \
		(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

resources: system-deps $(STAMP)
	$(VENV)/bin/fairaes setup

demo: setup
	$(VENV)/bin/fairaes demo --out demo-report --force

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

lint: setup
	$(VENV)/bin/ruff check sklearn_fairaes tests benchmarks examples
	$(VENV)/bin/ruff format --check sklearn_fairaes tests benchmarks examples

format: setup
	$(VENV)/bin/ruff format sklearn_fairaes tests benchmarks examples

bench: setup
	$(PY) benchmarks/bench_pairs.py
	$(PY) benchmarks/bench_encoding.py
	$(PY) benchmarks/bench_features.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .ruff_cache
