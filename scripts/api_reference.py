"""Write the README's Python API reference from the public modules' sources, or prove it fresh.

    python scripts/api_reference.py            # rewrite the README's reference block
    python scripts/api_reference.py --check    # exit 1, with a diff, if the block is stale

The reference lists every name of each public module's ``__all__`` with the first line of its
docstring: a function with its parameters, a class with its public members (an enum with its
values), a constant with its docstring or its value. Everything is read from the source files
with :mod:`ast`, a re-exported name followed through the imports to its definition (a module is
imported only for its ``__all__``), so the text is the same whether the referee is compiled with
mypyc or not.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START = "<!-- api-reference: start (made by scripts/api_reference.py; edit the docstrings) -->"
END = "<!-- api-reference: end -->"

MODULES = (
    "arena",
    "arena.cards",
    "arena.rules",
    "arena.engine",
    "arena.errors",
    "arena.table",
    "arena.client",
    "arena.referee",
    "arena.ratings",
    "arena.store",
)
"""The public modules, in the order the reference gives them."""

MAX_VALUE = 60
"""The longest value a constant without a docstring is shown with."""


@dataclass
class Source:
    """One module's syntax tree, with its top-level definitions by name."""

    name: str
    tree: ast.Module
    defs: dict[str, ast.stmt]
    docs: dict[str, str]
    """The docstrings written under top-level assignments (a string just after one)."""
    imports: dict[str, str]
    """Names imported from another module (``from X import NAME``): that module's name."""


_SOURCES: dict[str, Source] = {}


def source(module: str) -> Source:
    """The parsed source of ``module`` (a package's ``__init__.py``), read once."""
    if module in _SOURCES:
        return _SOURCES[module]
    path = ROOT / Path(*module.split("."))
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(file.read_text(), str(file))
    defs: dict[str, ast.stmt] = {}
    docs: dict[str, str] = {}
    imports: dict[str, str] = {}
    body = tree.body
    for i, node in enumerate(body):
        names: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        # An import under ``if TYPE_CHECKING:`` counts too: a package whose __getattr__
        # imports its names when first used (arena.referee) names their modules there.
        for imported in [node, *(node.body if isinstance(node, ast.If) else [])]:
            if isinstance(imported, ast.ImportFrom) and imported.module:
                for alias in imported.names:
                    imports[alias.asname or alias.name] = imported.module
        for name in names:
            defs[name] = node
            following = body[i + 1] if i + 1 < len(body) else None
            if (
                not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[name] = following.value.value
    _SOURCES[module] = Source(module, tree, defs, docs, imports)
    return _SOURCES[module]


def home(module: str, name: str) -> tuple[Source, ast.stmt]:
    """The module that defines ``name`` (following re-exports) and the definition."""
    src = source(module)
    seen = set()
    while name not in src.defs:
        if name not in src.imports or src.name in seen:
            raise SystemExit(f"api_reference: {module}.{name} has no definition in the source")
        seen.add(src.name)
        src = source(src.imports[name])
    return src, src.defs[name]


_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
"""A Sphinx cross-reference (``:class:`Hand```): Markdown shows its target as code."""


def first_line(text: str | None) -> str:
    """A docstring's first paragraph on one line, in Markdown, or '' without one."""
    if not text:
        return ""
    line = " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
    line = _ROLE.sub(r"`\1`", line).replace("``", "`")
    return line.removesuffix("::") + "." if line.endswith("::") else line


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool = False) -> str:
    """A function's parameters as the reference writes them: names, ``=`` for a default."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    if method and positional:
        positional = positional[1:]  # self or cls
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    if method and len(defaults) > len(positional):
        defaults = defaults[1:]
    out = [_param(a.arg, d) for a, d in zip(positional, defaults, strict=True)]
    if args.vararg is not None:
        out.append(f"*{args.vararg.arg}")
    elif args.kwonlyargs:
        out.append("*")
    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append(_param(a.arg, d))
    if args.kwarg is not None:
        out.append(f"**{args.kwarg.arg}")
    return ", ".join(out)


def _param(name: str, default: ast.expr | None) -> str:
    if default is None:
        return name
    text = ast.unparse(default)
    return f"{name}={text}" if len(text) <= 20 else f"{name}=..."


def _is_enum(node: ast.ClassDef) -> bool:
    return any(ast.unparse(b).split(".")[-1].endswith("Enum") for b in node.bases)


def values(node: ast.ClassDef) -> list[str]:
    """An enum's values, in source order (none for another class)."""
    if not _is_enum(node):
        return []
    return [
        f"`{t.id}`"
        for item in node.body
        if isinstance(item, ast.Assign)
        for t in item.targets
        if isinstance(t, ast.Name) and not t.id.startswith("_")
    ]


def members(node: ast.ClassDef) -> list[str]:
    """A class's public fields, properties and methods, in source order."""
    out: list[str] = []
    for item in node.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if not item.target.id.startswith("_") and "ClassVar" not in ast.unparse(
                item.annotation
            ):
                out.append(f"`{item.target.id}`")
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
            if item.name.startswith("_"):
                continue
            decorators = {ast.unparse(d).split(".")[-1] for d in item.decorator_list}
            if "property" in decorators or "cached_property" in decorators:
                out.append(f"`{item.name}`")
            elif "setter" in decorators:
                continue
            else:
                method = "staticmethod" not in decorators
                out.append(f"`{item.name}({parameters(item, method=method)})`")
    return list(dict.fromkeys(out))


def entry(module: str, name: str) -> str:
    """One name's line of the reference."""
    src, node = home(module, name)
    origin = "" if src.name == module else f" (from `{src.name}`)"
    if isinstance(node, ast.ClassDef):
        doc = first_line(ast.get_docstring(node))
        tail = "".join(
            f" {label}: {', '.join(listed)}."
            for label, listed in (("Values", values(node)), ("Members", members(node)))
            if listed
        )
        return f"- `{name}`{origin}, class: {doc}{tail}"
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        doc = first_line(ast.get_docstring(node))
        prefix = "async " if isinstance(node, ast.AsyncFunctionDef) else ""
        return f"- `{prefix}{name}({parameters(node)})`{origin}: {doc}"
    doc = first_line(src.docs.get(name))
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
    shown = ast.unparse(value) if value is not None else ""
    if doc:
        return f"- `{name}`{origin}: {doc}"
    if shown and len(shown) <= MAX_VALUE and "\n" not in shown:
        return f"- `{name} = {shown}`{origin}"
    return f"- `{name}`{origin}"


def _listed_elsewhere(module: str, name: str) -> str | None:
    """The other public module whose entry describes ``name``, if there is one."""
    src, _ = home(module, name)
    if src.name != module and src.name in MODULES and name in _public(src.name):
        return src.name
    return None


def _public(module: str) -> list[str]:
    return list(importlib.import_module(module).__all__)


def reference() -> str:
    """The whole reference block, markers included."""
    lines = [START, ""]
    for module in MODULES:
        names = sorted(_public(module), key=str.casefold)
        lines.append(f"### `{module}`")
        lines.append("")
        lines.append(first_line(ast.get_docstring(source(module).tree)))
        lines.append("")
        described = [n for n in names if _listed_elsewhere(module, n) is None]
        lines += [entry(module, name) for name in described]
        again = [f"`{n}` (`{_listed_elsewhere(module, n)}`)" for n in names if n not in described]
        if again:
            lines.append(f"- Also here, as described under their own modules: {', '.join(again)}.")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def with_reference(readme: str) -> str:
    """The README's text with its block replaced by a fresh one."""
    if readme.count(START) != 1 or readme.count(END) != 1:
        raise SystemExit(f"api_reference: README.md needs one {START!r} and one {END!r} line")
    before, rest = readme.split(START, 1)
    after = rest.split(END, 1)[1]
    return before + reference() + after


def main(argv: list[str] | None = None) -> int:
    """Rewrite or check the README's reference."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    old = README.read_text()
    new = with_reference(old)
    if not args.check:
        README.write_text(new)
        return 0
    if old == new:
        return 0
    diff = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "README.md", "fresh", lineterm="", n=1
    )
    print("\n".join(list(diff)[:60]))
    print("the README's API reference is stale: run python scripts/api_reference.py")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
