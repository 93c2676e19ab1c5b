"""The lists the capability rule (``capabilities.py``) judges by: which modules are pure, which
double-underscore names are ordinary, which builtins, attributes and calls are capabilities.

These lists are heuristics, reviewed here; the rule that uses them (a capability a module did not
have before the candidate) is structural. Stdlib only.
"""

from __future__ import annotations

from typing import FrozenSet

from repairloop.patch.forgery import COMPARISON_METHODS


def words(text: str) -> FrozenSet[str]:
    """The whitespace-separated words of ``text``, for the long name lists below."""
    return frozenset(text.split())


# Standard-library modules without I/O, process, interpreter or code-loading power: what a fix
# to a computation may need. A dotted module is pure when it or a package above it is listed
# (``collections.abc``); ``urllib.parse`` is listed alone, so ``urllib.request`` is not.
# Left out on purpose: os, sys, io, pathlib (files, environment, interpreter state), warnings
# (silencing a warning the configuration turns into an error), time, threading, signal,
# atexit, gc, inspect, types, weakref, pickle, marshal, importlib, ctypes, codecs, builtins.
PURE_MODULES = words(
    "__future__ abc array ast base64 binascii bisect calendar cmath collections colorsys "
    "contextlib copy dataclasses datetime decimal difflib enum errno fnmatch fractions "
    "gettext functools graphlib hashlib heapq hmac html ipaddress itertools json keyword "
    "math numbers operator pprint random re reprlib shlex stat statistics string struct "
    "textwrap typing typing_extensions unicodedata urllib.parse uuid"
)
# Double-underscore names that give a class ordinary behaviour (construction, text, containers,
# arithmetic, context managers, copying) or name a module's metadata. Comparison, truth,
# hashing, attribute hooks, descriptors, class creation hooks and the interpreter's internals
# (``__class__``, ``__dict__``, ``__code__``, ``__globals__``, ``__builtins__``...) are not here.
ORDINARY_DUNDERS = words(
    "__init__ __new__ __post_init__ __repr__ __str__ __format__ __bytes__ __len__ "
    "__length_hint__ __iter__ __next__ __reversed__ __getitem__ __setitem__ __delitem__ "
    "__missing__ __call__ __enter__ __exit__ __aenter__ __aexit__ __aiter__ __anext__ "
    "__await__ __copy__ __deepcopy__ __getstate__ __setstate__ __sizeof__ __fspath__ "
    "__name__ __qualname__ __module__ __doc__ __all__ __version__ __author__ __slots__ "
    "__match_args__ __main__ __future__ __pycache__ __debug__ __int__ __float__ __complex__ "
    "__index__ __round__ __trunc__ __floor__ __ceil__ __neg__ __pos__ __abs__ __invert__"
) | frozenset(
    f"__{prefix}{op}__"
    for op in words("add sub mul matmul truediv floordiv mod divmod pow lshift rshift and or xor")
    for prefix in ("", "r", "i")
)
# Builtins that run code, read the interpreter's namespaces, read files or wait for a person.
# ``input``, ``dir``, ``help``, ``exit`` and ``quit`` are often a local name (a parameter
# ``dir``): those count only where the module does not bind the name itself.
CAPABILITY_BUILTINS = frozenset(
    {"open", "eval", "exec", "compile", "globals", "locals", "vars", "breakpoint"}
)
SHADOWED_BUILTINS = frozenset({"input", "dir", "help", "exit", "quit"})
ATTRIBUTE_BUILTINS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
NAME_GETTERS = frozenset({"attrgetter", "methodcaller"})
# Path (and file object) methods that read or write the file system.
FILE_METHODS = words(
    "read_text read_bytes write_text write_bytes open touch unlink mkdir rmdir symlink_to "
    "hardlink_to iterdir"
)
# Attributes of frames, code objects, generators, coroutines and tracebacks: with any of them code
# walks the call stack to the test runner's globals and builtins (a trial reached pytest's
# ``TestReport`` from ``(x for x in ()).gi_frame.f_back``), so each is the ``introspection``
# capability, whatever object it is read from.
FRAME_ATTRIBUTES = words(
    "gi_frame gi_code gi_yieldfrom cr_frame cr_code cr_await ag_frame ag_code f_back f_globals "
    "f_locals f_builtins f_code f_trace f_lasti f_lineno tb_frame tb_next tb_lasti co_name "
    "co_qualname co_filename co_code co_consts co_names co_varnames co_firstlineno co_flags "
    "func_globals"
)
# Calls that read attributes by a field name inside a format string (``"{0.__class__}"``): with a
# format string that is not a literal, the name is computed.
FORMAT_CALLS = words("format format_map vformat get_field get_value")
# Comparison, truth and hashing methods: ``assert result == expected`` calls them, so they are
# the oracle's own instruments. Adding one is a new capability; changing one the module already
# has (a line inside it, a new one beside it) is refused too, unless allowed (held-out forgeries
# made an existing ``__eq__`` always true with an inserted ``return True`` and with a "tolerance"
# the triangle inequality always meets).
ORACLE_CAPABILITIES = frozenset(f"dunder:{name}" for name in (*COMPARISON_METHODS, "__hash__"))
