"""The secrets a project's Python code holds as literals: strings given to secret-looking names.

Read with ``ast``, never run. A string is taken where code gives it to a name that
``names.is_secret_key`` calls secret:

- assigned: ``API_KEY = "..."``, ``self.token = "..."``, ``config["password"] = "..."``,
  ``SECRET: str = "..."``, and pairwise in ``USER, PASSWORD = "app", "..."``;
- passed: ``connect(password="...")``, ``dict(api_key="...")``;
- a default: ``def login(user, password="...")``, ``os.getenv("DB_PASSWORD", "...")``,
  ``os.environ.get("SECRET_KEY", "...")``, ``environ.setdefault(...)``;
- a dictionary entry: ``{"api_key": "..."}``.

and when the string could be one (``could_be_secret``): no placeholder, no name as code writes
one, no prose.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator, List, Optional, Tuple

from repairloop.redact.names import MIN_SECRET_CHARS, is_secret_key
from repairloop.redact.shapes import is_code_name, is_placeholder

_KEY_SHAPE = re.compile(r"[A-Za-z][A-Za-z_.\-]*")
MAX_LITERAL_CHARS = 512  # a longer string is text or data, not a key a settings module holds


def could_be_secret(value: str) -> bool:
    """True for a string literal that could be a secret given to a secret-looking name: between
    MIN_SECRET_CHARS and MAX_LITERAL_CHARS characters, on one line and without white space (a
    message is not a key), and neither a placeholder, a name as code writes one (``SECRET_KEY``,
    ``_auth_user_id``, ``settings.API_TOKEN``) nor itself a secret-looking key made of letters
    (``x-api-key``, ``Authorization``)."""
    return (
        MIN_SECRET_CHARS <= len(value) <= MAX_LITERAL_CHARS
        and not any(c.isspace() for c in value)
        and not is_placeholder(value)
        and not is_code_name(value)
        and not (is_secret_key(value) and _KEY_SHAPE.fullmatch(value))
    )


def _text(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _target_name(node: ast.AST) -> Optional[str]:
    """The name an assignment target gives: ``x``, ``obj.x``, ``obj["x"]``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _text(node.slice)
    return None


def _assigned(targets: List[ast.expr], value: ast.expr) -> Iterator[Tuple[str, ast.AST]]:
    for target in targets:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            yield from (
                (name, v)
                for t, v in zip(target.elts, value.elts)
                if (name := _target_name(t)) is not None
            )
        elif (name := _target_name(target)) is not None:
            yield name, value


def _defaults(args: ast.arguments) -> Iterator[Tuple[str, ast.AST]]:
    positional = args.posonlyargs + args.args
    yield from zip(
        (a.arg for a in positional[len(positional) - len(args.defaults) :]), args.defaults
    )
    yield from ((a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None)


def _named_strings(node: ast.AST) -> Iterator[Tuple[str, ast.AST]]:
    """``(name, value node)`` pairs where ``node`` gives a value to a name (module docstring)."""
    if isinstance(node, ast.Assign):
        yield from _assigned(node.targets, node.value)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        yield from _assigned([node.target], node.value)
    elif isinstance(node, ast.keyword) and node.arg:
        yield node.arg, node.value
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        yield from _defaults(node.args)
    elif isinstance(node, ast.Dict):
        yield from ((k, v) for key, v in zip(node.keys, node.values) if (k := _text(key)))
    elif isinstance(node, ast.Call) and len(node.args) == 2:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called in ("get", "getenv", "setdefault") and (name := _text(node.args[0])):
            yield name, node.args[1]


def code_secrets(source: str) -> List[str]:
    """The string literals ``source`` (Python) gives to secret-looking names and that could be
    secrets (``could_be_secret``), in order, once each; none for code that does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found: List[str] = []
    for node in ast.walk(tree):
        for name, value in _named_strings(node):
            text = _text(value)
            if text is not None and is_secret_key(name) and could_be_secret(text):
                found.append(text)
    return list(dict.fromkeys(found))
