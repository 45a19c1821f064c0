"""OpenLineage run events of evaluations, ingests and alerts, through Airflow's OpenLineage
provider (``apache-airflow-providers-openlineage``).

A task names the PROV activities it stored (``report``); this reads back what they used and
generated and keeps it, as OpenLineage datasets, in the task's process. After the task, the
provider's listener asks ``Extractor`` (registered by ``[openlineage] extractors``) for the
task's lineage and sends the run event through its transport: a file under
``$RSP_HOME/openlineage/`` by default (``airflow_env``), any transport of the provider
otherwise. The event is a summary of the PROV record, in the ecosystem's terms:

- inputs: the streams whose frames the activities used, the lake partitions (stream x hour)
  holding those frames, the background files, the source file an ingest read;
- outputs: the streams the activities wrote (the derived stream, the alerts, the ingested
  stream) and the lake partitions an ingest wrote;
- the run facet ``rspProvenance``: the activities' IRIs, whose PROV-O (``rsp provenance``) stays
  the full record, frame by frame;
- the job facet ``sourceCode`` of an evaluation or an alert: its query's text as registered
  (language ``sparql``: C-SPARQL, EP-SPARQL, DOTR or TA-SPARQL, as the text says), so that a
  lineage UI shows what the job computes, not the DAG factory.

The datasets are read in the task (where the store connection is), not in the listener: the
provider extracts in a forked child or a thread, where a pooled connection must not be used."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import attrs
from airflow.providers.openlineage.extractors.base import BaseExtractor, OperatorLineage
from openlineage.client.event_v2 import Dataset
from openlineage.client.facet_v2 import RunFacet, source_code_job

log = logging.getLogger(__name__)

STREAM_NAMESPACE = "rsp"  # a stream's dataset: this namespace, its IRI as the name
FILE_NAMESPACE = "file"  # OpenLineage's naming of local files: the absolute path as the name

# what each task of this process reported: (dag_id, task_id, run_id, try_number) -> lineage
_reported: dict[tuple[str, str, str, int], OperatorLineage] = {}


@attrs.define
class ProvenanceRunFacet(RunFacet):
    """The PROV activities a run stored; ``rsp provenance <activity>`` exports each in full."""

    activities: list[str]
    query: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return "urn:rsp:openlineage:ProvenanceRunFacet:1"


def enabled() -> bool:
    from airflow.providers.openlineage import conf

    return not conf.is_disabled()


def report(
    context: Mapping[str, Any],
    activities: Iterable[str | None],
    query: str | None = None,
    source: Path | None = None,
):
    """Keep the lineage of ``activities`` for the run event of the task of ``context``, with
    the text of the query file ``source`` if given. Lineage never fails a task: the PROV record
    is stored already; a failure here is logged."""
    iris = [a for a in activities if a]
    if not iris or not enabled():
        return
    ti = context["ti"]
    try:
        from rsp_jobs.ingest.lake import project_lake
        from rsp_jobs.store import db

        with db.engine().connect() as conn:
            inputs, outputs = datasets(conn, iris, project_lake().root)
    except Exception as exc:  # the event goes out without datasets, and says why in the log
        log.warning("OpenLineage: the datasets of %s could not be read: %s", ", ".join(iris), exc)
        inputs, outputs = [], []
    job_facets = {}
    if source is not None:
        try:
            text = Path(source).read_text(encoding="utf-8")
            job_facets["sourceCode"] = source_code_job.SourceCodeJobFacet(
                language="sparql", sourceCode=text
            )
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("OpenLineage: the query text of %s could not be read: %s", source, exc)
    _reported[(ti.dag_id, ti.task_id, ti.run_id, ti.try_number)] = OperatorLineage(
        inputs=inputs,
        outputs=outputs,
        run_facets={"rspProvenance": ProvenanceRunFacet(activities=iris, query=query)},
        job_facets=job_facets,
    )


def datasets(conn, activities: list[str], lake_root: Path) -> tuple[list[Dataset], list[Dataset]]:
    """The input and output datasets of ``activities``, from what the store records they used
    and generated."""
    from sqlalchemy import select

    from rsp_jobs.ingest.lake import hour_of, stream_key
    from rsp_jobs.store.models import Activity, ActivityGenerated, ActivityUsed, Frame, Stream
    from rsp_jobs.times import as_utc

    def linked(link) -> tuple[list[str], list[tuple[str, Any]], list[str]]:
        """Streams (with the hours of their frames) and files the activities' links name."""
        rows = conn.execute(
            select(link.entity_iri, link.entity_kind, Stream.iri, Frame.ts)
            .join(Activity, Activity.id == link.activity_id)
            .outerjoin(Frame, Frame.frame_iri == link.entity_iri)
            .outerjoin(Stream, Stream.id == Frame.stream_id)
            .where(Activity.iri.in_(activities))
        )
        streams: dict[str, None] = {}
        hours: dict[tuple[str, str], None] = {}
        files: dict[str, None] = {}
        for entity, kind, stream, ts in rows:
            if stream is not None:
                streams[stream] = None
                hours[(stream, hour_of(as_utc(ts)))] = None
            elif kind in ("background", "lake_file") and entity.startswith("file:"):
                files[unquote(urlparse(entity).path)] = None
        return list(streams), list(hours), list(files)

    def partitions(hours) -> list[Dataset]:
        folders = (lake_root / f"stream_key={stream_key(s)}" / f"hour={h}" for s, h in hours)
        return [file_dataset(str(f)) for f in folders if f.is_dir()]

    used_streams, used_hours, used_files = linked(ActivityUsed)
    made_streams, made_hours, _ = linked(ActivityGenerated)
    inputs = [stream_dataset(s) for s in used_streams] + partitions(used_hours)
    inputs += [file_dataset(f) for f in used_files]
    outputs = [stream_dataset(s) for s in made_streams] + partitions(made_hours)
    return inputs, outputs


def stream_dataset(iri: str) -> Dataset:
    return Dataset(namespace=STREAM_NAMESPACE, name=iri)


def file_dataset(path: str) -> Dataset:
    return Dataset(namespace=FILE_NAMESPACE, name=path)


class Extractor(BaseExtractor):
    """The provider's extractor for the project's Python tasks: the lineage ``report`` kept,
    none for a task that reported nothing (its event still names the job and the run)."""

    @classmethod
    def get_operator_classnames(cls) -> list[str]:
        return ["_PythonDecoratedOperator"]

    def _execute_extraction(self) -> OperatorLineage:
        return OperatorLineage()  # a run's datasets are known at its end

    def extract_on_complete(self, task_instance) -> OperatorLineage:
        ti = task_instance
        return _reported.get((ti.dag_id, ti.task_id, ti.run_id, ti.try_number), OperatorLineage())

    def extract_on_failure(self, task_instance) -> OperatorLineage:
        return self.extract_on_complete(task_instance)
