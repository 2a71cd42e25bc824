"""Which names in a Python file are the same variable: scopes from Python's own parser.

``same_binding(source, offset)`` answers, for the identifier at ``offset``, every place in
the file that names the same binding — the parameter and its uses in the function, not a
same-named parameter of another function; a module-level name and its uses in the functions
that do not bind it themselves. It follows Python's rules (ast, scope by scope): a name bound
anywhere in a function is local to all of it unless declared ``global``/``nonlocal``; class
bodies are not seen from the methods inside them; a comprehension's targets are its own.

Where a rename could not be made by replacing these places alone, it answers None: a name
in a ``global``/``nonlocal`` statement, an ``except … as``, a pattern, or an import (the
statement's name has no position of its own, or renaming changes what is imported); a
class's name that the file also reaches as an attribute or passes as a keyword
(``self._months``, ``Point(x=1)``: which object an attribute is of takes types).
"""

from __future__ import annotations

import ast
import builtins
import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Union

from lsp_infer.next_edit.bindings import Binding, Occurrence, inside, occurrence_at
from lsp_infer.positions import line_starts

ScopeNode = Union[  # noqa: UP007 (3.10: a runtime alias)
    ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
]  # fmt: skip
_BUILTINS = frozenset(dir(builtins))
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
Comprehension = Union[ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp]  # noqa: UP007


@dataclass
class _Scope:
    node: ScopeNode
    parent: _Scope | None
    bound: set[str] = field(default_factory=set)
    declared: set[str] = field(default_factory=set)  # global or nonlocal here
    unsafe: set[str] = field(default_factory=set)  # bound where a rename cannot follow
    occurrences: list[Occurrence] = field(default_factory=list)

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)


class _Offsets:
    """ast's positions (line from 1, column in UTF-8 bytes) as offsets into the source."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._starts = line_starts(source)

    def __call__(self, line: int, column: int) -> int:
        start = self._starts[line - 1]
        end = self._starts[line] if line < len(self._starts) else len(self._source)
        return start + len(self._source[start:end].encode("utf-8")[:column].decode("utf-8"))


class _Collector(ast.NodeVisitor):
    """Walks the tree once, filing every name under the scope it stands in."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.offset = _Offsets(source)
        self.scopes: list[_Scope] = []
        self._current: _Scope | None = None
        # The keyword arguments given to each callee's name (``f(x=1)``, ``self.f(x=1)``):
        # a parameter renamed must be renamed there too, which needs the callee resolved.
        self.keywords: dict[str, set[str]] = {}
        # Every ``.name`` read or written (``self._months``, ``cls.make``, ``obj.x``).
        self.attributes: set[str] = set()

    def collect(self, tree: ast.Module) -> None:
        self._enter(tree, lambda: self._body(tree.body))

    # -- scopes ---------------------------------------------------------------------

    def _enter(self, node: ScopeNode, visit: Callable[[], object]) -> None:
        scope = _Scope(node, self._current)
        self.scopes.append(scope)
        outer, self._current = self._current, scope
        try:
            visit()
        finally:
            self._current = outer

    @property
    def scope(self) -> _Scope:
        assert self._current is not None
        return self._current

    def _body(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.visit(statement)

    def _add(self, name: str, start: int, binds: bool) -> None:
        if self.source[start : start + len(name)] != name:
            # A position that does not point at the name (an f-string's, on some Pythons):
            # never guessed at, and the name is not renamed anywhere.
            self.scope.unsafe.add(name)
            return
        self.scope.occurrences.append(Occurrence(name, start, start + len(name), binds))
        if binds:
            self.scope.bound.add(name)

    def _name_after_keyword(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
                            keyword: str) -> None:  # fmt: skip
        """A def's or class's name: ast gives the statement's position, not the name's."""
        start = self.offset(node.lineno, node.col_offset)
        at = self.source.find(keyword, start)
        if at < 0:
            return
        at += len(keyword)
        while at < len(self.source) and self.source[at] in " \t\\\n":
            at += 1
        self._add(node.name, at, binds=True)

    # -- definitions ----------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._visit_defaults(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        keyword = "def"
        self._name_after_keyword(node, keyword)

        def inside() -> None:
            self._parameters(node.args)
            self._body(node.body)

        self._enter(node, inside)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_defaults(node.args)

        def inside() -> None:
            self._parameters(node.args)
            self.visit(node.body)

        self._enter(node, inside)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(expression)
        self._name_after_keyword(node, "class")
        self._enter(node, lambda: self._body(node.body))

    def _visit_defaults(self, args: ast.arguments) -> None:
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.visit(default)
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.annotation is not None:
                self.visit(arg.annotation)

    def _parameters(self, args: ast.arguments) -> None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                self._add(arg.arg, self.offset(arg.lineno, arg.col_offset), binds=True)

    def _comprehension(self, node: Comprehension) -> None:
        # The first iterable is evaluated in the enclosing scope; the rest inside.
        generators = node.generators
        elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self.visit(generators[0].iter)

        def inside() -> None:
            for number, generator in enumerate(generators):
                self.visit(generator.target)
                if number:
                    self.visit(generator.iter)
                for condition in generator.ifs:
                    self.visit(condition)
            for element in elements:
                self.visit(element)

        self._enter(node, inside)

    # -- names ----------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        binds = not isinstance(node.ctx, ast.Load)
        self._add(node.id, self.offset(node.lineno, node.col_offset), binds)

    def visit(self, node: ast.AST) -> None:
        """Comprehensions, declarations and the names a rename cannot follow; every other
        node goes to its visit_ method (or its children)."""
        if isinstance(node, _COMPREHENSIONS):
            self._comprehension(node)
            return
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
            if name is not None:
                given = self.keywords.setdefault(name, set())
                given.update(k.arg for k in node.keywords if k.arg is not None)
        if isinstance(node, ast.Attribute):
            self.attributes.add(node.attr)
        if isinstance(node, ast.Global | ast.Nonlocal):
            self.scope.declared.update(node.names)
            return
        # := in a comprehension binds in the enclosing function: never followed.
        if isinstance(node, ast.NamedExpr) and isinstance(self.scope.node, _COMPREHENSIONS):
            self.scope.unsafe.add(node.target.id)
        for name in _unfollowed_names(node):
            self.scope.bound.add(name)
            self.scope.unsafe.add(name)
        super().visit(node)


def _unfollowed_names(node: ast.AST) -> list[str]:
    """Names ``node`` binds without a position of their own, or whose rename would change
    more than the variable (an import's): an except's ``as``, an import, a pattern's."""
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    return []


def _resolve(scope: _Scope, name: str) -> _Scope | None:
    """The scope whose binding ``name`` refers to in ``scope``; None for a ``global``/
    ``nonlocal`` declaration (followed nowhere) or a builtin."""
    if name in scope.declared:
        return None
    if name in scope.bound:
        return scope
    outer = scope.parent
    while outer is not None:
        if name in outer.declared:
            return None
        if not outer.is_class and name in outer.bound:
            return outer
        outer = outer.parent
    return None


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def same_binding(source: str, offset: int) -> Binding | None:
    """The binding named at ``offset`` (within or at the end of an identifier) and all its
    occurrences; None when the source does not parse, nothing is named there, or a rename
    could not follow the binding everywhere (see the module's docstring)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    collector = _Collector(source)
    try:
        collector.collect(tree)
    except RecursionError:
        return None
    at = occurrence_at(collector.scopes, offset)
    if at is None:
        return None
    scope, occurrence = at
    name = occurrence.name
    home = _resolve(scope, name)
    # Bound somewhere a rename cannot follow (an import, an except's name, a walrus in a
    # comprehension, a position ast gets wrong): not offered at all, anywhere in the file.
    if home is None or any(name in other.unsafe for other in collector.scopes):
        return None
    if home.parent is None and name in _BUILTINS:
        return None  # read before it is assigned, it is the builtin: `try: complex …`
    if _passed_by_keyword(home, name, collector.keywords):
        return None  # `f(name=…)` somewhere: the call would need renaming too
    if home.is_class and (
        name in collector.attributes or any(name in given for given in collector.keywords.values())
    ):
        # A class's name is an attribute too: `self._months`, `Point(x=1)` of a dataclass
        # would need renaming as well, and which object an attribute is of takes types.
        return None
    found: list[Occurrence] = []
    nearby: set[str] = set()
    for other in collector.scopes:
        if name in other.declared and _declared_binding(other, name) is home:
            return None  # `global name` / `nonlocal name`: a place without a position
        mine = [o for o in other.occurrences if o.name == name]
        if (mine and _resolve(other, name) is home) or inside(other, home):
            found.extend(o for o in mine if _resolve(other, name) is home)
            nearby.update(o.name for o in other.occurrences)
            nearby.update(other.bound)
    outer = home.parent
    while outer is not None:  # a name seen from here: renaming to it would shadow it
        if not outer.is_class:
            nearby.update(outer.bound)
        outer = outer.parent
    nearby.discard(name)
    return Binding(name, tuple(sorted(found, key=lambda o: o.start)), frozenset(nearby))


def _passed_by_keyword(home: _Scope, name: str, keywords: dict[str, set[str]]) -> bool:
    """Whether ``name`` is a parameter of ``home`` (a def) that some call to a callee of the
    def's name passes by keyword."""
    node = home.node
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    args = node.args
    parameters = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return name in parameters and name in keywords.get(node.name, set())


def _declared_binding(scope: _Scope, name: str) -> _Scope | None:
    """The binding a ``global``/``nonlocal`` declaration of ``name`` in ``scope`` names."""
    outer = scope.parent
    while outer is not None:
        if outer.parent is None:  # the module: global, or nonlocal found nothing nearer
            return outer if name in outer.bound else None
        if not outer.is_class and name in outer.bound and name not in outer.declared:
            return outer
        outer = outer.parent
    return None


def is_code_name(source: str, offset: int) -> bool:
    """Whether the identifier at ``offset`` is a name token of the code (a variable, an
    attribute, a keyword argument), not a word in a string or a comment."""
    line_number = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1)
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.start[0] > line_number:
                return False
            on_it = token.start[0] == line_number and token.start[1] <= column <= token.end[1]
            if on_it and token.type == tokenize.NAME:
                return True
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return False
    return False


def reference_kinds(source: str, spans: list[tuple[int, int]]) -> list[str] | None:
    """Each span's kind for a rename from the editor's references (next_edit/references.py):
    "import" on the lines of an ``import`` or ``from ... import`` (the name is another module's),
    else "name"; None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    import_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            import_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return ["import" if source.count("\n", 0, start) + 1 in import_lines else "name"
            for start, _ in spans]  # fmt: skip


def member_named(source: str, name: str) -> bool:
    """Whether ``name`` is still a member in ``source``: an attribute (``x.name``), or bound in a
    class's body (a field, a method, ``name = property(…)``). True when it does not parse.
    After a member's rename from the editor's references, one left means the language server
    did not follow every use (next_edit/references.py)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == name:
            return True
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    if statement.name == name:
                        return True
                    continue
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement)):
                    return True
    return False
