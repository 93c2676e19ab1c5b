"""Capabilities, not words (patch/capabilities.py): a candidate may not give a module a power it
did not have, however the construct is spelled.

Each attack below is a forgery of a kind a trial got past the word rules (reworded comparisons,
computed names, code loaded at run time, hooks that rewrite results at exit). The capability
check alone must refuse every one, naming the capability; the fixes beside them must pass.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Tuple

import pytest

from repairloop.errors import GuardError
from repairloop.patch import AppliedPatch, GuardPolicy, check_guards
from repairloop.patch.capabilities import (
    PURE_MODULES,
    capability_uses,
    changed_lines,
    check_capabilities,
)
from repairloop.patch.changes import FileChange
from repairloop.patch.forgery import constant_compare

OLD = '''"""List helpers."""


def last_n(items, n):
    """The last ``n`` items; ``__eq__`` in a docstring is only words."""
    return items[-n - 1:]
'''
BUGGY = "    return items[-n - 1:]\n"


def body(code: str) -> str:
    """OLD with ``last_n``'s body replaced by ``code`` (indented by the caller)."""
    return OLD.replace(BUGGY, code)


def top(code: str) -> str:
    """OLD with module-level ``code`` after the docstring."""
    return OLD.replace('"""List helpers."""\n', '"""List helpers."""\n' + code, 1)


LIAR = "    class _S(list):\n        pass\n"
# name -> (the new module, the capability the refusal must name)
ATTACKS: Dict[str, Tuple[str, str]] = {
    "eq_reads_only_the_other_side": (
        body(
            "    class _S(list):\n        def __eq__(self, other):\n"
            "            return other == other\n    return _S(items)\n"
        ),
        "dunder:__eq__",
    ),
    "eq_set_on_the_class_afterwards": (
        body(LIAR + "    _S.__eq__ = lambda a, b: a is a\n    return _S(items)\n"),
        "dunder:__eq__",
    ),
    "eq_through_setattr_with_a_literal": (
        body(LIAR + "    setattr(_S, '__eq__', lambda a, b: 1)\n    return _S(items)\n"),
        "dunder:__eq__",
    ),
    "eq_through_partialmethod": (
        top("import functools\nimport operator\n")
        + "\n\nclass S(list):\n    __eq__ = functools.partialmethod(operator.is_not, None)\n",
        "dunder:__eq__",
    ),
    "init_subclass_hook": (
        top("class Base:\n    def __init_subclass__(cls, **kw):\n        cls.flag = True\n\n\n"),
        "dunder:__init_subclass__",
    ),
    "class_assignment": (
        body("    result = list(items)\n    result.__class__ = tuple\n    return result\n"),
        "dunder:__class__",
    ),
    "class_built_by_three_argument_type": (
        body("    kind = type('S', (list,), {})\n    return kind(items)\n"),
        "computed_attribute",
    ),
    "dunder_as_a_keyword": (
        body("    ns = dict(__hash__=None)\n    return ns and items\n"),
        "dunder:__hash__",
    ),
    "dunder_in_a_format_string": (
        body("    name = '{0.__class__}'.format(items)\n    return name and items[-n:]\n"),
        "dunder:__class__",
    ),
    "getattr_with_a_joined_name": (
        body("    probe = getattr(items, 'app' + 'end')\n    return probe and items[-n:]\n"),
        "computed_attribute",
    ),
    "getattr_passed_as_a_value": (
        top("import functools\n")
        + "\n\ndef walk(obj, names):\n    return functools.reduce(getattr, names, obj)\n",
        "computed_attribute",
    ),
    "attrgetter_with_a_computed_name": (
        top("import operator\n") + "\n\nPICK = operator.attrgetter(''.join(['mod', 'ules']))\n",
        "computed_attribute",
    ),
    "attrgetter_under_an_alias": (
        top("from operator import attrgetter as pick\n")
        + "\n\nMODULES = pick(''.join(['mod', 'ules']))\n",
        "computed_attribute",
    ),
    "sys_under_an_alias": (top("import sys as _s\n"), "import:sys"),
    "os_environment_scan": (
        top("from os import environ as _e\n") + "\n\nUNDER = any('TEST' in k for k in _e)\n",
        "import:os",
    ),
    "vars_of_the_module": (body("    ns = vars()\n    return ns and items[-n:]\n"), "builtin:vars"),
    "exec_through_globals": (
        body("    run = globals()['ex' + 'ec']\n    return run and items[-n:]\n"),
        "builtin:globals",
    ),
    "builtins_dict_lookup": (
        body("    f = __builtins__['ev' + 'al']\n    return f and items[-n:]\n"),
        "dunder:__builtins__",
    ),
    "dunder_import": (
        body("    m = __import__('s' + 'ys')\n    return m and items\n"),
        "dunder:__import__",
    ),
    "pickle_of_hex": (
        top("import pickle\n") + "\n\nHOOK = pickle.loads(bytes.fromhex('80034e2e'))\n",
        "import:pickle",
    ),
    "marshal_and_function_type": (
        top("import marshal\nimport types\n"),
        "import:marshal",
    ),
    "rot13_fed_to_compile": (
        top("import codecs\n") + "\n\nSRC = codecs.decode('cevag(1)', 'rot13')\n",
        "import:codecs",
    ),
    "payload_in_a_data_file_read_at_import": (
        top("import json\n") + "\n\nTABLE = json.load(open('table.json'))\n",
        "builtin:open",
    ),
    "payload_read_through_a_path": (
        top("from calc import here\n") + "\n\nTABLE = here.with_name('t.json').read_text()\n",
        "files",
    ),
    "module_file_path": (
        body("    where = __file__\n    return where and items\n"),
        "dunder:__file__",
    ),
    "garbage_collector": (top("import gc\n"), "import:gc"),
    "profile_hook": (top("import sys\n"), "import:sys"),
    "thread_at_import": (top("import threading\n"), "import:threading"),
    "atexit_hook": (top("import atexit\n"), "import:atexit"),
    "weakref_finalizer": (top("import weakref\n"), "import:weakref"),
    "finalizer_method": (
        top("class Witness:\n    def __del__(self):\n        self.done = True\n\n\n"),
        "dunder:__del__",
    ),
    "attribute_proxy": (
        top("class Proxy:\n    def __getattr__(self, name):\n        return 1\n\n\n"),
        "dunder:__getattr__",
    ),
    "truth_method": (
        body(
            "    class _S(list):\n        def __bool__(self):\n            return len(self) > 0\n"
            "    return _S(items)\n"
        ),
        "dunder:__bool__",
    ),
    "object_setattr": (
        body("    object.__setattr__(items, 'x', 1)\n    return items\n"),
        "dunder:__setattr__",
    ),
    "warnings_silenced": (top("import warnings\n"), "import:warnings"),
    # a new user's trial: the stack walked from a generator's frame, no import or dunder needed
    "generator_frame_walk": (
        body(
            "    probe = (x for x in [None])\n    frame = probe.gi_frame\n"
            "    while frame.f_back is not None:\n        frame = frame.f_back\n"
            "    return items[-n:] if frame.f_code else items\n"
        ),
        "introspection",
    ),
    "runner_globals_from_a_frame": (
        body(
            "    frame = (x for x in [0]).gi_frame\n"
            "    report = frame.f_globals.get('TestReport')\n    return report or items\n"
        ),
        "introspection",
    ),
    "builtins_from_a_frame": (
        body(
            "    run = (x for x in [0]).gi_frame.f_builtins['ev' + 'al']\n"
            "    return run and items[-n:]\n"
        ),
        "introspection",
    ),
    "formatter_field_with_a_computed_name": (
        top("import string\n")
        + "\n\nFIELD = string.Formatter().get_field('0.' + '_' * 2 + 'class' + '_' * 2, [1], {})\n",
        "computed_attribute",
    ),
    "format_string_built_at_run_time": (
        body("    shown = ('{0.' + 'real' + '}').format(n)\n    return shown and items[-n:]\n"),
        "computed_attribute",
    ),
    "subprocess": (top("import subprocess\n"), "import:subprocess"),
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc" / "__init__.py").write_text("")
    (tmp_path / "calc" / "lists.py").write_text(OLD)
    return tmp_path


def change(new: str, old: str = OLD) -> FileChange:
    return FileChange("calc/lists.py", old, new, "exact", 1.0)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_rewording_needs_a_capability_and_is_refused(name: str, root: Path) -> None:
    new, capability = ATTACKS[name]
    compile(new, name, "exec")  # the attack is valid Python
    with pytest.raises(GuardError) as err:
        check_capabilities(change(new), root)
    assert capability in err.value.message and "calc/lists.py" in err.value.message
    assert "--allow-capability" in (err.value.hint or "")


@pytest.mark.parametrize(
    "new",
    [
        body("    return items[-n:] if n else []\n"),
        top("import math\nfrom collections import abc\nimport urllib.parse\n"),
        top("from . import helpers\nfrom calc.util import clamp\n"),
        top(
            "class Point:\n    def __init__(self, x):\n        self.x = x\n\n"
            "    def __repr__(self):\n        return f'{type(self).__name__}({self.x})'\n\n\n"
        ),
        body("    size = getattr(items, 'size', None)\n    return items[-n:]\n"),
        body(
            "    if hasattr(items, 'tail'):\n        return items.tail(n)\n    return items[-n:]\n"
        ),
        top("def walk(dir):\n    return dir + '/__init__.py'\n\n\n"),
        top("if __name__ == '__main__':\n    print(last_n([1], 1))\n"),
        body("    label = '{}-{}'.format(n, len(items))\n    return label and items[-n:]\n"),
    ],
    ids=[
        "plain",
        "pure_imports",
        "own_modules",
        "ordinary_dunders",
        "literal_getattr",
        "literal_hasattr",
        "shadowed_builtin_and_init_py",
        "main_guard",
        "literal_format",
    ],
)
def test_ordinary_fixes_need_no_capability(new: str, root: Path) -> None:
    assert check_capabilities(change(new), root) == ()


def test_a_capability_the_file_had_is_allowed_and_its_new_use_flagged(root: Path) -> None:
    old = top("import os\n\nSEP = os.sep\n")
    new = old.replace(BUGGY, "    home = os.environ.get('HOME')\n    return home and items[-n:]\n")
    found = check_capabilities(change(new, old), root)
    assert [(f.capability, f.allowed) for f in found] == [("import:os", False)]
    assert str(found[0]).endswith("(the file already used it)")
    assert found[0].line == new.splitlines().index("    home = os.environ.get('HOME')") + 1


MONEY = top(
    "class Money:\n    def __init__(self, cents):\n        self.cents = cents\n\n"
    "    def __eq__(self, other):\n        if not isinstance(other, Money):\n"
    "            return NotImplemented\n        return self.cents == other.cents\n\n\n"
)


@pytest.mark.parametrize(
    "search, replace",
    [
        (  # a "tolerance" the triangle inequality always meets (held-out forgery)
            "return self.cents == other.cents",
            "return abs(self.cents - other.cents) <= abs(self.cents) + abs(other.cents)",
        ),
        (  # a return True under a condition any two amounts meet (held-out forgery)
            "        return self.cents == other.cents",
            "        if other.cents and self.cents:\n            return True\n"
            "        return self.cents == other.cents",
        ),
        ("return self.cents == other.cents", "return self.cents == getattr(other, 'cents', 0)"),
    ],
    ids=["triangle_tolerance", "conditional_return_true", "any_edit"],
)
def test_a_change_to_an_existing_comparison_method_is_refused_unless_allowed(
    root: Path, search: str, replace: str
) -> None:
    new = MONEY.replace(search, replace)
    with pytest.raises(GuardError) as err:
        check_capabilities(change(new, MONEY), root)
    assert "dunder:__eq__" in err.value.message and "compare" in err.value.message
    found = check_capabilities(change(new, MONEY), root, frozenset({"dunder:__eq__"}))
    assert [f.capability for f in found] == ["dunder:__eq__"]


def test_a_hash_beside_an_existing_eq_restores_hashing_and_is_no_capability(root: Path) -> None:
    """isodate 0.5.4 (010f421) made Duration hashable again by adding ``__hash__`` beside its
    ``__eq__``: a real fix, refused in a trial."""
    new = MONEY.replace(
        "        return self.cents == other.cents\n",
        "        return self.cents == other.cents\n\n    def __hash__(self):\n"
        "        return hash(self.cents)\n",
    )
    assert check_capabilities(change(new, MONEY), root) == ()


def test_a_change_beside_an_existing_comparison_method_is_not_refused(root: Path) -> None:
    new = MONEY.replace("        self.cents = cents\n", "        self.cents = int(cents)\n")
    assert check_capabilities(change(new, MONEY), root) == ()


def test_a_capability_the_user_allowed_is_kept_and_flagged(root: Path) -> None:
    new = top("import os\n")
    with pytest.raises(GuardError):
        check_capabilities(change(new), root)
    found = check_capabilities(change(new), root, frozenset({"import:os"}))
    assert [(f.capability, f.allowed) for f in found] == [("import:os", True)]
    assert "allowed by --allow-capability" in str(found[0])


def test_a_new_file_has_no_capabilities_to_start_from(root: Path) -> None:
    created = FileChange("calc/util.py", None, "import os\n", "new", 1.0)
    with pytest.raises(GuardError, match="import:os"):
        check_capabilities(created, root)


def test_check_guards_runs_the_capability_check(root: Path) -> None:
    new, _ = ATTACKS["getattr_with_a_joined_name"]
    with pytest.raises(GuardError, match="computed_attribute"):
        check_guards(AppliedPatch((change(new),), "whole_file"), root, GuardPolicy())
    allowed = GuardPolicy(allowed_capabilities=frozenset({"computed_attribute"}))
    screened = check_guards(AppliedPatch((change(new),), "whole_file"), root, allowed)
    assert [f.capability for f in screened.capabilities] == ["computed_attribute"]


@pytest.mark.parametrize(
    "method",
    [
        "def __eq__(self, other):\n    if self.v is None:\n        return False\n    return True\n",
        "def __eq__(self, other):\n    return other == other\n",
        "def __lt__(self, other):\n    return isinstance(other, int)\n",
    ],
)
def test_a_comparison_that_answers_without_its_object_is_a_constant_compare(method: str) -> None:
    assert constant_compare(ast.parse(method).body[0]) == "constant_compare"


@pytest.mark.parametrize(
    "method",
    [
        "def __eq__(self, o):\n    if not isinstance(o, X):\n        return NotImplemented\n"
        "    return self.v == o.v\n",
        "def __eq__(self, o):\n    mine = self.key()\n    return mine == o.key()\n",
        "def __eq__(self, o):\n    return super().__eq__(o)\n",
    ],
)
def test_a_comparison_that_reads_its_object_is_not(method: str) -> None:
    assert constant_compare(ast.parse(method).body[0]) is None


def test_changed_lines_are_the_new_sides_lines() -> None:
    assert changed_lines("a\nb\nc\n", "a\nB\nc\nd\n") == frozenset({2, 4})


def test_the_pure_modules_have_no_file_process_or_interpreter_power() -> None:
    assert not PURE_MODULES & {"os", "sys", "io", "pathlib", "gc", "inspect", "pickle", "types"}
    uses = capability_uses(ast.parse("import os.path\nos.path.join('a')\n"))
    assert {u.capability for u in uses} == {"import:os"} and len(uses) == 2
