"""Waiting for files in a stream's landing folder without a run per idle look.

An ingest DAG's scheduled run waits, deferred (in the triggerer, holding no worker slot), until
a file it can load is in the landing folder, then loads it: each run is an arrival, and an idle
folder leaves one waiting run rather than a skipped run every few minutes burying the real
ones. A run triggered by hand loads what is there now and is skipped when nothing is.

A file counts only once it is complete (``rsp_jobs.orchestrate.ingest.settled``): not under a
temporary name, and not modified for ``RSP_LANDING_QUIET``. A run triggered by hand while a file
is still being written waits for it the same way, rather than being skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowSkipException
from airflow.triggers.base import BaseTrigger, TriggerEvent


def waiting_files(folder: Path, suffixes: Sequence[str], quiet_seconds: float = 0.0) -> list[str]:
    """The names of the complete loadable files in ``folder`` (not its ``loaded/`` or
    ``rejected/``, nor a file modified in the last ``quiet_seconds``)."""
    from rsp_jobs.orchestrate.ingest import candidate_files, settled

    return [p.name for p in candidate_files(folder, suffixes) if settled(p, quiet_seconds)]


def arriving_files(folder: Path, suffixes: Sequence[str]) -> list[str]:
    """The names of the loadable files in ``folder``, complete or still being written."""
    from rsp_jobs.orchestrate.ingest import candidate_files

    return [p.name for p in candidate_files(folder, suffixes)]


class LandingTrigger(BaseTrigger):
    """Fires when a loadable file is in ``folder`` (looks every ``poll_seconds``)."""

    def __init__(
        self,
        folder: str,
        suffixes: Sequence[str],
        poll_seconds: float = 10.0,
        quiet_seconds: float = 0.0,
    ):
        super().__init__()
        self.folder, self.suffixes, self.poll_seconds = folder, list(suffixes), poll_seconds
        self.quiet_seconds = quiet_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "folder": self.folder,
                "suffixes": self.suffixes,
                "poll_seconds": self.poll_seconds,
                "quiet_seconds": self.quiet_seconds,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while not (
            found := await asyncio.to_thread(
                waiting_files, Path(self.folder), self.suffixes, self.quiet_seconds
            )
        ):
            await asyncio.sleep(self.poll_seconds)
        yield TriggerEvent({"folder": self.folder, "files": found})


class LandingSensor(BaseSensorOperator):
    """Waits (deferred) for a file in the stream's landing folder; by hand, looks once."""

    def __init__(self, *, stream: str, poll_seconds: float = 10.0, **kwargs):
        kwargs.setdefault("timeout", timedelta(days=7))
        kwargs.setdefault("soft_fail", True)  # a week with nothing to load: skipped, not failed
        super().__init__(**kwargs)
        self.stream, self.poll_seconds = stream, poll_seconds

    def _where(self) -> tuple[Path, list[str], float]:
        from rsp_jobs.orchestrate import registry
        from rsp_jobs.orchestrate.ingest import landing_quiet, loadable_suffixes

        config = registry.stream_config(self.stream)
        return config.landing_dir, loadable_suffixes(config), landing_quiet()

    def poke(self, context) -> bool:
        return bool(waiting_files(*self._where()))

    def execute(self, context) -> None:
        folder, suffixes, quiet = self._where()
        if found := waiting_files(folder, suffixes, quiet):
            self.log.info("%d file(s) waiting in %s: %s", len(found), folder, ", ".join(found[:10]))
            return
        run = context.get("dag_run")
        writing = arriving_files(folder, suffixes)
        if (
            not writing
            and run is not None
            and str(getattr(run, "run_type", "")).lower().endswith("manual")
        ):
            raise AirflowSkipException(f"no new files in {folder}")
        if writing:
            self.log.info(
                "waiting for %s in %s to be complete (unchanged for %g s)",
                ", ".join(writing[:10]),
                folder,
                quiet,
            )
        else:
            self.log.info("waiting for a file in %s", folder)
        poll = min(self.poll_seconds, max(quiet, 1.0)) if writing else self.poll_seconds
        self.defer(
            trigger=LandingTrigger(str(folder), suffixes, poll, quiet),
            method_name="execute_complete",
            timeout=timedelta(seconds=float(self.timeout)),
        )

    def execute_complete(self, context, event: dict | None = None) -> None:
        self.log.info(
            "file(s) arrived in %s: %s",
            (event or {}).get("folder"),
            ", ".join((event or {}).get("files", [])[:10]),
        )
