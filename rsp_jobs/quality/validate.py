"""Running a suite with GX Core 1.x: a file Data Context under ``<home>/gx`` whose Data Docs site
is the project's, one pandas data asset and checkpoint per suite, results back as plain values.

The pages load their scripts and styles from local copies (``offline_docs``), not from CDNs.

Airflow tasks run in separate processes under one project home and all write the same context
(its YAML, suites, validation results, Data Docs index), so every use of it holds an exclusive
``flock`` on ``<home>/gx/.lock``; the context is re-read under the lock each time (it takes
milliseconds) instead of being cached, so no process writes back a stale copy. GX is imported
inside functions only (here and in ``suites``), when a batch is checked: it takes seconds.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pandas as pd

from rsp_jobs import settings

SOURCE = "rsp"
SITE = "local_site"  # the Data Docs site a file context starts with
DOCS_RESULTS = 100  # results the Data Docs index links (it reads each to build; older pages stay)
EXAMPLES = 5  # unexpected values kept per expectation
os.environ.setdefault(
    "GX_ANALYTICS_ENABLED", "false"
)  # before GX is first imported (suites import it too)


@dataclass(frozen=True)
class Checked:
    """One expectation's outcome: ``label`` names it (type, columns, row condition)."""

    suite: str
    label: str
    success: bool
    element_count: int | None = None  # rows it looked at (after its row condition)
    unexpected_count: int | None = None
    examples: tuple = ()  # a few unexpected values, as text
    observed: Any = None  # the observed value of an aggregate expectation
    error: str | None = None  # why it could not be evaluated
    details: dict = field(default_factory=dict, compare=False, repr=False)  # JSON for the store

    def __str__(self) -> str:
        if self.error:
            return f"{self.label}: could not be evaluated: {self.error}"
        if self.unexpected_count:
            shown = ", ".join(self.examples)
            return f"{self.label}: {self.unexpected_count} of {self.element_count} unexpected, e.g. {shown}"
        if self.observed is not None:
            return f"{self.label}: observed {self.observed}"
        return f"{self.label}: {'passed' if self.success else 'failed'}"


def run_suite(suite, data: pd.DataFrame, run_name: str) -> tuple[list[Checked], Path]:
    """Validate ``data`` against ``suite`` (results and Data Docs under ``<home>/gx``); returns
    the outcomes in the suite's order and the Data Docs index."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    from rsp_jobs.quality import offline_docs  # here: ``python -m`` runs it from the set-up

    home = settings.home_dir()
    with _locked(home / "gx" / ".lock"):
        context = _context(home)
        source = context.data_sources.all().get(SOURCE) or context.data_sources.add_pandas(SOURCE)
        asset = (
            source.get_asset(suite.name)
            if suite.name in source.get_asset_names()
            else source.add_dataframe_asset(suite.name)
        )
        batch = (
            asset.batch_definitions[0]
            if asset.batch_definitions
            else asset.add_batch_definition_whole_dataframe("batch")
        )
        # saving the checkpoint saves its validation definition and suite too
        checkpoint = context.checkpoints.add_or_update(
            gx.Checkpoint(
                name=suite.name,
                validation_definitions=[
                    gx.ValidationDefinition(name=suite.name, data=batch, suite=suite)
                ],
                actions=[UpdateDataDocsAction(name="data_docs", site_names=[SITE])],
                result_format={"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES},
            )
        )
        ran = datetime.now(UTC)
        result = checkpoint.run(
            batch_parameters={"dataframe": data},
            run_id=gx.RunIdentifier(run_name=_safe(run_name), run_time=ran),
        )
        index = Path(
            unquote(urlparse(context.get_docs_sites_urls(site_name=SITE)[0]["site_url"]).path)
        )
        if prune_results(
            home / "gx" / "uncommitted", settings.retention("RSP_QUALITY_RETENTION", "P30D"), ran
        ):
            context.build_data_docs(site_names=[SITE])  # the index no longer links what was pruned
        offline_docs.localize(index.parent)
    (validation,) = result.run_results.values()
    order = {e.id: i for i, e in enumerate(checkpoint.validation_definitions[0].suite.expectations)}
    outcomes = sorted(
        validation.results, key=lambda r: order.get(r.expectation_config.id, len(order))
    )
    return [_checked(suite.name, r) for r in outcomes], index


def prune_results(root: Path, keep, now: datetime | None = None) -> int:
    """Delete validation results, and their Data Docs pages, of runs older than ``keep`` (a
    timedelta before ``now``; None keeps all): ``<root>/validations/<suite>/<run>/<run time>/``
    and the same under ``data_docs/<site>/validations/``. Returns how many run folders went."""
    if keep is None:
        return 0
    oldest = (now or datetime.now(UTC)) - keep
    removed = 0
    for base in (root / "validations", root / "data_docs" / SITE / "validations"):
        for folder in base.glob("*/*/*"):
            try:
                ran = datetime.strptime(folder.name, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
            except ValueError:
                continue  # not a run time: not GX's layout, leave it
            if folder.is_dir() and ran < oldest:
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
                if not any(folder.parent.iterdir()):
                    folder.parent.rmdir()
    return removed


def docs_site(home: Path | None = None) -> Path:
    """The folder of the project's Data Docs site (its ``index.html`` and the pages it links)."""
    return (home or settings.home_dir()) / "gx" / "uncommitted" / "data_docs" / SITE


def docs_page(site: Path, suite: str, run_name: str, not_before: datetime) -> Path | None:
    """The Data Docs page of the validation of ``suite`` that ``run_suite`` ran as ``run_name``,
    the first at or after ``not_before`` (its check started then; the same batch checked again
    has a page per run): GX writes ``validations/<suite>/<run name>/<run time>/<batch>.html``.
    None when it was pruned (``RSP_QUALITY_RETENTION``) or never written."""
    runs = site / "validations" / suite / _safe(run_name)
    found: list[tuple[datetime, Path]] = []
    for folder in runs.glob("*"):
        try:
            ran = datetime.strptime(folder.name, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
        except ValueError:
            continue
        if ran >= not_before:
            found.extend((ran, page) for page in sorted(folder.glob("*.html")))
    return min(found)[1] if found else None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (and threads: each open() is its own lock holder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _context(home: Path):
    """The file context under ``<home>/gx``, created on first use without progress bars or
    usage statistics, its Data Docs index bounded to the latest ``DOCS_RESULTS`` results."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="file", project_root_dir=str(home))
    sites = context.variables.data_docs_sites  # a copy: changes are assigned back
    if sites is None or SITE not in sites:
        raise RuntimeError(
            f"{home}/gx: the Great Expectations context has no Data Docs site {SITE!r}"
        )
    index_builder = sites[SITE].setdefault(
        "site_index_builder", {"class_name": "DefaultSiteIndexBuilder"}
    )
    if (
        context.variables.progress_bars is None
        or index_builder.get("validation_results_limit") != DOCS_RESULTS
    ):
        index_builder["validation_results_limit"] = DOCS_RESULTS
        context.variables.data_docs_sites = sites
        context.variables.progress_bars = ProgressBarsConfig(
            globally=False, metric_calculations=False
        )
        context.variables.save()
    return context


def _checked(suite: str, r) -> Checked:
    config, result = r.expectation_config, r.result or {}
    kwargs = config.kwargs
    columns = kwargs.get("column") or ", ".join(kwargs.get("column_list") or ())
    where = (config.meta or {}).get("where")
    label = f"{config.type}({columns}{f' where {where}' if where else ''})"
    examples = result.get("partial_unexpected_list") or ()
    details = r.to_json_dict()
    error = _error(details.get("exception_info") or {})
    return Checked(
        suite,
        label,
        bool(r.success),
        result.get("element_count"),
        result.get("unexpected_count"),
        tuple(_text(v) for v in examples[:EXAMPLES]),
        result.get("observed_value"),
        error,
        {
            "kwargs": details["expectation_config"]["kwargs"],
            "result": details.get("result"),
            "error": error,
        },
    )


def _error(info: dict) -> str | None:
    """GX reports an exception either directly or per metric that failed to resolve."""
    if "raised_exception" in info:
        return info.get("exception_message") if info["raised_exception"] else None
    messages = [v.get("exception_message") for v in info.values() if isinstance(v, dict)]
    return next((m for m in messages if m), None)


def _text(value) -> str:
    """An unexpected value as text: strings quoted, times in ISO 8601, a row of a compound
    expectation as ``(column=value, ...)``."""
    if isinstance(value, dict):
        return f"({', '.join(f'{k}={_text(v)}' for k, v in value.items())})"
    if isinstance(value, datetime):
        return value.isoformat()
    return repr(value) if isinstance(value, str) else str(value)


def _safe(name: str) -> str:
    """A run name that is a safe path segment in the results store and Data Docs."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120] or "batch"
