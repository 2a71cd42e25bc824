"""The layout's rules, checked on the real tree (ARCHITECTURE.md, "Architecture invariants").

* Only the protocol edge (``lsp_infer/lsp/``) imports pygls or lsprotocol.
* The local tier never imports the team tier, nor the other way round; neither imports the
  protocol edge.
* The core and the shared modules import neither tier nor the edge; next edits
  (``lsp_infer/next_edit/``) import only the core and the shared modules.
* Nothing imports the entry points (cli, doctor) but ``__main__``.
* No import cycles, counting every import (in functions and under TYPE_CHECKING too).
* No function is longer than 60 lines, but the argparse table; no class has more than 20
  methods.
* Only the prompt cache's package (``lsp_infer/local/kv/``) imports its modules; the rest
  imports the package (``PromptCache``), and only the package touches the llama sequence
  (``n_tokens``, ``input_ids``, ``eval``, llama.cpp's ``llama_memory_*``/``llama_state_*``).

Each rule is also checked against a small made-up tree that breaks it, so a checker that
cannot fail would fail here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "lsp_infer"
PROTOCOL_LIBRARIES = ("pygls", "lsprotocol")
ENTRY_POINTS = ("lsp_infer.cli", "lsp_infer.doctor", "lsp_infer.__main__")
MAX_FUNCTION_LINES = 60
MAX_METHODS = 20
LONG_ALLOWED = {"lsp_infer.cli.build_parser"}  # a declarative table of arguments
PRIVATE_PACKAGES = ("lsp_infer.local.kv",)  # their modules are for the package itself
SEQUENCE_ATTRIBUTES = {"n_tokens", "input_ids", "eval"}  # a Llama's sequence state
SEQUENCE_CALLS = ("llama_memory_", "llama_state_")  # llama.cpp's sequence functions

Imports = Mapping[str, set[str]]  # module → the modules (any package) it imports


def layer(module: str) -> str:
    parts = module.split(".")
    if module in ENTRY_POINTS:
        return "entry"
    if len(parts) > 2 and parts[1] in ("lsp", "local", "team", "core", "next_edit"):
        return parts[1]
    return "shared"


# Which layers each layer may import (its own included).
ALLOWED = {
    "entry": {"entry", "lsp", "local", "team", "next_edit", "core", "shared"},
    "lsp": {"lsp", "local", "team", "next_edit", "core", "shared"},
    "local": {"local", "core", "shared"},
    "next_edit": {"next_edit", "core", "shared"},
    "team": {"team", "core", "shared"},
    "core": {"core", "shared"},
    "shared": {"shared"},
}


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, modules: Iterable[str]) -> set[str]:
    """Every module ``source`` imports, anywhere in it; ``from package import name`` counts as
    the submodule when there is one."""
    known = set(modules)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in known else node.module)
    return found


def project_imports(root: Path = PACKAGE) -> dict[str, set[str]]:
    paths = sorted(root.rglob("*.py"))
    names = [module_name(path, root) for path in paths]
    return {
        name: imports_of(path.read_text(encoding="utf-8"), names)
        for name, path in zip(names, paths, strict=True)
    }


def layer_violations(imports: Imports) -> list[str]:
    problems = []
    for module, imported in sorted(imports.items()):
        for target in sorted(imported):
            top = target.split(".")[0]
            if top in PROTOCOL_LIBRARIES and layer(module) != "lsp":
                problems.append(f"{module} imports {target}: only lsp_infer/lsp/ may")
            if top != "lsp_infer" or target == "lsp_infer":
                continue
            if layer(target) not in ALLOWED[layer(module)]:
                problems.append(f"{module} ({layer(module)}) imports {target} ({layer(target)})")
    return problems


def crowded_classes(root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                methods = [
                    m for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                if len(methods) > MAX_METHODS:
                    problems.append(f"{module}.{node.name}: {len(methods)} methods")
    return problems


def private_imports(imports: Imports) -> list[str]:
    """Imports of a private package's modules from outside the package."""
    problems = []
    for module, imported in sorted(imports.items()):
        for target in sorted(imported):
            for package in PRIVATE_PACKAGES:
                inside = module == package or module.startswith(package + ".")
                if target.startswith(package + ".") and not inside:
                    problems.append(f"{module} imports {target}: import {package} instead")
    return problems


def sequence_touches(root: Path = PACKAGE) -> list[str]:
    """Uses of the llama sequence's state outside lsp_infer/local/kv/."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        if module.startswith("lsp_infer.local.kv"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and (
                node.attr in SEQUENCE_ATTRIBUTES or node.attr.startswith(SEQUENCE_CALLS)
            ):
                problems.append(f"{module}:{node.lineno} uses .{node.attr}")
    return problems


def cycles(imports: Imports) -> list[list[str]]:
    """Import cycles among the project's modules (each found once, from its first module)."""
    graph = {m: sorted(t for t in targets if t in imports and t != m) for m, targets in
             imports.items()}  # fmt: skip
    found: list[list[str]] = []
    state: dict[str, str] = {}  # "open" while on the path, "done" after

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in graph[module]:
            if state.get(target) == "open":
                found.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def long_functions(root: Path = PACKAGE) -> list[str]:
    problems = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                name = f"{module}.{node.name}"
                if length > MAX_FUNCTION_LINES and name not in LONG_ALLOWED:
                    problems.append(f"{name}: {length} lines")
    return problems


# -- the real tree --------------------------------------------------------------------------


def test_the_tree_has_its_layers() -> None:
    layers = {layer(module) for module in project_imports()}
    assert layers == {"entry", "lsp", "local", "team", "next_edit", "core", "shared"}


def test_the_layers_import_only_what_they_may() -> None:
    assert layer_violations(project_imports()) == []


def test_there_are_no_import_cycles() -> None:
    assert cycles(project_imports()) == []


def test_no_function_is_longer_than_60_lines() -> None:
    assert long_functions() == []


def test_no_class_has_more_than_20_methods() -> None:
    assert crowded_classes() == []


def test_only_the_prompt_cache_imports_its_modules() -> None:
    assert private_imports(project_imports()) == []


def test_only_the_prompt_cache_touches_the_llama_sequence() -> None:
    assert sequence_touches() == []


# -- the checkers catch what they should ----------------------------------------------------


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        ({"lsp_infer.local.a": {"lsp_infer.team.b"}}, "(local) imports lsp_infer.team.b (team)"),
        ({"lsp_infer.team.b": {"lsp_infer.local.a"}}, "(team) imports lsp_infer.local.a (local)"),
        ({"lsp_infer.local.a": {"lsp_infer.lsp.server"}}, "(local) imports lsp_infer.lsp"),
        ({"lsp_infer.core.w": {"lsp_infer.local.a"}}, "(core) imports lsp_infer.local.a"),
        ({"lsp_infer.session": {"lsp_infer.core.w"}}, "(shared) imports lsp_infer.core.w"),
        ({"lsp_infer.team.b": {"lsprotocol.types"}}, "only lsp_infer/lsp/ may"),
        ({"lsp_infer.config": {"pygls.server"}}, "only lsp_infer/lsp/ may"),
        ({"lsp_infer.lsp.server": {"lsp_infer.cli"}}, "(lsp) imports lsp_infer.cli (entry)"),
    ],
)
def test_a_broken_layer_rule_is_reported(imports: Imports, expected: str) -> None:
    problems = layer_violations(imports)
    assert len(problems) == 1 and expected in problems[0], problems


def test_allowed_imports_are_not_reported() -> None:
    imports = {
        "lsp_infer.lsp.server": {
            "lsp_infer.local.local_tier",
            "lsp_infer.team.refactor_batches",
            "pygls",
        },
        "lsp_infer.local.local_tier": {"lsp_infer.core.engine", "lsp_infer.session"},
        "lsp_infer.cli": {"lsp_infer.lsp.server"},
        "lsp_infer.__main__": {"lsp_infer.cli"},
    }
    assert layer_violations(imports) == []


def test_an_import_of_a_private_module_is_reported() -> None:
    imports = {
        "lsp_infer.local.llama_cpp": {"lsp_infer.local.kv.states", "lsp_infer.local.kv"},
        "lsp_infer.local.kv.prompt_cache": {"lsp_infer.local.kv.states"},
        "lsp_infer.local.kv": {"lsp_infer.local.kv.prompt_cache"},
    }
    assert private_imports(imports) == [
        "lsp_infer.local.llama_cpp imports lsp_infer.local.kv.states: import lsp_infer.local.kv "
        "instead"
    ]


def test_a_touch_of_the_llama_sequence_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "lsp_infer"
    (package / "local" / "kv").mkdir(parents=True)
    (package / "local" / "kv" / "sequence.py").write_text("llm.n_tokens = 0\n")
    (package / "local" / "decoder.py").write_text(
        "llm.n_tokens = 0\nn = llm.n_ctx()\nllama_cpp.llama_memory_seq_rm(m, 0, -1, -1)\n"
    )
    assert sequence_touches(package) == [
        "lsp_infer.local.decoder:1 uses .n_tokens",
        "lsp_infer.local.decoder:3 uses .llama_memory_seq_rm",
    ]


def test_a_cycle_is_reported() -> None:
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(imports) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_long_function_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "lsp_infer"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (package / "long.py").write_text(f"def too_long():\n{body}\n\ndef short():\n    pass\n")
    assert long_functions(package) == [f"lsp_infer.long.too_long: {MAX_FUNCTION_LINES + 1} lines"]


def test_a_crowded_class_is_reported(tmp_path: Path) -> None:
    package = tmp_path / "lsp_infer"
    package.mkdir()
    methods = "".join(f"    def m{i}(self):\n        pass\n" for i in range(MAX_METHODS + 1))
    (package / "big.py").write_text(
        f"class Big:\n{methods}\n\nclass Small:\n    def m(self):\n        pass\n"
    )
    assert crowded_classes(package) == [f"lsp_infer.big.Big: {MAX_METHODS + 1} methods"]


def test_from_package_import_submodule_names_the_submodule() -> None:
    source = "from lsp_infer.core import window\nfrom lsp_infer.core.window import fit_window\n"
    found = imports_of(source, ["lsp_infer.core", "lsp_infer.core.window"])
    assert found == {"lsp_infer.core.window"}
