# The README's two commands: `make demo` and `make test`. Both create the virtual environment when missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch (a wheel of it lies on disk); an unpinned torch pulls a multi-GB CUDA build.
TORCH_PIN ?= torch==2.13.0
# The benchmark corpora of the tests and the benchmark, when a data folder lies beside the clone (the demo needs none).
SHARED_DATA := $(abspath ../shared/data)
ifneq ($(wildcard $(SHARED_DATA)/stackoverflow.csv),)
export HF_TEXTCLUSTER_DATA_DIR ?= $(SHARED_DATA)
endif
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup demo test test-fast docs docs-generated lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_PIN)"
	$(PY) -m pip install -q -e ".[all]" "$(TORCH_PIN)"
	touch $@

# The default on the StackOverflow sample shipped in the package: offline, whatever lies beside the clone.
demo: setup
	env -u HF_TEXTCLUSTER_DATA_DIR $(VENV)/bin/hf-textcluster demo

# The tests (every snippet of README and docs/ included: tests/docs/test_docs.py), then lint, then the strict docs build.
test: setup
	$(PY) -m pytest -q
	$(MAKE) lint docs

# While developing: the tests without the slow ones (two-process launches, the local Hub server, the real MiniLM,
# whole training runs); `make test` (CI) still runs everything.
test-fast: setup
	$(PY) -m pytest -q -m "not slow"

# ruff's rules are in pyproject.toml ([tool.ruff]); the code is kept in `ruff format`'s style. mypy type-checks
# modeling/ and the public API ([tool.mypy]).
lint: setup
	$(PY) -m ruff check hf_textcluster training tests docs/_hooks
	$(PY) -m ruff format --check hf_textcluster training tests docs/_hooks
	$(PY) -m mypy

# The documentation site into site/ (not committed); --strict: a broken link, anchor or API reference fails.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The generated parts of docs/: the CLI reference, the example cards and the report's screenshot (needs chromium).
docs-generated: setup
	$(PY) -m training.docs all

bench: setup
	$(PY) -m training.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
