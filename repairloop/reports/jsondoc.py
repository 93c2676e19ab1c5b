"""The JSON rendering of a RunReport (``report --format json``): one document, stable keys.

The document keeps the shape reports had before they were built on the
RunResult: the run's facts, the iterations flat (the record's fields with what
the model was shown, what the tests said, its answer and notes), the totals.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict

from repairloop.reports.run_report import IterationReport, RunReport


def report_document(report: RunReport) -> Dict[str, Any]:
    """The report as JSON values. Units: tokens, USD (None: not priced), seconds."""
    result = report.result
    return {
        "run_id": report.run_id,
        "run_dir": result.run_dir,
        "project": report.project,
        "started": report.started,
        "ended": report.ended,
        "chain": list(report.chain),
        "outcome": report.outcome,
        "stop_reason": report.stop_reason,
        "stop_detail": report.stop_detail,
        "baseline": None if report.baseline is None else report.baseline.to_json(),
        "failures": [f.to_json() for f in result.failures],
        "flaky": list(result.flaky_tests),
        "iterations": [_iteration(it) for it in report.iterations],
        "patch": result.patch,
        "notes": list(report.notes),
        "warnings": list(report.warnings),
        "seconds": report.seconds,
        "failure_kinds": dict(result.failure_kinds),
        "totals": report.totals,
    }


def _iteration(it: IterationReport) -> Dict[str, Any]:
    r, detail = it.record, it.detail
    return {
        "number": r.number,
        "engine": r.engine,
        "model": r.model,
        "decision": r.decision.value,
        "reason": r.reason,
        "prompt_tokens": r.usage.prompt_tokens,
        "completion_tokens": r.usage.completion_tokens,
        "cost_usd": r.usage.cost_usd,
        "seconds_model": r.seconds_model,
        "seconds_tests": r.seconds_tests,
        "seconds_total": r.seconds_total,
        "attempts": r.attempts,
        "diff": r.diff,
        "similarity_to_previous": r.similarity_to_previous,
        "similarity_max": r.similarity_max,
        "tests_failed": r.tests_failed,
        "fixed": list(r.fixed),
        "broke": list(r.broke),
        "shown": None if detail.shown is None else dataclasses.asdict(detail.shown),
        "tests": None if detail.tests is None else detail.tests.to_json(),
        "answer": detail.answer,
        "notes": list(detail.notes),
        "flags": [str(flag) for flag in r.flags],
    }


def render_json(report: RunReport) -> str:
    """The document as indented JSON text."""
    return json.dumps(report_document(report), indent=2, ensure_ascii=False) + "\n"
