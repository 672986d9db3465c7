"""User code a template names as ``"module:function"`` (a ``python`` W rule, the ``python``
scorer): found and checked without running it, then imported and called with its failures
turned into one line.

Checking reads the module's source and never imports it (nor its parent packages), so that
`rate validate` runs no template code. Calling imports the module on first use; an exception
raised in the user's code becomes one line naming the function, what it was called on and
the user's file:line, instead of a traceback through rate.
"""

from __future__ import annotations

import ast
import importlib
import sys
import traceback
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from rate.errors import ConfigError, TemplateError
from rate.records import text_preview


def split_spec(spec: str) -> tuple[str, str] | None:
    """``"module:function"`` -> (module, function); None where it is not written so."""
    module, _, name = spec.partition(":")
    if not module or not name.isidentifier():
        return None
    if not all(part.isidentifier() for part in module.split(".")):
        return None
    return module, name


def _find_spec(module: str) -> ModuleSpec | None:
    """The module's spec, found as the import system finds it but without executing the
    module or its parent packages (``importlib.util.find_spec`` imports the parents)."""
    path = None
    spec = None
    parts = module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        if loaded is not None and getattr(loaded, "__spec__", None) is not None:
            spec = loaded.__spec__
        else:
            spec = None
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if find is not None and (spec := find(name, path)) is not None:
                    break
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and i < len(parts) - 1:
            return None  # a plain module cannot hold the next part
    return spec


def module_file(spec: str) -> str | None:
    """The source file of the module ``spec`` names, found without importing it (None: not
    found, or not a .py file)."""
    parts = split_spec(spec)
    found = _find_spec(parts[0]) if parts else None
    origin = (found.origin or "") if found is not None else ""
    return origin if origin.endswith(".py") else None


def _top_level_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module's top level binds (def, class, =, import, also inside if/try/with
    blocks), each with the statement that binds it last."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id: node for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0]: node for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "handlers", "finalbody"):
                for part in getattr(node, block, []):
                    inner = part.body if isinstance(part, ast.ExceptHandler) else [part]
                    out |= _top_level_names(inner)
    return out


def _arity_fault(node: ast.AST, n: int) -> str | None:
    """Why a def cannot be called with ``n`` positional arguments (None: it can)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None  # a class, an assignment or an import: checked when it is called
    a = node.args
    positional = len(a.posonlyargs) + len(a.args)
    required = positional - len(a.defaults)
    kw_required = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    if kw_required:
        return f"needs keyword argument(s) {', '.join(kw_required)}"
    if n < required or (n > positional and a.vararg is None):
        return f"takes {required}" + (f" to {positional}" if positional > required else "")
    return None


def check_function(spec: str, key: str, signature: str, n_args: int | None = None) -> None:
    """The module of ``spec`` must be found and define the function at its top level
    (ConfigError naming ``key`` and the fix); checked by reading the source, not running it.
    ``signature`` is the def the message suggests (``def w(example) -> ...``); with
    ``n_args``, a def found must take that many positional arguments."""
    parts = split_spec(spec)
    if parts is None:
        raise ConfigError(f"{key}: {spec!r}: write 'module:function'")
    module, name = parts
    try:
        found = _find_spec(module)
    except (ImportError, ValueError) as err:
        raise ConfigError(f"{key}: module {module!r} cannot be found ({err})") from None
    if found is None:
        raise ConfigError(
            f"{key}: no module {module!r} on the Python path; add the folder that holds "
            f"{module.replace('.', '/')}.py to PYTHONPATH (export PYTHONPATH=/that/folder)"
        )
    origin = found.origin or ""
    if not origin.endswith(".py"):
        return  # a compiled or namespace module: found; its function is checked on use
    try:
        tree = ast.parse(Path(origin).read_text(encoding="utf-8"), origin)
    except (OSError, UnicodeDecodeError, SyntaxError) as err:
        raise ConfigError(f"{key}: {origin} cannot be read as Python ({err})") from None
    defined = _top_level_names(tree.body)
    if name not in defined:
        raise ConfigError(
            f"{key}: {origin} defines no function {name!r} at its top level; add {signature}"
        )
    fault = _arity_fault(defined[name], n_args) if n_args is not None else None
    if fault is not None:
        raise ConfigError(
            f"{key}: {origin}:{defined[name].lineno}: {name} {fault} argument(s) but is called "
            f"with {n_args}; write {signature}"
        )


def resolve_function(spec: str, label: str) -> Callable[..., Any]:
    """The function ``spec`` names, its module imported (TemplateError naming ``label``, the
    key that names it, where it cannot be)."""
    parts = split_spec(spec)
    if parts is None:
        raise TemplateError(f"{label} {spec!r}: use 'module:function'")
    module, name = parts
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise TemplateError(f"{label} {spec!r}: {err}") from None
    except Exception as err:  # the module itself raised on import
        raise TemplateError(
            f"{label} {spec!r}: importing {module} raised {type(err).__name__}: {err}; "
            "fix the module"
        ) from None
    if not callable(fn):
        raise TemplateError(f"{label} {spec!r}: {module}.{name} is not a function")
    return fn


def _user_frame(err: BaseException, fn: Callable[..., Any]) -> traceback.FrameSummary:
    """Where in the user's code ``err`` was raised: the deepest frame in the file that
    defines ``fn`` (not a library it called), else the deepest frame."""
    frames = traceback.extract_tb(err.__traceback__)
    home = getattr(getattr(fn, "__code__", None), "co_filename", None)
    own = [f for f in frames if f.filename == home]
    return (own or frames)[-1]


def hook_failure(err: Exception, fn: Callable[..., Any], spec: str, label: str, on: str) -> str:
    """One line for an exception raised by the user's function: what it raised, on what,
    and where in the user's file."""
    frame = _user_frame(err, fn)
    said = text_preview(str(err), 200)  # quoted, its newlines escaped: one line
    said = said[1:-1] if len(str(err)) <= 200 else said
    return (
        f"{label} {spec!r} raised {type(err).__name__}: {said} on {on} "
        f"(at {frame.filename}:{frame.lineno})"
    )


def call_hook(fn: Callable[..., Any], spec: str, label: str, args: tuple, on: str, fix: str) -> Any:
    """``fn(*args)``; an exception in it becomes one TemplateError line naming the function
    (``label`` ``spec``), ``on`` (the example it ran on), the user's file:line and ``fix``."""
    try:
        return fn(*args)
    except Exception as err:
        raise TemplateError(f"{hook_failure(err, fn, spec, label, on)}; {fix}") from None
