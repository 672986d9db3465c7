"""The digest of the code behind a kept result: a result kept for a rerun (an assessment's
rows, a sweep's screens, a coverage study's sets) is reused only when the code that computes it
is the same, without anyone having to remember to bump a version constant.

The code is a module and every first-party module it imports, directly or not (of ``rate``
and of the module's own package, a plugin's), found by reading the source (imports inside
functions too), not by importing it. Each module counts by
its syntax tree without docstrings, so an edit to a comment, a docstring or the layout keeps
what was kept, and any other edit (or another Python, whose trees differ) computes it anew.
The versions of the numerical packages count too: another torch may round differently.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.metadata
import importlib.util
from pathlib import Path

PACKAGE = "rate"
ROOT = Path(__file__).resolve().parent
# The packages whose version can change a kept number.
NUMERICAL = ("numpy", "torch")

Roots = dict[str, Path]  # {top-level package: its folder}


def package_roots(modules: tuple[str, ...]) -> Roots:
    """The first-party packages of ``modules``: rate, and each module's own top-level package
    where it is an installed one (a plugin), found without importing it."""
    roots = {PACKAGE: ROOT}
    for top in {m.split(".")[0] for m in modules} - {PACKAGE}:
        spec = importlib.util.find_spec(top) if top.isidentifier() and top != "__main__" else None
        if spec is not None and spec.submodule_search_locations:
            roots[top] = Path(next(iter(spec.submodule_search_locations))).resolve()
    return roots


def _roots(root: Path | Roots | None, modules: tuple[str, ...]) -> Roots:
    if root is None:
        return package_roots(modules)
    if isinstance(root, Path):  # rate's folder (a copy of it)
        return {PACKAGE: root}
    return root


def module_file(name: str, root: Path | Roots = ROOT) -> Path | None:
    """The source file of module ``name`` of the packages at ``root``; None when there is none
    (``name`` is then a function or class imported from a module, not a module, or a module
    of another package: ``__main__`` included, which would otherwise read as the package)."""
    roots = {PACKAGE: root} if isinstance(root, Path) else root
    top, *parts = name.split(".")
    if top not in roots:
        return None
    folder = roots[top]
    base = folder.joinpath(*parts)
    for path in (
        (base / "__init__.py", base.with_suffix(".py")) if parts else (folder / "__init__.py",)
    ):
        if path.is_file():
            return path
    return None


def normalised(tree: ast.Module) -> str:
    """``tree`` as text without its docstrings (or line numbers: ast.dump leaves them out)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:]
    return ast.dump(tree)


def imported(tree: ast.Module, name: str, is_package: bool, root: Path | Roots = ROOT) -> set[str]:
    """The package's modules that module ``name``'s source imports, with the packages above
    each (importing a module runs their ``__init__``)."""
    here = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here.split(".")[: len(here.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # ``from a import b``: b is a module of a, or a name defined in a.
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            if module_file(target, root) is not None:
                found.update(_with_parents(target))
    return found


def closure(modules: tuple[str, ...], root: Path | Roots | None = None) -> dict[str, str]:
    """Every module that ``modules`` import within the first-party packages (``root``: one
    package's folder, or {package: folder}; default :func:`package_roots`), directly or not,
    and the packages above them: {name: normalised source}."""
    root = _roots(root, modules)
    todo = {p for m in modules for p in _with_parents(m)}
    seen: dict[str, str] = {}
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name, root)
        if path is None:
            raise ValueError(f"{name}: no such module of {', '.join(root)} under {root}")
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        todo |= imported(tree, name, path.name == "__init__.py", root) - seen.keys()
        seen[name] = normalised(tree)
    return seen


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def digest_of(modules: tuple[str, ...], root: Path | Roots | None = None) -> str:
    """A sha256 hex digest of the code of ``modules`` and of every first-party module they
    import (:func:`closure`), docstrings and comments left out, with the numerical packages'
    versions."""
    h = hashlib.sha256()
    for name, source in sorted(closure(modules, root).items()):
        h.update(f"{name}\0{len(source)}\0{source}\0".encode())
    for package in NUMERICAL:
        h.update(f"{package}\0{_version(package)}\0".encode())
    return h.hexdigest()


@functools.cache
def code_digest(*modules: str) -> str:
    """:func:`digest_of` ``modules`` (names such as ``tinyworld.certify.assess``) of the installed
    ``rate``. Computed once per process: the code that runs is the code that was imported."""
    return digest_of(modules)
