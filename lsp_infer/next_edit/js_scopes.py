"""Which names in a JavaScript or TypeScript file are the same variable: scopes from
tree-sitter's grammars (tree-sitter-javascript, tree-sitter-typescript), by the language's
rules, not by matching text.

``same_binding(source, offset, dialect)`` answers, for the identifier at ``offset``, every
place in the file that names the same binding: a parameter and its uses in the function, not
a same-named parameter of another; a ``let``/``const``/``class`` in its block, a ``var`` or a
function's parameters in the whole function (both are hoisted: where in the scope a name is
declared does not matter, as in the language). A shorthand property (``{width}``, ``const
{width} = box``) names the binding too: a rename there keeps the key (``{width: w}``); and a
function's JSDoc comment names its parameters (``@param {number} width``): both as
TypeScript's own rename does (bench/next_edit_js.py compares the two).

Where a rename could not be made by replacing these places alone, it answers None: a name that
is imported or exported by name (``import {a}``, ``export {a}``: renaming changes what is
imported or exported), an ``enum`` or a ``namespace`` (a type as well as a value), a
constructor's parameter property (``constructor(private a)``: ``this.a`` too), in TypeScript a
name that is also a type's (a class: ``let p: Point = new Point()``; which of the two a name
means takes the type checker), a name a JSDoc type uses (``@param {Buffer} body``: TypeScript
renames it there, which is not followed here), a file with ``with`` (names resolved at run
time), a file the grammar cannot parse, a file over ``MAX_SOURCE_CHARS``. ``names_nearby``
holds the globals the file reads and the common ones (``GLOBALS``) too: a rename to
``console`` means the global.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser

from lsp_infer.next_edit.bindings import Binding, Occurrence, inside, occurrence_at

Dialect = Literal["javascript", "typescript", "tsx"]

# A larger file (a bundle, generated code) gets no rename: its scopes are walked in Python on
# the server's event loop, about 1 ms a thousand characters on two cores (bench/HISTORY.md,
# "Renames in JavaScript and TypeScript").
MAX_SOURCE_CHARS = 100_000

# The words no binding can be named (ECMAScript's reserved words, with those strict mode and
# modules add), and TypeScript's contextual ones that a rename should not produce.
RESERVED = frozenset({
    "await", "break", "case", "catch", "class", "const", "continue", "debugger", "default",
    "delete", "do", "else", "enum", "export", "extends", "false", "finally", "for", "function",
    "if", "implements", "import", "in", "instanceof", "interface", "let", "new", "null",
    "package", "private", "protected", "public", "return", "static", "super", "switch", "this",
    "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield", "arguments",
    "eval", "undefined",
})  # fmt: skip


@functools.cache
def _language(dialect: Dialect) -> Language:
    if dialect == "javascript":
        return Language(tree_sitter_javascript.language())
    if dialect == "tsx":
        return Language(tree_sitter_typescript.language_tsx())
    return Language(tree_sitter_typescript.language_typescript())


def _parse(source: str, dialect: Dialect) -> tuple[Node, _Offsets] | None:
    data = source.encode("utf-8", "surrogatepass")
    tree = Parser(_language(dialect)).parse(data)
    if tree.root_node.has_error:
        return None
    return tree.root_node, _Offsets(source, data)


def parses(source: str, dialect: Dialect) -> bool:
    """Whether the grammar reads the whole file without an error or a missing token."""
    try:
        return _parse(source, dialect) is not None
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        return False


class _Offsets:
    """tree-sitter's positions (UTF-8 bytes) as offsets into the source (code points)."""

    def __init__(self, source: str, data: bytes) -> None:
        self._ascii = len(data) == len(source)
        self._chars: list[int] = []
        if not self._ascii:
            at = 0
            for char in source:
                self._chars.extend([at] * len(char.encode("utf-8", "surrogatepass")))
                at += 1
            self._chars.append(at)

    def __call__(self, byte: int) -> int:
        return byte if self._ascii else self._chars[byte]


# Nodes whose parameters and body are one scope (a ``var`` anywhere inside lands here).
_FUNCTIONS = frozenset({
    "function_declaration", "function_expression", "function", "generator_function_declaration",
    "generator_function", "arrow_function", "method_definition", "function_signature",
    "method_signature", "abstract_method_signature", "call_signature", "construct_signature",
    "function_type", "constructor_type", "class_static_block", "index_signature",
})  # fmt: skip
# Nodes that open a block scope of their own (``let``, ``const``, ``class``, a function
# declared in the block). A function's body block is the function's scope, not another.
_BLOCKS = frozenset({
    "statement_block", "for_statement", "for_in_statement", "catch_clause", "switch_body",
    "class_declaration", "class", "abstract_class_declaration",
})  # fmt: skip
# Declarations whose name is bound in the scope around them, not in their own.
_NAMED_OUTSIDE = frozenset({
    "function_declaration", "generator_function_declaration", "function_signature",
    "class_declaration", "abstract_class_declaration",
})  # fmt: skip
# Where a name is imported, exported by name, or is a type as well as a value.
_UNSAFE = frozenset({
    "import_clause", "import_specifier", "namespace_import", "export_specifier",
    "enum_declaration", "internal_module", "module", "import_alias", "namespace_export",
})  # fmt: skip
_SHORTHANDS = frozenset({"shorthand_property_identifier", "shorthand_property_identifier_pattern"})
_NAMES = frozenset({"identifier", *_SHORTHANDS})
# In a destructuring pattern that declares, the fields whose names are declared too (the rest,
# a default value or a key, are expressions or members).
_PATTERN_FIELDS = {
    "pair_pattern": {"value"},
    "assignment_pattern": {"left"},
    "object_assignment_pattern": {"left"},
}
_PATTERNS = frozenset({"object_pattern", "array_pattern", "rest_pattern", *_PATTERN_FIELDS})


@dataclass
class _Scope:
    node: Node | None  # None: the file
    parent: _Scope | None
    is_function: bool
    bound: set[str] = field(default_factory=set)
    unsafe: set[str] = field(default_factory=set)  # bound where a rename cannot follow
    parameters: set[str] = field(default_factory=set)  # of the function this scope is
    occurrences: list[Occurrence] = field(default_factory=list)

    def function(self) -> _Scope:
        scope = self
        while not scope.is_function and scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass(frozen=True)
class _Declare:
    """A name declared where it stands: into which scope, and what else it is."""

    scope: _Scope
    unsafe: bool = False  # a constructor's parameter property: `this.name` as well
    parameter: bool = False  # a function's parameter (its JSDoc's `@param` names it too)


# What a name is where it stands: declared into a scope, made unsafe, or (None) read.
_Role = _Declare | Literal["unsafe"] | None


class _Collector:
    """Walks the tree once, filing every name under the scope it stands in: a declaration's
    names learn where they are declared from the node above them (its role), passed down."""

    def __init__(self, source: str, offsets: _Offsets) -> None:
        self.source = source
        self.offset = offsets
        self.scopes: list[_Scope] = []
        self.type_names: set[str] = set()  # TypeScript: names that are also a type's
        self.dynamic = False  # a ``with`` statement somewhere
        self.jsdoc: list[str] = []  # the ``/** … */`` comments' texts

    def collect(self, root: Node) -> None:
        program = _Scope(None, None, is_function=True)
        self.scopes.append(program)
        # An explicit stack, not recursion: a deeply nested expression must not overflow.
        stack: list[tuple[Node, _Scope, _Role]] = [
            (child, program, None) for child in reversed(root.children)
        ]
        while stack:
            node, scope, role = stack.pop()
            inner = self._visit(node, scope, role)
            children = [(child, inner, self._role_of(node, index, child, scope, inner, role))
                        for index, child in enumerate(node.children)]  # fmt: skip
            stack.extend(reversed(children))

    def _visit(self, node: Node, scope: _Scope, role: _Role) -> _Scope:
        """Files ``node`` if it declares or names something; the scope its children are in."""
        kind = node.type
        if kind == "with_statement":
            self.dynamic = True
        elif kind == "comment" and self._text(node).startswith("/**"):
            self.jsdoc.append(self._text(node))
        elif kind == "type_identifier":
            self.type_names.add(self._text(node))
        elif kind in _NAMES:
            if role == "unsafe":  # still a name here: another must not be renamed to it
                self.scopes[0].unsafe.add(self._text(node))
                self.scopes[0].bound.add(self._text(node))
            elif role is not None:
                self._add(node, role.scope, binds=True)
                if role.unsafe:
                    role.scope.unsafe.add(self._text(node))
                if role.parameter:
                    role.scope.parameters.add(self._text(node))
            elif not self._is_element(node):
                self._add(node, scope, binds=False)
        if kind in _FUNCTIONS or kind in _BLOCKS:
            parent = node.parent
            if kind == "statement_block" and parent is not None and parent.type in _FUNCTIONS:
                return scope  # the function's body: the function's scope already
            inner = _Scope(node, scope, is_function=kind in _FUNCTIONS)
            self.scopes.append(inner)
            return inner
        return scope

    def _role_of(self, node: Node, index: int, child: Node, outer: _Scope, inner: _Scope,
                 role: _Role) -> _Role:  # fmt: skip
        """The role of ``node``'s child at ``index``: what declaring ``node`` makes of it."""
        kind, name = node.type, node.field_name_for_child(index)
        if kind in _UNSAFE:
            return "unsafe"
        if kind in _PATTERNS:  # a pattern passes its role down to the names it declares
            fields = _PATTERN_FIELDS.get(kind)
            return role if fields is None or name in fields else None
        if kind == "variable_declarator" and name == "name":
            declaration = node.parent
            is_var = declaration is not None and declaration.type == "variable_declaration"
            return _Declare(outer.function() if is_var else outer)
        if kind == "formal_parameters" and child.type in _NAMES | _PATTERNS:
            return _Declare(outer, parameter=True)  # JavaScript's bare parameters
        if kind in ("required_parameter", "optional_parameter") and name == "pattern":
            # `constructor(private a)`: `this.a` as well, which takes types to follow.
            modified = any(c.type in ("accessibility_modifier", "override_modifier", "readonly")
                           for c in node.children)  # fmt: skip
            return _Declare(outer, unsafe=modified, parameter=True)
        if kind == "catch_clause" and name == "parameter":
            return _Declare(inner)
        if kind == "for_in_statement" and name == "left":
            declared = node.child_by_field_name("kind")
            if declared is None:
                return None  # `for (x of xs)`: assigns a name declared elsewhere
            return _Declare(inner.function() if declared.type == "var" else inner)
        if kind == "arrow_function" and name == "parameter":
            return _Declare(inner, parameter=True)
        if kind == "index_signature" and name == "name":
            return _Declare(inner)
        if name == "name" and (kind in _FUNCTIONS or kind in _BLOCKS):
            return _Declare(outer if kind in _NAMED_OUTSIDE else inner)
        return None

    def _is_element(self, node: Node) -> bool:
        parent = node.parent
        return (parent is not None and parent.type in ("jsx_opening_element",
                "jsx_closing_element", "jsx_self_closing_element")
                and self._text(node)[:1].islower())  # fmt: skip

    def _add(self, node: Node, scope: _Scope, binds: bool) -> None:
        start = self.offset(node.start_byte)
        name = self._text(node)
        shorthand = node.type in _SHORTHANDS
        scope.occurrences.append(Occurrence(name, start, start + len(name), binds, shorthand))
        if binds:
            scope.bound.add(name)

    def _text(self, node: Node) -> str:
        return self.source[self.offset(node.start_byte) : self.offset(node.end_byte)]


def _resolve(scope: _Scope, name: str) -> _Scope | None:
    """The scope whose binding ``name`` refers to in ``scope``; None for a global."""
    at: _Scope | None = scope
    while at is not None:
        if name in at.bound:
            return at
        at = at.parent
    return None


def same_binding(source: str, offset: int, dialect: Dialect) -> Binding | None:
    """The binding named at ``offset`` (within or at the end of an identifier) and all its
    occurrences; None when the file does not parse, nothing is named there, or a rename could
    not follow the binding everywhere (see the module's docstring)."""
    if len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        parsed = _parse(source, dialect)
        if parsed is None:
            return None
        collector = _Collector(source, parsed[1])
        collector.collect(parsed[0])
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        return None
    if collector.dynamic:
        return None
    at = occurrence_at(collector.scopes, offset)
    if at is None:
        return None
    scope, occurrence = at
    name = occurrence.name
    home = _resolve(scope, name)
    if home is None or name in collector.type_names:
        return None
    if any(name in other.unsafe for other in collector.scopes):
        return None
    if any(name in _jsdoc_type_names(comment) for comment in collector.jsdoc):
        return None  # `@param {Buffer} body`: TypeScript renames a type there, not followed
    found: list[Occurrence] = []
    # A global the file reads, or one every program can (`module`, `console`): a rename to it
    # means another variable.
    nearby: set[str] = set(GLOBALS)
    for other in collector.scopes:
        mine = [o for o in other.occurrences if o.name == name]
        if (mine and _resolve(other, name) is home) or inside(other, home):
            found.extend(o for o in mine if _resolve(other, name) is home)
            nearby.update(o.name for o in other.occurrences)
            nearby.update(other.bound)
        nearby.update(o.name for o in other.occurrences if _resolve(other, o.name) is None)
    outer = home.parent
    while outer is not None:  # a name seen from here: renaming to it would shadow it
        nearby.update(outer.bound)
        outer = outer.parent
    nearby.discard(name)
    if name in home.parameters and home.node is not None:
        found.extend(_jsdoc_mentions(source, parsed[1], home.node, name))
    return Binding(name, tuple(sorted(found, key=lambda o: o.start)), frozenset(nearby))


def is_code_name(source: str, offset: int, dialect: Dialect) -> bool:
    """Whether the identifier at ``offset`` is a name of the code (a variable, a member, a
    type), not a word in a string or a comment."""
    try:
        data = source.encode("utf-8", "surrogatepass")
        tree = Parser(_language(dialect)).parse(data)
    except (ValueError, UnicodeError):
        return False
    byte = len(source[:offset].encode("utf-8", "surrogatepass"))
    # The smallest node at the offset, and at the character before it (an offset at a name's
    # end is in the name too).
    candidates = [tree.root_node.descendant_for_byte_range(at, at)
                  for at in (byte, max(0, byte - 1))]  # fmt: skip
    names = _NAMES | _NOT_VARIABLES
    return any(c is not None and c.type in names and c.start_byte <= byte <= c.end_byte
               for c in candidates)  # fmt: skip


# A name where it only names a member, a label or a type: no variable.
_NOT_VARIABLES = frozenset({"property_identifier", "type_identifier", "statement_identifier",
                            "private_property_identifier"})  # fmt: skip


# Globals every program can read (ECMAScript's, the browser's and Node's most used): a name
# the user renames a variable to from this list means the global.
GLOBALS = frozenset({
    "globalThis", "window", "document", "console", "process", "module", "exports", "require",
    "__dirname", "__filename", "Buffer", "Math", "JSON", "Object", "Array", "String", "Number",
    "Boolean", "Symbol", "BigInt", "Promise", "Proxy", "Reflect", "Error", "TypeError",
    "RangeError", "SyntaxError", "Map", "Set", "WeakMap", "WeakSet", "Date", "RegExp", "Intl",
    "setTimeout", "clearTimeout", "setInterval", "clearInterval", "queueMicrotask", "fetch",
    "URL", "NaN", "Infinity", "parseInt", "parseFloat", "isNaN", "isFinite",
})  # fmt: skip

# Where a function's JSDoc comment can stand: before the function, or before the statement,
# declaration or property it is the value of.
_JSDOC_HOSTS = frozenset({
    "variable_declarator", "lexical_declaration", "variable_declaration", "assignment_expression",
    "expression_statement", "export_statement", "pair", "public_field_definition",
    "parenthesized_expression",
})  # fmt: skip
_PARAM_TAGS = ("@param", "@arg", "@argument")


def _jsdoc_mentions(source: str, offsets: _Offsets, function: Node, name: str
                    ) -> list[Occurrence]:  # fmt: skip
    """The places the function's JSDoc comment (``/** … */``) names its parameter ``name``:
    ``@param {T} name``, ``@param [name=1]``, ``@param name.field`` (TypeScript's rename
    renames them too)."""
    comment, node = None, function
    while node is not None:
        before = node.prev_named_sibling
        if before is not None and before.type == "comment":
            text = source[offsets(before.start_byte) : offsets(before.end_byte)]
            if text.startswith("/**"):
                comment = before
            break
        if node.parent is None or node.parent.type not in _JSDOC_HOSTS:
            break
        node = node.parent
    if comment is None:
        return []
    start = offsets(comment.start_byte)
    text = source[start : offsets(comment.end_byte)]
    found = []
    for tag in _PARAM_TAGS:
        at = text.find(tag)
        while at >= 0:
            mention = _param_name_at(text, at + len(tag))
            if mention is not None and text[mention : mention + len(name)] == name:
                after = text[mention + len(name) : mention + len(name) + 1]
                if not (after.isalnum() or after in ("_", "$")):
                    found.append(Occurrence(name, start + mention, start + mention + len(name),
                                            binds=False))  # fmt: skip
            at = text.find(tag, at + len(tag))
    return found


def _jsdoc_type_names(comment: str) -> set[str]:
    """The names a JSDoc comment's types (``{String|Buffer}``) use."""
    names: set[str] = set()
    at = comment.find("{")
    while at >= 0:
        depth, end = 0, at
        while end < len(comment):
            depth += {"{": 1, "}": -1}.get(comment[end], 0)
            end += 1
            if depth == 0:
                break
        names.update(_NAME_IN_TYPE.findall(comment[at:end]))
        at = comment.find("{", end)
    return names


_NAME_IN_TYPE = re.compile(r"[A-Za-z_$][\w$]*")


def _param_name_at(text: str, at: int) -> int | None:
    """Where the parameter's name of a ``@param`` tag ending at ``at`` starts: after the
    type in braces (which nest: ``{{a: number}}``) and an optional ``[``."""
    if at < len(text) and (text[at].isalnum() or text[at] in "_$"):
        return None  # `@params`, `@argument` seen as `@arg`: another tag
    while at < len(text) and text[at] in " \t":
        at += 1
    if at < len(text) and text[at] == "{":
        depth = 0
        while at < len(text):
            depth += {"{": 1, "}": -1}.get(text[at], 0)
            at += 1
            if depth == 0:
                break
        while at < len(text) and text[at] in " \t":
            at += 1
    if at < len(text) and text[at] == "[":
        at += 1
        while at < len(text) and text[at] in " \t":
            at += 1
    return at


def reference_kinds(
    source: str, spans: list[tuple[int, int]], dialect: Dialect
) -> list[str] | None:
    """Each span's kind for a rename from the editor's references (next_edit/references.py):
    "import" where the name is imported or exported by name, an enum's or a namespace's
    (``_UNSAFE``), "shorthand" for ``{name}`` (renamed, it keeps its key), else "name"; None
    when the source does not parse."""
    root = _root(source, dialect)
    if root is None:
        return None
    # Each character's UTF-8 offset, counted once (not a prefix encoded for every span).
    byte_at = (range(len(source) + 1) if source.isascii() else list(itertools.accumulate(
        (len(char.encode("utf-8", "surrogatepass")) for char in source), initial=0)))  # fmt: skip
    kinds = []
    for start, end in spans:
        node = root.descendant_for_byte_range(byte_at[start], byte_at[end])
        kind = "shorthand" if node is not None and node.type in _SHORTHANDS else "name"
        while node is not None:
            if node.type in _UNSAFE:
                kind = "import"
                break
            node = node.parent
        kinds.append(kind)
    return kinds


_MEMBERS = frozenset({"property_identifier", "private_property_identifier", *_SHORTHANDS})


def member_named(source: str, name: str, dialect: Dialect) -> bool:
    """Whether ``name`` is still a member in ``source`` (a property, a field, a method, an
    object's key). True when it does not parse. After a member's rename from the editor's
    references, one left means the language server did not follow every use
    (next_edit/references.py)."""
    root = _root(source, dialect)
    wanted = name.encode("utf-8", "surrogatepass")
    return root is None or any(n.type in _MEMBERS and n.text == wanted for n in _nodes(root))


def in_jsdoc_type(source: str, name: str, dialect: Dialect) -> bool:
    """Whether a JSDoc comment's type (``@param {String|Buffer} body``) uses ``name``: a
    rename must follow it there too, which TypeScript's does and no reference names. True
    when the source does not parse."""
    root = _root(source, dialect)
    return root is None or any(
        n.type == "comment"
        and (comment := (n.text or b"").decode("utf-8", "surrogatepass")).startswith("/**")
        and name in _jsdoc_type_names(comment)
        for n in _nodes(root)
    )


def _root(source: str, dialect: Dialect) -> Node | None:
    """The syntax tree's root; None when the source does not parse."""
    try:
        parsed = _parse(source, dialect)
    except (ValueError, UnicodeError, RecursionError, MemoryError):
        return None
    return None if parsed is None else parsed[0]


def _nodes(root: Node) -> Iterator[Node]:
    """Every node under ``root`` (itself included), depth first, without recursion."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)
