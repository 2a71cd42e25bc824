"""The custom notifications' params, as the server reads them (lsp/convert.py)."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_infer.lsp.convert import warm_target


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 3, "character": 4}},
         ("file:///a.py", 3, 4)),
        ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 0, "character": 0}},
         ("file:///a.py", 0, 0)),
        ({"textDocument": {"uri": ""}, "position": {"line": 0, "character": 0}}, None),
        ({"textDocument": {"uri": 7}, "position": {"line": 0, "character": 0}}, None),
        ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": -1, "character": 0}},
         None),
        ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 1, "character": True}},
         None),
        ({"textDocument": {"uri": "file:///a.py"}, "position": {"line": 1.5, "character": 0}},
         None),
        ({"textDocument": {"uri": "file:///a.py"}}, None),
        ({"position": {"line": 0, "character": 0}}, None),
        ({"textDocument": "file:///a.py", "position": [0, 0]}, None),
        (None, None),
        ([], None),
    ],
)  # fmt: skip
def test_warm_target(params: Any, expected: tuple[str, int, int] | None) -> None:
    assert warm_target(params) == expected
