"""Keeps the import graph of STYLE.md's "Who may import whom" table, and libraries in their rooms.

The checks read a package tree (``importgraph.py``); each rule is run on
``repairloop/`` and, in the second half, on a synthetic tree holding one bad
import, to prove that the rule can fail.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Mapping, Set, Tuple

import pytest
from importgraph import Edge, cycles, edges, graph, package_files

PACKAGE = Path(__file__).resolve().parent.parent / "repairloop"
SKIP = ("plugin",)  # the pytest plugin runs in the project's process: stdlib + pytest only
WORKERS = {
    "runner",
    "classify",
    "context",
    "localise",
    "propose",
    "patch",
    "journal",
    "workspace",
    "redact",
}
# The loop layer is one package, ``loop/`` (DESIGN.md's module map): the root holds no more of it.
LOOP_LAYER = {"loop"}
# The bottom of the graph: records and enums (types), text helpers several layers need (textutil).
BOTTOM = {"types", "textutil"}

ALLOWED: Dict[str, Set[str]] = {
    "types": set(),
    "textutil": set(),
    "errors": BOTTOM,
    "settings": BOTTOM | {"errors"},
    **{w: BOTTOM | {"errors"} for w in WORKERS},
    **{m: BOTTOM | {"settings", "errors"} | WORKERS | LOOP_LAYER for m in LOOP_LAYER},
    # reports: every output format of a run (the console's too) and reading runs back from journals.
    "reports": BOTTOM | {"errors", "journal"},
    # integrations journal their side effects (push, pull request) as intents: the journal's writing
    # side.
    "integrations": BOTTOM | {"loop", "reports", "settings", "errors", "journal"} | LOOP_LAYER,
    # cli reads ``repairloop.__version__`` from the package root when it is not installed.
    "cli": BOTTOM
    | {"loop", "reports", "integrations", "settings", "errors", "__init__"}
    | LOOP_LAYER,
}

# Edges between parts of one top-level package that the table cannot express: (importer, imported).
FORBIDDEN_INSIDE = {
    ("propose.builtin", "propose.llm"),  # the offline engine works without litellm's proposer
}

# Third-party libraries and the modules that may import them (STYLE.md).
ROOMS: Dict[str, Set[str]] = {
    "typer": {"cli"},
    "rich": {"cli", "reports"},
    "git": {"workspace"},
    "unidiff": {"patch"},
    "rapidfuzz": {"patch", "loop"},  # the similarity behind stagnation is loop/stop.py's
    "litellm": {"propose"},
    "openai": {"propose"},
    "coverage": {"localise"},  # fault localisation reads per-test coverage data
}


def top_of(source: str) -> str:
    """``patch/guards.py`` -> ``patch``; ``types.py`` -> ``types``."""
    first = source.split("/", 1)[0]
    return first.removesuffix(".py")


def internal(package: Path, edge: Edge) -> bool:
    return edge.target is not None and (
        edge.target == package.name or edge.target.startswith(package.name + ".")
    )


def all_edges(package: Path) -> List[Edge]:
    return [e for path in package_files(package, SKIP) for e in edges(package, path)]


# -- the checks, each on any package tree ----------------------------------------------------


def table_violations(package: Path, allowed: Mapping[str, Set[str]]) -> List[str]:
    """Imports of another top-level module that ``allowed`` does not list, in any import form."""
    bad = []
    for e in all_edges(package):
        me = top_of(e.source)
        if me in ("__init__", "__main__") or not internal(package, e):
            continue
        assert e.target is not None
        parts = e.target.split(".")
        target = parts[1] if len(parts) > 1 else "__init__"
        if target != me and target not in allowed.get(me, set()):
            bad.append(f"{e.source}:{e.line} {me} -> {target} ({e.how})")
    return bad


def relative_violations(package: Path) -> List[str]:
    """Relative imports that leave their own top-level module (write those absolute, where the table
    sees them)."""
    bad = []
    for e in all_edges(package):
        if e.how == "relative" and e.target is not None:
            parts = e.target.split(".")
            if len(parts) < 2 or parts[1] != top_of(e.source):
                bad.append(
                    f"{e.source}:{e.line} from {e.target} (relative, out of {top_of(e.source)})"
                )
    return bad


def dynamic_violations(package: Path) -> List[str]:
    """``import_module``/``__import__`` of a project module, or of a name the checker cannot
    read."""
    bad = []
    for e in all_edges(package):
        if e.how != "dynamic":
            continue
        if e.target is None or e.target.startswith(".") or internal(package, e):
            bad.append(f"{e.source}:{e.line} dynamic import of {e.target or 'a computed name'}")
    return bad


def inside_violations(package: Path, forbidden: Set[Tuple[str, str]]) -> List[str]:
    """Imports between parts of one top-level package that ``forbidden`` names."""
    bad = []
    for e in all_edges(package):
        if not internal(package, e):
            continue
        assert e.target is not None
        importer = e.source.removesuffix(".py").replace("/", ".")
        imported = e.target.split(".", 1)[1] if "." in e.target else ""
        for frm, to in forbidden:
            if (importer == frm or importer.startswith(frm + ".")) and (
                imported == to or imported.startswith(to + ".")
            ):
                bad.append(f"{e.source}:{e.line} {frm} -> {to}")
    return bad


def cycle_violations(package: Path) -> List[List[str]]:
    """Import cycles between modules, however the imports are written (TYPE_CHECKING and lazy ones
    too)."""
    return cycles(graph(package, SKIP))


# -- the rules on repairloop/ ----------------------------------------------------------------


def test_internal_imports_follow_the_table() -> None:
    bad = table_violations(PACKAGE, ALLOWED)
    assert not bad, "imports the table does not allow:\n" + "\n".join(bad)


def test_no_relative_import_leaves_its_module() -> None:
    bad = relative_violations(PACKAGE)
    assert not bad, "\n".join(bad)


def test_no_dynamic_import_of_project_modules() -> None:
    bad = dynamic_violations(PACKAGE)
    assert not bad, "\n".join(bad)


def test_forbidden_edges_inside_packages() -> None:
    bad = inside_violations(PACKAGE, FORBIDDEN_INSIDE)
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    found = cycle_violations(PACKAGE)
    assert not found, f"import cycles: {found}"


def test_third_party_libraries_stay_in_their_rooms() -> None:
    bad = []
    for e in all_edges(PACKAGE):
        lib = (e.target or "").split(".")[0]
        if lib in ROOMS and top_of(e.source) not in ROOMS[lib]:
            bad.append(f"{e.source}:{e.line} imports {lib}")
    assert not bad, "\n".join(bad)


def test_litellm_is_imported_only_inside_functions() -> None:
    """Module-level litellm imports would cost ~3 s on every start (TECH-NOTES 1.2)."""
    bad = []
    for path in package_files(PACKAGE, SKIP):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                if any(n.split(".")[0] in ("litellm", "openai") for n in names):
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, bad


PLUGIN_FILES = sorted((PACKAGE / "runner" / "plugin").glob("repairloop_pytest_plugin*.py"))


# The one plugin module that imports by a computed name: modules the project's environment itself
# loaded from outside the tree (found by the warm server's rehearsal child), never the project's
# own.
PRELOAD_MODULE = "repairloop_pytest_plugin_preload.py"


def plugin_import_faults(files: List[Path]) -> List[str]:
    """Imports of the plugin's modules that are neither stdlib, pytest, coverage nor a sibling of
    the plugin (a computed name is allowed in ``PRELOAD_MODULE`` only)."""
    allowed = (
        set(sys.stdlib_module_names) | {"pytest", "_pytest", "coverage"} | {f.stem for f in files}
    )
    return [
        f"{path.name}:{e.line} imports {e.target}"
        for path in files
        for e in edges(path.parent, path)
        if not (e.how == "absolute" and (e.target or "").split(".")[0] in allowed)
        and not (e.how == "dynamic" and e.target is None and path.name == PRELOAD_MODULE)
    ]


def test_plugin_uses_only_stdlib_and_pytest() -> None:
    assert len(PLUGIN_FILES) > 1 and not plugin_import_faults(PLUGIN_FILES)


def test_a_computed_import_anywhere_else_in_the_plugin_is_a_fault(tmp_path: Path) -> None:
    bad = tmp_path / "repairloop_pytest_plugin_bad.py"
    bad.write_text(
        "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n",
        encoding="utf-8",
    )
    assert plugin_import_faults([bad]) == ["repairloop_pytest_plugin_bad.py:5 imports None"]
    fine = tmp_path / PRELOAD_MODULE
    fine.write_text(bad.read_text(encoding="utf-8"), encoding="utf-8")
    assert plugin_import_faults([fine]) == []
    fine.write_text(
        "import importlib\nimportlib.import_module('repairloop.types')\n", encoding="utf-8"
    )
    assert plugin_import_faults([fine]) == [
        f"{PRELOAD_MODULE}:2 imports repairloop.types"
    ]  # a named one is not


def test_the_plugin_import_rule_fails_on_repairloop(tmp_path: Path) -> None:
    bad = tmp_path / "repairloop_pytest_plugin_bad.py"
    bad.write_text("import pytest\nfrom repairloop.types import TestReport\n", encoding="utf-8")
    assert plugin_import_faults([bad]) == [
        "repairloop_pytest_plugin_bad.py:2 imports repairloop.types.TestReport"
    ]


# -- each rule fails on a bad import (a synthetic tree, the same checks) -------------------------

BASE = {
    "__init__.py": "",
    "types.py": "",
    "textutil.py": "",
    "errors.py": "from repairloop.types import X\n",
    "patch/__init__.py": "from repairloop.patch.guards import check\n",
    "patch/guards.py": "from repairloop.types import X\nfrom .changes import Policy\n",
    "patch/changes.py": "",
    "context/__init__.py": "",
    "context/source.py": "from repairloop.types import X\n",
    "propose/__init__.py": "",
    "propose/llm.py": "",
    "propose/prompts.py": "",
    "propose/builtin/__init__.py": "from . import engine\n",
    "propose/builtin/engine.py": "from ..prompts import render\nfrom repairloop.propose.builtin "
    "import search\n",
    "propose/builtin/search.py": "",
    "loop/__init__.py": "",
    "loop/session.py": "from repairloop.loop.attempt import run\n",
    "loop/attempt.py": "",
}


def tree(tmp_path: Path, extra: Mapping[str, str]) -> Path:
    package = tmp_path / "repairloop"
    for rel, text in {**BASE, **extra}.items():
        target = package / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return package


def test_the_clean_synthetic_tree_passes_every_rule(tmp_path: Path) -> None:
    package = tree(tmp_path, {})
    assert table_violations(package, ALLOWED) == []
    assert relative_violations(package) == []
    assert dynamic_violations(package) == []
    assert inside_violations(package, FORBIDDEN_INSIDE) == []
    assert cycle_violations(package) == []


@pytest.mark.parametrize(
    "source, text, expected",
    [
        (
            "context/source.py",
            "from ..patch.guards import check\n",
            "context/source.py:1 context -> patch (relative)",
        ),
        (
            "context/source.py",
            "from .. import patch\n",
            "context/source.py:1 context -> patch (relative)",
        ),
        (
            "patch/guards.py",
            "def f():\n    from repairloop.context import source\n",
            "patch/guards.py:2 patch -> context (absolute)",
        ),
        ("types.py", "from repairloop import errors\n", "types.py:1 types -> errors (absolute)"),
        (
            "patch/changes.py",
            "import importlib\nm = importlib.import_module('repairloop.context.source')\n",
            "patch/changes.py:2 patch -> context (dynamic)",
        ),
    ],
)
def test_table_fails_on_a_bad_import_in_any_form(
    tmp_path: Path, source: str, text: str, expected: str
) -> None:
    assert table_violations(tree(tmp_path, {source: text}), ALLOWED) == [expected]


@pytest.mark.parametrize("text", ["from ..types import X\n", "from ...repairloop import types\n"])
def test_relative_imports_may_not_leave_their_module(tmp_path: Path, text: str) -> None:
    bad = relative_violations(tree(tmp_path, {"patch/changes.py": text}))
    assert (
        len(bad) == 1 and bad[0].startswith("patch/changes.py:1 from ") and "out of patch" in bad[0]
    ), bad


@pytest.mark.parametrize(
    "text",
    [
        "import importlib\nm = importlib.import_module('repairloop.types')\n",
        "from importlib import import_module\nm = import_module('repairloop.patch.changes')\n",
        "m = __import__('repairloop.types')\n",
        "import importlib\nm = importlib.import_module('.changes', package='repairloop.patch')\n",
        "import importlib\nname = 'repairloop.' + 'types'\nm = importlib.import_module(name)\n",
    ],
)
def test_dynamic_imports_of_project_modules_fail(tmp_path: Path, text: str) -> None:
    bad = dynamic_violations(tree(tmp_path, {"patch/guards.py": text}))
    assert len(bad) == 1 and bad[0].startswith("patch/guards.py:"), bad


def test_dynamic_import_of_a_library_is_fine(tmp_path: Path) -> None:
    assert (
        dynamic_violations(
            tree(
                tmp_path,
                {"patch/guards.py": "import importlib\nj = importlib.import_module('json')\n"},
            )
        )
        == []
    )


@pytest.mark.parametrize(
    "text",
    [
        "from repairloop.propose.llm import LLMProposer\n",
        "from repairloop.propose import llm\n",
        "from .. import llm\n",
        "def f():\n    from ..llm import LLMProposer\n",
    ],
)
def test_the_offline_engine_may_not_import_the_llm_proposer(tmp_path: Path, text: str) -> None:
    bad = inside_violations(tree(tmp_path, {"propose/builtin/search.py": text}), FORBIDDEN_INSIDE)
    assert len(bad) == 1 and bad[0].endswith("propose.builtin -> propose.llm"), bad


@pytest.mark.parametrize(
    "extra, cycle",
    [
        (
            {
                "loop/attempt.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from "
                "repairloop.loop.session import Session\n"
            },
            ["repairloop.loop.attempt", "repairloop.loop.session"],
        ),
        (
            {"patch/changes.py": "from .guards import check\n"},
            ["repairloop.patch.changes", "repairloop.patch.guards"],
        ),
        (
            {
                "propose/builtin/search.py": "def f():\n    from repairloop.propose.builtin.engine "
                "import go\n"
            },
            ["repairloop.propose.builtin.engine", "repairloop.propose.builtin.search"],
        ),
    ],
)
def test_import_cycles_fail_however_the_import_is_written(
    tmp_path: Path, extra: Dict[str, str], cycle: List[str]
) -> None:
    assert cycle_violations(tree(tmp_path, extra)) == [cycle]


# -- the folders show the layers, and each name says one thing
# --------------------------------------

ROOT_MODULES = {
    "__init__.py",
    "__main__.py",
    "errors.py",
    "textutil.py",
    "py.typed",
    "defaults.toml",
}


def test_the_package_root_holds_no_layer_of_its_own() -> None:
    """Every layer is a folder (DESIGN.md's module map); the root keeps the entry points and the
    bottom helpers."""
    loose = sorted(p.name for p in PACKAGE.iterdir() if p.is_file() and p.name not in ROOT_MODULES)
    assert loose == []


def duplicate_names(package: Path) -> Dict[str, List[str]]:
    """Module base names (``__init__`` aside) and class names that occur more than once in
    ``package``."""
    found: Dict[str, List[str]] = {}
    for path in package_files(package, SKIP):
        rel = str(path.relative_to(package))
        if path.name != "__init__.py":
            found.setdefault(f"module {path.stem}", []).append(rel)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(f"class {node.name}", []).append(rel)
    return {name: places for name, places in found.items() if len(places) > 1}


def test_no_two_modules_and_no_two_classes_share_a_name() -> None:
    assert duplicate_names(PACKAGE) == {}


def test_a_shared_name_is_found(tmp_path: Path) -> None:
    package = tree(
        tmp_path,
        {
            "context/session.py": "class Plan:\n    pass\n",
            "loop/session.py": "class Plan:\n    pass\n",
        },
    )
    assert duplicate_names(package) == {
        "module session": ["context/session.py", "loop/session.py"],
        "class Plan": ["context/session.py", "loop/session.py"],
    }


# Honest size (STYLE.md): ``ruff format`` at 100 columns (``make lint``) keeps width out of
# these numbers, so a module or a function can only shrink by losing code.
MODULE_LINES = 400  # a module over this fails; aim under 300
FUNCTION_BODY_LINES = 50  # a function's body, its docstring aside


def body_lines(node: ast.AST) -> int:
    """Lines of a function's body from its first statement after the docstring to its end."""
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    first = node.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if docstring and isinstance(first.value.value, str) and len(node.body) > 1:
        first = node.body[1]
    return (node.end_lineno or first.lineno) - first.lineno + 1


def oversized(package: Path) -> List[str]:
    """``path: N lines`` for each module over MODULE_LINES and ``path:func: N lines`` for each
    function whose body is over FUNCTION_BODY_LINES, plugin modules included."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel, text = path.relative_to(package), path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            found.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if body_lines(node) > FUNCTION_BODY_LINES:
                    found.append(f"{rel}:{node.name}: {body_lines(node)} lines")
    return found


def test_no_module_over_400_lines_and_no_function_body_over_50() -> None:
    assert oversized(PACKAGE) == []


def test_an_oversized_module_and_function_are_found(tmp_path: Path) -> None:
    steps = [f"    x{n} = {n}\n" for n in range(51)]
    package = tree(
        tmp_path,
        {
            "big.py": "X = 1\n" * 401,
            "long.py": 'def f():\n    """Doc."""\n' + "".join(steps),
            "fine.py": 'def g():\n    """Doc."""\n' + "".join(steps[:50]),
        },
    )
    assert oversized(package) == ["big.py: 401 lines", "long.py:f: 51 lines"]
