"""Keeps the import graph of STYLE.md's "Who may import whom" table, and libraries in their rooms."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "repairloop"
WORKERS = {"runner", "classify", "context", "propose", "patch", "stop", "journal", "workspace", "redact"}
LOOP_LAYER = {"loop", "session", "suite", "attempt", "validation", "ending", "chain", "recorded", "intents"}

ALLOWED: Dict[str, Set[str]] = {
    "types": set(),
    "errors": {"types"},
    "settings": {"types", "errors"},
    **{w: {"types", "errors"} for w in WORKERS},
    **{m: {"settings", "types", "errors"} | WORKERS | LOOP_LAYER for m in LOOP_LAYER},
    "report": {"types", "errors", "journal"},
    "reports": {"types", "errors", "journal"},
    # integrations journal their side effects (push, pull request) as intents: the journal's writing side.
    "integrations": {"loop", "report", "settings", "types", "errors", "journal"} | LOOP_LAYER,
    "cli": {"loop", "report", "reports", "integrations", "settings", "types", "errors"} | LOOP_LAYER,
}

# Third-party libraries and the modules that may import them (STYLE.md).
ROOMS: Dict[str, Set[str]] = {
    "typer": {"cli"},
    "rich": {"cli", "report"},
    "git": {"workspace"},
    "unidiff": {"patch"},
    "rapidfuzz": {"patch", "stop"},
    "litellm": {"propose"},
    "openai": {"propose"},
    "coverage": {"propose"},  # the offline engine reads per-test coverage data
}


def top_module(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 else rel.stem


def imports(path: Path) -> Iterator[Tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "repairloop":
                for alias in node.names:
                    yield f"repairloop.{alias.name}", node.lineno
            else:
                yield node.module, node.lineno


def package_files() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "plugin" in path.relative_to(PACKAGE).parts:
            continue  # the pytest plugin runs in the project's process: stdlib + pytest only
        yield path


def test_internal_imports_follow_the_table() -> None:
    bad = []
    for path in package_files():
        me = top_module(path)
        if me in ("__init__", "__main__"):
            continue
        for name, line in imports(path):
            if not name.startswith("repairloop."):
                continue
            target = name.split(".")[1]
            if target != me and target not in ALLOWED[me]:
                bad.append(f"{path.relative_to(PACKAGE)}:{line} {me} -> {target}")
    assert not bad, "imports the table does not allow:\n" + "\n".join(bad)


def test_third_party_libraries_stay_in_their_rooms() -> None:
    bad = []
    for path in package_files():
        me = top_module(path)
        for name, line in imports(path):
            lib = name.split(".")[0]
            if lib in ROOMS and me not in ROOMS[lib]:
                bad.append(f"{path.relative_to(PACKAGE)}:{line} imports {lib}")
    assert not bad, "\n".join(bad)


def test_litellm_is_imported_only_inside_functions() -> None:
    """Module-level litellm imports would cost ~3 s on every start (TECH-NOTES 1.2)."""
    bad = []
    for path in package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n.split(".")[0] in ("litellm", "openai") for n in names):
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, bad


def test_plugin_uses_only_stdlib_and_pytest() -> None:
    import sys

    plugin = PACKAGE / "runner" / "plugin" / "repairloop_pytest_plugin.py"
    allowed = set(sys.stdlib_module_names) | {"pytest", "_pytest", "coverage"}
    for name, line in imports(plugin):
        assert name.split(".")[0] in allowed, f"plugin line {line} imports {name}"
