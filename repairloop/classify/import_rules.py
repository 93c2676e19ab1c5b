"""Import failures: a missing or incompatible dependency, the project's own modules, unbuilt
extensions.

``No module named 'x'`` is a dependency when ``x`` is nobody's in the project,
``test_config`` when it is the project's own top-level package (its source
root is not importable: the project is not installed), and ``logic`` for a
misspelt or missing project submodule. ``cannot import name`` and
``has no attribute`` are ``logic`` on the project's modules and
``dependency`` on an installed package whose API changed. A compiled
extension of the project that was never built is ``environment``, with the
project's build command (``build.py``). Where the import happened (a test
module, ``conftest.py``, the project's code) does not change the kind.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import FrozenSet, Optional

from repairloop.classify.build import build_command, extension_for
from repairloop.classify.evidence import FailureEvidence
from repairloop.classify.packages import distribution_for, probe_module
from repairloop.types import Failure, FailureKind, is_project_path, relative_to, root_forms

_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
# "cannot import name 'x' from 'pkg' (...)" and, when pkg's __init__ is still running (from . import
# x of a submodule that is not there), "... from partially initialized module 'pkg' (most likely due
# to a circular import)".
_CANNOT_IMPORT = re.compile(
    r"cannot import name '(\w+)' from (?:partially initialized module )?'([\w.]+)'"
)
_NO_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
# A compiled module that exists but does not load: built for another Python or platform, or a
# shared library it links against is missing.
_BROKEN_BINARY = re.compile(
    r"undefined symbol|wrong ELF class|invalid ELF header|dynamic module does not define|"
    r"DLL load failed|incompatible architecture|mach-o file|cannot open shared object file"
)
_BINARY_PATH = re.compile(r"(\S+\.(?:so|pyd|dylib))\b")
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))
# Standard-library modules that newer Pythons removed (PEP 594, PEP 632): the release, and what
# replaces them.
_REMOVED = {
    "distutils": ("3.12", "setuptools"),
    "imp": ("3.12", "importlib"),
    "asynchat": ("3.12", "asyncio"),
    "asyncore": ("3.12", "asyncio"),
    "smtpd": ("3.12", "aiosmtpd"),
    "cgi": ("3.13", "email.message"),
    "cgitb": ("3.13", "traceback"),
    "crypt": ("3.13", "hashlib or passlib"),
    "imghdr": ("3.13", "filetype"),
    "mailcap": ("3.13", "mimetypes"),
    "nntplib": ("3.13", "a PyPI client"),
    "pipes": ("3.13", "shlex"),
    "sndhdr": ("3.13", "filetype"),
    "spwd": ("3.13", "python-pam"),
    "sunau": ("3.13", "soundfile"),
    "telnetlib": ("3.13", "telnetlib3"),
    "uu": ("3.13", "base64"),
    "xdrlib": ("3.13", "a PyPI package"),
    "audioop": ("3.13", "audioop-lts"),
    "aifc": ("3.13", "soundfile"),
    "chunk": ("3.13", "a PyPI package"),
    "lib2to3": ("3.13", "a PyPI package"),
}
_DISTRIBUTION = re.compile(
    r"(?:No package metadata was found for|The '|distribution was not found: )\s*'?([\w.-]+)"
)
_PROJECT_NAME = (
    ("pyproject.toml", re.compile(r"^\s*name\s*=\s*[\"']([\w.-]+)[\"']", re.M)),
    ("setup.cfg", re.compile(r"^\s*name\s*=\s*([\w.-]+)", re.M)),
    ("setup.py", re.compile(r"name\s*=\s*[\"']([\w.-]+)[\"']")),
)


def imports_rule(ev: FailureEvidence) -> Optional[Failure]:
    """A missing module or name (dependency, test_config or logic by whose it is), else None."""
    if ev.exc_type in ("ModuleNotFoundError", "ImportError", None):
        if "attempted relative import" in ev.message:
            return ev.failure(
                FailureKind.TEST_CONFIG,
                hint="a relative import in a module pytest imports as top-level: "
                "add __init__.py to its directory, or use an absolute import",
            )
        missing = _NO_MODULE.search(ev.message)
        if missing:
            return _missing_module(ev, missing.group(1))
        name = _CANNOT_IMPORT.search(ev.message)
        if name:
            return _missing_name(ev, name.group(2), name.group(1))
    attr = _NO_ATTRIBUTE.search(ev.message)
    if attr and ev.exc_type == "AttributeError":
        return _missing_name(ev, attr.group(1), attr.group(2))
    return _missing_distribution(ev) or _refused_by_package(ev)


def _missing_distribution(ev: FailureEvidence) -> Optional[Failure]:
    """Package metadata asked for and absent (``importlib.metadata.version``, pkg_resources), or
    time zone data."""
    if ev.exc_type == "ZoneInfoNotFoundError":
        return ev.failure(
            FailureKind.DEPENDENCY, hint="this system has no time zone database: pip install tzdata"
        )
    if ev.exc_type not in ("PackageNotFoundError", "DistributionNotFound"):
        return None
    found = _DISTRIBUTION.search(ev.message)
    # older Pythons: the message is only the name
    bare = ev.message.split(":", 1)[-1].strip().strip("'\"")
    name = found.group(1) if found else (bare if re.fullmatch(r"[\w.-]+", bare) else "")
    if name and _normal(name) == _normal(project_name(ev.project)):
        return ev.failure(
            FailureKind.TEST_CONFIG,
            hint=f"the project reads its own package metadata ({name}), which "
            "exists only once it is installed: pip install -e .",
        )
    return ev.failure(
        FailureKind.DEPENDENCY,
        hint=f"pip install {name}" if name else "install the missing distribution",
    )


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(project: Path) -> str:
    """The distribution name pyproject.toml, setup.cfg or setup.py declares; "" when none does."""
    for file, pattern in _PROJECT_NAME:
        try:
            found = pattern.search((project / file).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if found:
            return found.group(1)
    return ""


def _refused_by_package(ev: FailureEvidence) -> Optional[Failure]:
    """An ImportError of a package's own (pydantic's PydanticImportError: "`BaseSettings` has been
    moved")."""
    name = (ev.exc_type or "").rsplit(".", 1)[-1]
    inner = ev.frames[-1] if ev.frames else None
    if not name.endswith("ImportError") or inner is None or is_project_path(inner.path):
        return None
    if "site-packages" not in inner.path and "dist-packages" not in inner.path:
        return None
    package = package_of(inner.path)
    return ev.failure(
        FailureKind.DEPENDENCY,
        location=f"{inner.path}:{inner.line}",
        hint=f"the installed {package} no longer provides what the code imports: install the "
        f"version the code was written for, or follow {package}'s migration notes",
    )


def extension_rule(ev: FailureEvidence) -> Optional[Failure]:
    """An extension module of the project that was never built here, or a binary that does not
    load."""
    if ev.exc_type not in ("ModuleNotFoundError", "ImportError", None):
        return None
    wanted = None
    missing = _NO_MODULE.search(ev.message)
    name = _CANNOT_IMPORT.search(ev.message)
    if missing:
        wanted = missing.group(1)
    elif name:
        wanted = f"{name.group(2)}.{name.group(1)}"
    if wanted and wanted not in ev.modules():
        found = extension_for(wanted, ev.project)
        if found is not None:
            command = build_command(ev.project)
            return ev.failure(
                FailureKind.ENVIRONMENT,
                f"{ev.message} (the project's compiled extension {found[0]}, from {found[1]}, "
                "is not built here)",
                hint=f"build the project's extensions first: {command}",
            )
    if _BROKEN_BINARY.search(ev.message):
        return _broken_binary(ev)
    return None


def _broken_binary(ev: FailureEvidence) -> Failure:
    where = _BINARY_PATH.search(ev.message)
    path = (relative_to(where.group(1), root_forms(ev.project)) or where.group(1)) if where else ""
    if path and is_project_path(path):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            location=path,
            hint=f"the project's compiled module {path} does not load under this Python (built for "
            f"another one, or stale): rebuild it: {build_command(ev.project)}",
        )
    if "cannot open shared object file" in ev.message:
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="a shared library a compiled module needs is not installed on this system: "
            "install it with the system's package manager",
        )
    package = package_of(path) if path else "the package"
    return ev.failure(
        FailureKind.DEPENDENCY,
        hint=f"the installed {package} was built for another Python or platform: reinstall it "
        f"(pip install --force-reinstall {package})",
    )


def _tops(modules: FrozenSet[str]) -> FrozenSet[str]:
    return frozenset(m.split(".")[0] for m in modules)


def _missing_module(ev: FailureEvidence, module: str) -> Failure:
    """``No module named 'module'``: a project module (logic, test_config) or a dependency."""
    modules, top = ev.modules(), module.split(".")[0]
    if module in _tops(modules):
        # The project's own top-level package is not importable: its source root is
        # not on the path. No code change fixes that.
        return ev.failure(
            FailureKind.TEST_CONFIG,
            f"the project's own module '{module}' is not importable",
            hint=f"install the project (pip install -e .) or put the directory that holds "
            f"'{module}' (e.g. src) on the test command's PYTHONPATH",
        )
    if top not in _tops(modules) and _project_directory(ev.project, top):
        # A directory of the project (often tests/) imported as a package it is not on the path as.
        return ev.failure(
            FailureKind.TEST_CONFIG,
            f"the project's directory '{top}' is not importable as a package",
            hint=f"add {top}/__init__.py (and run the tests from the project root), or run "
            f"`python -m pytest`, or set pythonpath in the pytest configuration",
        )
    close = difflib.get_close_matches(module, sorted(modules), n=1, cutoff=0.8)
    if top in _tops(modules):
        # A submodule of a project package: a misspelling or a missing file, which code fixes.
        return ev.failure(
            FailureKind.LOGIC,
            hint=f"did you mean {close[0]}?" if close else f"the project has no module {module}",
        )
    if top in _REMOVED:
        return _removed_module(ev, top)
    dist = distribution_for(module)
    note = f"provided by the PyPI distribution {dist}" if dist != top else "not installed"
    # A missing top-level name stays a dependency even when it resembles a project
    # module ("requests" and a local request.py): the hint says so, no loop starts on a guess.
    hint = f"pip install {dist}" + (
        f" (or did you mean the project's module {close[0]}?)" if close else ""
    )
    return ev.failure(FailureKind.DEPENDENCY, f"No module named '{module}' ({note})", hint)


def _missing_name(ev: FailureEvidence, owner: str, name: str) -> Failure:
    """``cannot import name`` / ``has no attribute`` on a project module (logic) or a package
    (dependency)."""
    modules = ev.modules()
    if owner.split(".")[0] in _tops(modules):
        close = difflib.get_close_matches(f"{owner}.{name}", sorted(modules), n=1, cutoff=0.8)
        return ev.failure(FailureKind.LOGIC, hint=f"did you mean {close[0]}?" if close else "")
    top = owner.split(".")[0]
    if top in _STDLIB and top != "__future__":
        return _missing_stdlib_name(ev, owner, name)
    info = probe_module(top, ev.interpreter)
    if not info.found:
        return ev.failure(FailureKind.LOGIC)
    dist = info.dist or distribution_for(owner)
    installed = f"{dist} {info.version}" if info.version else dist
    return ev.failure(
        FailureKind.DEPENDENCY,
        f"{ev.message} (the installed {installed} has no '{name}' in {owner})",
        hint=f"install the version of {dist} the code was written for (pip install "
        f"'{dist}==<version>'), or update the code to the API of {installed}",
    )


def package_of(path: str) -> str:
    """The installed package a site-packages path belongs to (the path itself otherwise)."""
    parts = Path(path).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].replace(".py", "")
    return path


def _project_directory(project: Path, name: str) -> bool:
    """True when ``name`` is a directory of Python files in the project's root or ``src/``."""
    for base in (project, project / "src"):
        folder = base / name
        if folder.is_dir() and any(folder.glob("*.py")):
            return True
    return False


def _removed_module(ev: FailureEvidence, module: str) -> Failure:
    """A standard-library module this Python no longer has: who imports it decides the kind."""
    release, replacement = _REMOVED[module]
    if module == "distutils":  # setuptools installs a distutils shim: no code change needed
        return ev.failure(
            FailureKind.DEPENDENCY,
            hint=f"distutils was removed in Python {release}: pip install "
            "setuptools, which provides it",
        )
    inner = next((f for f in reversed(ev.frames) if not f.path.startswith("<")), None)
    if inner is not None and ("site-packages" in inner.path or "dist-packages" in inner.path):
        package = package_of(inner.path)
        return ev.failure(
            FailureKind.DEPENDENCY,
            location=f"{inner.path}:{inner.line}",
            hint=f"the installed {package} imports {module}, removed in Python {release}: upgrade "
            f"{package}",
        )
    return ev.failure(
        FailureKind.LOGIC, hint=f"{module} was removed in Python {release}: use {replacement}"
    )


def _missing_stdlib_name(ev: FailureEvidence, owner: str, name: str) -> Failure:
    """A name this Python's standard library no longer has (``collections.Mapping``,
    ``asyncio.coroutine``).

    The code that uses it must change: the project's own code is a logic
    fault; an installed package's is a dependency to upgrade.
    """
    inner = next((f for f in reversed(ev.frames) if not f.path.startswith("<")), None)
    if inner is not None and not is_project_path(inner.path) and "site-packages" in inner.path:
        package = package_of(inner.path)
        return ev.failure(
            FailureKind.DEPENDENCY,
            location=f"{inner.path}:{inner.line}",
            hint=f"the installed {package} uses {owner}.{name}, which this Python's standard "
            f"library no longer has: upgrade {package}",
        )
    return ev.failure(
        FailureKind.LOGIC,
        hint=f"{owner}.{name} is gone from this Python's standard library: use its replacement",
    )
