"""Waiting for files in a stream's landing folder without a run per idle look.

An ingest DAG's scheduled run waits, deferred (in the triggerer, holding no worker slot), until
a file it can load is in the landing folder, then loads it: each run is an arrival, and an idle
folder leaves one waiting run rather than a skipped run every few minutes burying the real
ones. A run triggered by hand loads what is there now and is skipped when nothing is.
"""
from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowSkipException
from airflow.triggers.base import BaseTrigger, TriggerEvent


def waiting_files(folder: Path, suffixes: Sequence[str]) -> list[str]:
    """The names of the loadable files in ``folder`` (not its ``loaded/`` or ``rejected/``)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


class LandingTrigger(BaseTrigger):
    """Fires when a loadable file is in ``folder`` (looks every ``poll_seconds``)."""

    def __init__(self, folder: str, suffixes: Sequence[str], poll_seconds: float = 10.0):
        super().__init__()
        self.folder, self.suffixes, self.poll_seconds = folder, list(suffixes), poll_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}",
                {"folder": self.folder, "suffixes": self.suffixes, "poll_seconds": self.poll_seconds})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        while not (found := await asyncio.to_thread(waiting_files, Path(self.folder), self.suffixes)):
            await asyncio.sleep(self.poll_seconds)
        yield TriggerEvent({"folder": self.folder, "files": found})


class LandingSensor(BaseSensorOperator):
    """Waits (deferred) for a file in the stream's landing folder; by hand, looks once."""

    def __init__(self, *, stream: str, poll_seconds: float = 10.0, **kwargs):
        kwargs.setdefault("timeout", timedelta(days=7))
        kwargs.setdefault("soft_fail", True)  # a week with nothing to load: skipped, not failed
        super().__init__(**kwargs)
        self.stream, self.poll_seconds = stream, poll_seconds

    def _where(self) -> tuple[Path, list[str]]:
        from rsp_jobs.orchestrate import registry
        from rsp_jobs.orchestrate.ingest import loadable_suffixes

        config = registry.stream_config(self.stream)
        return config.landing_dir, loadable_suffixes(config)

    def poke(self, context) -> bool:
        folder, suffixes = self._where()
        return bool(waiting_files(folder, suffixes))

    def execute(self, context) -> None:
        folder, suffixes = self._where()
        if found := waiting_files(folder, suffixes):
            self.log.info("%d file(s) waiting in %s: %s", len(found), folder, ", ".join(found[:10]))
            return
        run = context.get("dag_run")
        if run is not None and str(getattr(run, "run_type", "")).lower().endswith("manual"):
            raise AirflowSkipException(f"no new files in {folder}")
        self.log.info("waiting for a file in %s", folder)
        self.defer(trigger=LandingTrigger(str(folder), suffixes, self.poll_seconds), method_name="execute_complete",
                   timeout=timedelta(seconds=float(self.timeout)))

    def execute_complete(self, context, event: dict | None = None) -> None:
        self.log.info("file(s) arrived in %s: %s", (event or {}).get("folder"), ", ".join((event or {}).get("files", [])[:10]))
