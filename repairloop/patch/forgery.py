"""Content rules against forged verdicts: code that recognises the test run instead of fixing the
code.

``tamper.py`` refuses what weakens the oracle in plain sight (skips, exits,
runner patches, fake summaries, deleted assertions). These rules refuse what
a candidate's code can do from inside the code under test to make a failing
test pass without a fix, each seen in trials with a scripted model:

- ``detect``: looking at the harness to behave differently under test:
  ``sys.modules``/``sys.argv`` lookups, stack and frame inspection, tracing
  and profiling hooks, the garbage collector's object lists, strings naming a
  test runner or repairloop's results plugin, imports of the project's tests;
- ``constant_compare``: comparison or truth methods that answer a constant
  (an object equal to everything passes any ``assert x == expected``), and
  ``unittest.mock.ANY``;
- ``dynamic``: code built at run time (``eval``, ``exec``, ``compile``,
  ``__import__``, ``importlib``), or ``ctypes``, which would hide any of the above;
- more exits (``os.kill``, ``signal.raise_signal``, ``os.exec*``,
  ``KeyboardInterrupt``), counted with ``tamper.py``'s exits.

Like every content rule, a construct counts only when the candidate *adds* it
(``tamper.check_tamper`` compares occurrences before and after). Stdlib only.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, Optional, Tuple

# Attributes (dotted) that let code see the harness: the modules loaded, the command line, the
# call stack, tracing and profiling hooks, every live object.
INTROSPECTION = frozenset(
    {
        "sys.modules",
        "sys.argv",
        "sys.orig_argv",
        "sys._getframe",
        "sys.settrace",
        "sys.setprofile",
        "sys.gettrace",
        "sys.getprofile",
        "sys.monitoring",
        "sys.audit",
        "sys.addaudithook",
        "sys.meta_path",
        "sys.path_hooks",
        "inspect.stack",
        "inspect.currentframe",
        "inspect.getouterframes",
        "inspect.getframeinfo",
        "inspect.trace",
        "traceback.extract_stack",
        "traceback.format_stack",
        "traceback.print_stack",
        "traceback.walk_stack",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
    }
)
# A string that names the harness: a test runner's module (``"pytest"``, ``"_pytest.runner"``), its
# configuration (``conftest``), a pytest hook (``pytest_runtest_makereport``), repairloop's plugin,
# or a runner's environment variable. A path that merely holds such a word
# (``/tmp/pytest-of-user/...``) does not.
HARNESS_NAME = re.compile(
    r"^\s*(?i:_?pytest|py\.test|unittest|nose2?|doctest|conftest|repairloop\w*)([._:]\w*)*\s*$"
    r"|pytest_\w+|PYTEST_\w+|conftest\.py|repairloop_"
)
# More ways to end the process early than tamper.EXITS lists.
MORE_EXITS = frozenset(
    {
        "os.kill",
        "os.killpg",
        "signal.raise_signal",
        "signal.pthread_kill",
        "signal.alarm",
        "signal.setitimer",
        "os.execv",
        "os.execve",
        "os.execl",
        "os.execle",
        "os.execlp",
        "os.execlpe",
        "os.execvp",
        "os.execvpe",
        "_thread.interrupt_main",
        "os.fork",
        "os.forkpty",
    }
)
COMPARISON_METHODS = frozenset(
    {
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__bool__",
        "__contains__",
        "__instancecheck__",
        "__subclasscheck__",
    }
)
# Links make one path write another: a test file edited through a link with an innocent name.
LINK_CALLS = frozenset({"os.symlink", "os.link", "symlink_to", "hardlink_to", "link_to"})
DYNAMIC_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "importlib.import_module",
        "importlib.reload",
        "importlib.__import__",
        "import_module",
        "runpy.run_path",
        "runpy.run_module",
    }
)

WHY: Dict[str, Tuple[str, str]] = {
    "detect": (
        "looks at the test harness (runner modules, command line, call stack or live objects) "
        "to behave differently under test",
        "fix the code for every caller; code must not know whether a test is running",
    ),
    "constant_compare": (
        "makes a comparison or truth test answer a constant, so any assertion would pass",
        "compare real values; fix the computation the test checks",
    ),
    "dynamic": (
        "builds or loads code at run time (eval, exec, __import__, importlib, ctypes), "
        "which no repair needs",
        "write the fix as plain code",
    ),
    "exit": ("ends the test process early", "return a value or raise an exception instead"),
    "link": (
        "creates a file link, which can make one path write another (a test through an innocent "
        "name)",
        "edit files by their own paths",
    ),
}


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for a Name/Attribute chain (through calls: ``a.b().c`` -> ``a.b.c``); else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else ""
    if isinstance(node, ast.Call):
        return dotted_name(node.func)
    return ""


def _names_harness(text: str) -> bool:
    return bool(HARNESS_NAME.search(text))


def detect(node: ast.AST) -> Optional[str]:
    """``detect`` for introspection attributes, imports of them or of the tests, and harness
    names."""
    if isinstance(node, ast.Attribute) and dotted_name(node) in INTROSPECTION:
        return "detect"
    if isinstance(node, ast.ImportFrom):
        module = node.module or ""
        if any(f"{module}.{alias.name}" in INTROSPECTION for alias in node.names):
            return "detect"
        if _imports_tests(module) or any(_imports_tests(alias.name) for alias in node.names):
            return "detect"
    if isinstance(node, ast.Import) and any(_imports_tests(alias.name) for alias in node.names):
        return "detect"
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _names_harness(node.value)
    ):
        return "detect"
    return None


def _imports_tests(module: str) -> bool:
    """True for a module path that names the project's tests (``tests.test_x``, ``conftest``)."""
    parts = [p for p in module.split(".") if p]
    return any(
        p in ("tests", "test", "conftest") or p.startswith("test_") or p.endswith("_test")
        for p in parts
    )


def constant_compare(node: ast.AST) -> Optional[str]:
    """``constant_compare`` for a comparison/truth method returning a constant, or ``mock.ANY``."""
    if (
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name in COMPARISON_METHODS
    ):
        body = [
            s
            for s in node.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if (
            len(body) == 1
            and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Constant)
        ) or _answers_blind(node):
            return "constant_compare"
    if (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Lambda)
        and isinstance(node.value.body, ast.Constant)
        and any(isinstance(t, ast.Name) and t.id in COMPARISON_METHODS for t in node.targets)
    ):
        return "constant_compare"
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "ANY"
        and dotted_name(node).split(".")[0] in ("mock", "unittest")
    ):
        return "constant_compare"
    if (
        isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith(("unittest.mock", "mock"))
        and any(alias.name == "ANY" for alias in node.names)
    ):
        return "constant_compare"
    return None


def _answers_blind(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """True when a comparison or truth method can answer without looking at its object: a
    ``return True``/``False``/number in its own body (not under a condition), or a return whose
    value never reads the first parameter (``return other == other``). ``NotImplemented`` and
    ``None`` are the protocol's "do not know", a local variable or ``super()`` may carry the
    object, and class checks (``__instancecheck__``) look at their argument by design."""
    if not method.args.args or method.name in ("__instancecheck__", "__subclasscheck__"):
        return False
    me = method.args.args[0].arg
    carriers = {me, "super"} | {
        n.id for n in ast.walk(method) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for statement in method.body:
        if (
            isinstance(statement, ast.Return)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, (bool, int, float))
        ):
            return True
    for node in ast.walk(method):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if isinstance(value, ast.Constant) or (
                isinstance(value, ast.Name) and value.id == "NotImplemented"
            ):
                continue
            if not any(isinstance(n, ast.Name) and n.id in carriers for n in ast.walk(value)):
                return True
    return False


def dynamic(node: ast.AST) -> Optional[str]:
    """``dynamic`` for eval/exec/compile/__import__/importlib calls and ctypes imports."""
    if isinstance(node, ast.Call) and dotted_name(node.func) in DYNAMIC_CALLS:
        return "dynamic"
    if isinstance(node, ast.Import) and any(
        a.name.split(".")[0] in ("ctypes", "importlib") for a in node.names
    ):
        return "dynamic"
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
        "ctypes",
        "importlib",
    ):
        return "dynamic"
    return None


def links(node: ast.AST) -> Optional[str]:
    """``link`` for calls that create symbolic or hard links."""
    if isinstance(node, ast.Call):
        name = dotted_name(node.func)
        if name in LINK_CALLS or name.rsplit(".", 1)[-1] in (
            "symlink_to",
            "hardlink_to",
            "link_to",
            "symlink",
        ):
            return "link"
    return None


def exits(node: ast.AST) -> Optional[str]:
    """``exit`` for the process-ending calls tamper.EXITS does not list, and
    ``KeyboardInterrupt``."""
    if isinstance(node, ast.Attribute) and dotted_name(node) in MORE_EXITS:
        return "exit"
    if isinstance(node, ast.Name) and node.id == "KeyboardInterrupt":
        return "exit"
    return None


RULES: Tuple[Callable[[ast.AST], Optional[str]], ...] = (
    exits,
    detect,
    constant_compare,
    dynamic,
    links,
)
