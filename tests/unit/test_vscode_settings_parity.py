"""The VS Code extension contributes every server setting, with the server's default and limits.

``editors/vscode/package.json`` (``contributes.configuration``) against ``lsp_infer.config``:
one ``lspInfer.<dotted camelCase path>`` property per leaf of ``to_wire(Settings())`` except
the secret ``team.apiKey`` (the extension keeps it in VS Code's SecretStorage), the same
default, the same choices and the same bounds, and nothing the server does not know.

VS Code's settings editor cannot hold ``null``: a ``None`` default is contributed as ``""``
(string settings) or ``0`` (integer settings), which the extension sends back as ``null``.
A ``float`` setting is a ``number`` in VS Code; its default may be written as a whole number
(``0`` for ``0.0``: npm rewrites package.json with JavaScript, which cannot tell them apart).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from lsp_infer.config import Settings, camel, to_wire

PACKAGE_JSON = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "package.json"
PREFIX = "lspInfer."
# The extension's own settings: how to start the server, and the LSP message trace.
EXTENSION_ONLY = {"lspInfer.trace.server"}
EXTENSION_ONLY_PREFIXES = ("lspInfer.server.",)


@dataclasses.dataclass(frozen=True)
class Leaf:
    key: str  # dotted camelCase path, e.g. "model.nCtx"
    default: Any
    field: dataclasses.Field[Any]
    type: Any  # the resolved annotation, e.g. int | None


def _leaves(cls: type, prefix: str = "") -> list[Leaf]:
    """Every non-dataclass field below ``cls``, with its dotted camelCase path."""
    hints = typing.get_type_hints(cls)
    instance = cls()
    result: list[Leaf] = []
    for f in dataclasses.fields(cls):
        if f.metadata.get("internal"):  # not a setting (Settings.explicit)
            continue
        key = prefix + camel(f.name)
        hint = hints[f.name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            result.extend(_leaves(hint, key + "."))
        else:
            result.append(Leaf(key, getattr(instance, f.name), f, hint))
    return result


def _wire_leaves(node: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict):
            flat.update(_wire_leaves(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def _base_type(hint: Any, leaf: Leaf | None = None) -> Any:
    """``int | None`` → ``int``; ``list[str]`` → ``list``; a NewType → what it wraps.
    team.url (one URL or a list of them) is a string in VS Code: the server also takes
    several URLs in one string."""
    if leaf is not None and leaf.field.metadata.get("urls"):
        return str
    if hasattr(hint, "__supertype__"):
        return _base_type(hint.__supertype__, leaf)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        assert len(args) == 1, hint
        return _base_type(args[0])
    return typing.get_origin(hint) or hint


LEAVES = [leaf for leaf in _leaves(Settings) if not leaf.field.metadata.get("secret")]
SECRETS = [leaf.key for leaf in _leaves(Settings) if leaf.field.metadata.get("secret")]
VSCODE_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array"}


@pytest.fixture(scope="module")
def properties() -> dict[str, dict[str, Any]]:
    pkg = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    merged: dict[str, dict[str, Any]] = {}
    for group in pkg["contributes"]["configuration"]:
        for key, prop in group["properties"].items():
            assert key not in merged, f"{key} is contributed twice"
            merged[key] = prop
    return merged


def test_leaves_are_the_wire_format() -> None:
    """The dataclass walk sees what ``to_wire`` sends, so the checks below cover every leaf."""
    wire = _wire_leaves(to_wire(Settings()))
    assert {leaf.key for leaf in LEAVES} | set(SECRETS) == set(wire)
    for leaf in LEAVES:
        assert wire[leaf.key] == leaf.default, leaf.key
    assert SECRETS == ["team.apiKey"]


@pytest.mark.parametrize("leaf", LEAVES, ids=lambda leaf: leaf.key)
def test_every_server_setting_is_contributed_alike(
    leaf: Leaf, properties: dict[str, dict[str, Any]]
) -> None:
    name = PREFIX + leaf.key
    assert name in properties, f"{name} is not contributed by the VS Code extension"
    prop = properties[name]
    base = _base_type(leaf.type, leaf)
    vscode_type = VSCODE_TYPES[base]
    assert prop.get("type") == vscode_type, name
    if base is list:
        assert prop.get("items") == {"type": "string"}, name

    # Default, with VS Code's spelling of None.
    if leaf.default is None:
        assert prop.get("default") == {"string": "", "integer": 0}[vscode_type], name
    else:
        assert "default" in prop, name
        default = prop["default"]
        if base is float and type(default) is int:
            default = float(default)  # JSON's 0 for 0.0 (still not True for 1.0)
        assert default == leaf.default, name
        assert type(default) is type(leaf.default), name  # True is not 1

    # Choices.
    choices = leaf.field.metadata.get("choices")
    assert prop.get("enum") == (list(choices) if choices is not None else None), name

    # Bounds. Where None is spelled 0, the minimum is 0 so that VS Code accepts that spelling.
    low, high = leaf.field.metadata.get("min"), leaf.field.metadata.get("max")
    if low is None:
        assert "minimum" not in prop and "maximum" not in prop, name
    else:
        expected_low = 0 if leaf.default is None and vscode_type == "integer" else low
        assert prop.get("minimum") == expected_low, name
        assert prop.get("maximum") == high, name
    assert isinstance(prop.get("markdownDescription") or prop.get("description"), str), name


def test_secrets_are_not_settings(properties: dict[str, dict[str, Any]]) -> None:
    for key in SECRETS:
        assert PREFIX + key not in properties, f"{key} is a secret: SecretStorage, not settings"
    assert not [key for key in properties if "apikey" in key.lower()]


def test_nothing_the_server_does_not_know(properties: dict[str, dict[str, Any]]) -> None:
    known = {PREFIX + leaf.key for leaf in LEAVES}
    unknown = [
        key
        for key in properties
        if key not in known
        and key not in EXTENSION_ONLY
        and not key.startswith(EXTENSION_ONLY_PREFIXES)
    ]
    assert unknown == [], f"contributed but unknown to the server: {unknown}"
    assert all(key.startswith(PREFIX) for key in properties)
