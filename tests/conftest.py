"""What every test run shares: the ``model`` marker by where a test lives.

A test marked ``model`` needs the real default model: it runs ``lsp-infer serve`` (e2e, fuzz),
a llama.cpp server on loopback (team), or the plugin against the real server
(nvim/test_plugin.py marks itself). ``pytest -m "not model"`` (``make check``) runs the rest:
the unit tests and the Neovim plugin against its stub server, in well under a minute.
"""

from __future__ import annotations

from pathlib import Path

import pytest

MODEL_DIRECTORIES = {"e2e", "fuzz", "team"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(item.path).parent.name in MODEL_DIRECTORIES:
            item.add_marker(pytest.mark.model)
