"""Two witnesses of one pytest run: repairloop's plugin and pytest's own JUnit XML.

Code under test runs in the same process as the plugin that records results,
so a candidate could patch the plugin to report passes. pytest's own JUnit
XML writer (``_pytest.junitxml.LogXML``, registered by the plugin whatever
plugins the user's configuration disables) records the same run
independently, into a file outside the workspace; a run where they disagree
about what failed is not trusted. Only
the names of failing tests are compared (the two name tests slightly
differently: classes, collection errors), which is what a forged pass
changes. Both can still be forged by code that patches both; the content
rules (``patch.forgery``) and the sandbox make that harder, not impossible.
"""

from __future__ import annotations

from typing import Iterable, Optional, Set

from repairloop.types import TestResult

JUNIT_NAME = (
    "pytest-junit.xml"  # written in the runner's private scratch directory, never in the workspace
)


def _name(test_id: str) -> str:
    """The comparable name of a test id: its last ``::`` part, or a module path in dotted form."""
    if "::" in test_id:
        return test_id.rsplit("::", 1)[-1]
    stem = test_id[:-3] if test_id.endswith(".py") else test_id
    return stem.replace("/", ".")


def _failing_names(results: Iterable[TestResult]) -> Set[str]:
    return {_name(r.test_id) for r in results if r.failed}


def disagreement(
    plugin: Iterable[TestResult], junit: Optional[Iterable[TestResult]], *, expected: bool
) -> str:
    """Why the plugin's results cannot be trusted, or "" when the witnesses agree.

    ``junit`` is None when pytest wrote no JUnit file; that only matters when
    one was ``expected`` (pytest finished).
    """
    if junit is None:
        return "pytest's own JUnit record of the run is missing" if expected else ""
    hidden = sorted(_failing_names(junit) - _failing_names(plugin))
    if not hidden:
        return ""
    shown = ", ".join(hidden[:3]) + (f" and {len(hidden) - 3} more" if len(hidden) > 3 else "")
    return f"pytest's own JUnit record shows failures the results plugin did not report: {shown}"
