"""Great Expectations quality gates (GX Core 1.x, run inside tasks): suites for ingested and
output batches (``suites``), numeric ranges per property from ``ontology/quality.ttl``
(``ranges``), running them with Data Docs under the project home (``validate``), and the gate
that records, quarantines and fails the run (``gate``).

GX logs an INFO line per documented function as it is imported (hundreds in a task's log):
its loggers are held to warnings before it is imported."""

import logging

logging.getLogger("great_expectations").setLevel(logging.WARNING)

from rsp_jobs.quality.gate import (  # noqa: E402
    QualityGateError,
    QualityOutcome,
    check_input_batch,
    check_output_batch,
    lake_rows,
    require,
)

__all__ = [
    "QualityGateError",
    "QualityOutcome",
    "check_input_batch",
    "check_output_batch",
    "lake_rows",
    "require",
]
