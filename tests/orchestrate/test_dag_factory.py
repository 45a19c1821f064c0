"""The DAG factory: a DAG per registered query (and per input stream's ingest), scheduled to
emulate the query's STEP, documented with the query; a query file that does not parse is an
import error naming it, and the other DAGs still load."""
from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from airflow.sdk import DeltaDataIntervalTimetable

from rsp_jobs import settings, times

pytestmark = pytest.mark.airflow  # Airflow's DagBag loads the DAG file


def dag_bag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(settings.REPO_ROOT / "dags"))


TRAFFIC_IRI = "http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData"
PROJECT_DAGS = {"congestion_by_segment", "congested_pairs", "congestion_readings", "congested_segments",
                "congestion_alert", "congestion_rising", "segment_silent", "dart_mean10", "dart_prediction",
                "dart_pairs", "tsunami_detection", "alert_congestion_alert", "alert_congestion_rising", "alert_segment_silent",
                "alert_tsunami_detection", "ingest_aarhus_traffic", "ingest_dart_21418", "ingest_dart_21401"}


def test_every_registered_query_is_a_dag_scheduled_on_its_step(queries):
    bag = dag_bag()
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == PROJECT_DAGS
    dag = bag.dags.get("congestion_by_segment")
    assert dag.timetable.delta == timedelta(minutes=15)  # its .toml: three STEPs per run
    assert {"rsp", "query", "citybench"} <= set(dag.tags)
    assert "AVG(?level)" in dag.doc_md and "`[RANGE 1h STEP 5m]`" in dag.doc_md and "15m of window closes" in dag.doc_md
    assert "Window(" not in dag.doc_md  # no Python reprs
    query_file = queries / "citybench" / "congestion_by_segment.rsp"
    assert f"from the query file `{query_file}`" in dag.doc_md  # not the factory the Code tab shows
    run_settings = query_file.with_suffix(".toml").read_text().strip()
    assert f"`congestion_by_segment.toml`:\n\n```toml\n{run_settings}\n```" in dag.doc_md
    assert dag.description == "C-SPARQL SELECT over 1 stream(s) [RANGE 1h STEP 5m], every 15m"
    for task in dag.tasks:
        assert (task.owner, task.retries, task.retry_delay) == ("rsp", 2, timedelta(minutes=1))
    assert [t.task_id for t in dag.topological_sort()] == ["wait_for_inputs", "evaluate"]
    assert dag.max_active_runs == 1


def test_a_batch_is_the_smallest_multiple_of_step_of_a_minute_unless_configured(queries):
    fast = (queries / "citybench" / "congestion_by_segment.rsp").read_text().replace("STEP 5m", "STEP 20s")
    (queries / "citybench" / "fast.rsp").write_text(fast.replace("congestion_by_segment", "fast"))
    (queries / "citybench" / "fast_batched.rsp").write_text(fast.replace("congestion_by_segment", "fast_batched"))
    (queries / "citybench" / "fast_batched.toml").write_text('batch = "2m"\n')
    bag = dag_bag()
    assert bag.dags.get("fast").timetable.delta == timedelta(minutes=1)
    assert bag.dags.get("fast_batched").timetable.delta == timedelta(minutes=2)


def test_adding_a_query_file_adds_a_dag(queries):
    text = (queries / "citybench" / "congested_pairs.rsp").read_text()
    (queries / "citybench" / "more_pairs.rsp").write_text(text.replace("congested_pairs", "more_pairs"))
    assert "more_pairs" in dag_bag().dags


def test_a_query_over_a_derived_stream_runs_on_that_streams_asset():
    dags = dag_bag().dags
    assert isinstance(dags["congestion_readings"].timetable, DeltaDataIntervalTimetable)
    for dag_id, upstream in (("congested_segments", "congestion_readings"), ("congestion_alert", "congested_segments")):
        assets = [a.name for a in dags[dag_id].timetable.asset_condition.objects]
        assert assets == [f"urn:rsp:query:{upstream}/stream"]


def test_an_alerting_query_gets_an_alert_dag_on_its_output_asset():
    dags = dag_bag().dags
    for query, kind in (("tsunami_detection", "tsunami"), ("congestion_rising", "congestion"),
                        ("segment_silent", "silence"), ("congestion_alert", "congestion")):
        dag = dags[f"alert_{query}"]
        assert [a.name for a in dag.timetable.asset_condition.objects] == [f"urn:rsp:query:{query}/stream"]
        assert [t.task_id for t in dag.topological_sort()] == ["raise_alerts"]
        assert {"rsp", "alert"} <= set(dag.tags) and f"**{kind}** alerts" in dag.doc_md
    assert not any(d.startswith("alert_") for d in dags if d[6:] in ("dart_mean10", "congestion_readings"))


def test_a_query_that_does_not_parse_is_an_import_error_naming_its_file_and_line(queries):
    broken = queries / "citybench" / "broken.rsp"
    broken.write_text("REGISTER QUERY broken AS\nSELECT ?x\nFROM STREAM <http://ex.org/s> [RANGE 1m STEP]\n"
                      "WHERE { ?x ?p ?o }\n")
    bag = dag_bag()
    assert {"congestion_by_segment", "congested_pairs", "ingest_aarhus_traffic"} <= set(bag.dag_ids)
    ((where, message),) = bag.import_errors.items()
    assert f"{broken}:3:" in message
    # not rsp_dags.py's: Airflow would deactivate every DAG of that file (tests/orchestrate/test_dag_processor.py)
    assert Path(where).name == "rsp_query_errors.py"


@pytest.mark.parametrize("options, problem", [('batch = "7m"', "whole number of STEPs"),
                                              ('batch = "soon"', "not a duration"),
                                              ('entailment = "owl-full"', "unknown entailment regime")])
def test_a_bad_batch_setting_is_an_import_error_naming_the_file(queries, options, problem):
    (queries / "citybench" / "congested_pairs.toml").write_text(options + "\n")
    bag = dag_bag()
    (message,) = bag.import_errors.values()
    assert "congested_pairs.toml" in message and problem in message
    assert "congestion_by_segment" in bag.dag_ids


def test_patterns_and_rules_are_dags_that_wait_for_their_bound_and_unbounded_ones_keep_partial_matches(queries):
    from tests.orchestrate.test_pattern_runs import FIRE, RISE, UNBOUNDED

    (queries / "alarms").mkdir()
    (queries / "alarms" / "fire.dotr").write_text(FIRE)
    (queries / "alarms" / "rise.rsp").write_text(RISE.replace("\nSEQ {", "\nOPTIONALSEQ {"))
    (queries / "alarms" / "forever.rsp").write_text(UNBOUNDED)
    bag = dag_bag()
    fire, rise = bag.dags.get("Fire"), bag.dags.get("rise")
    assert {"rsp", "pattern", "alarms"} <= set(fire.tags) and "**DOTR rule**" in fire.doc_md
    assert fire.timetable.delta == timedelta(minutes=1) and "bound of 40s" in fire.doc_md
    assert fire.description == "DOTR rule over 1 stream(s), every 1m"
    # an optional part is decided by the time its match ends: no run waits past its interval
    assert not hasattr(rise.get_task("wait_for_inputs"), "lookahead_us")
    assert not bag.import_errors
    assert "partial matches are kept in the store" in bag.dags.get("forever").doc_md


def test_computed_every_sets_the_grid_a_dag_runs_on(queries):
    """COMPUTED EVERY d (tutorial 004, "Query and Stream Registration") is the evaluation grid:
    the DAG's batch is a whole number of d, and each run's interval ends on a tick of d."""
    from rsp_jobs.orchestrate import registry

    text = (queries / "citybench" / "congestion_by_segment.rsp").read_text()
    every = text.replace("congestion_by_segment AS", "every_7m COMPUTED EVERY 7m AS")
    assert every != text
    path = queries / "citybench" / "every_7m.rsp"
    path.write_text(every)
    (queries / "citybench" / "every_7m.toml").write_text('batch = "14m"\n')
    query = registry.load_query(path)
    assert query.step_us == 7 * 60_000_000 and query.first_close_us == 63 * 60_000_000  # RANGE 1h: ticks from 63 min
    assert [c % (7 * 60_000_000) for c in query.closes(0, 10 ** 10)] == [0] * len(query.closes(0, 10 ** 10))
    assert times.to_us(query.first_batch_end()) % (7 * 60_000_000) == 0
    (queries / "citybench" / "every_7m.toml").write_text('batch = "15m"\n')
    with pytest.raises(Exception, match="COMPUTED EVERY"):
        registry.load_query(path)


# one bad file under queries/ loses only what depends on it (issue 15, "Nothing jams")
BAD_FILES = {
    "not UTF-8": ("citybench/latin1.rsp", "REGISTER QUERY latin1 AS\nSELECT ?s\nFROM STREAM <http://ex.org/s> "
                  "[RANGE 1m STEP 1m]\nWHERE { ?s ?p \"caf\xe9\" }\n".encode("latin-1"),
                  "latin1.rsp:4: the query file is not UTF-8 text"),
    "an [alert] that is not a table": ("citybench/congested_pairs.toml", b'alert = "yes"\n',
                                       "congested_pairs.toml: alert must be a table"),
    "a STEP past the limit": ("citybench/huge.rsp", b"REGISTER QUERY huge AS\nSELECT ?s\nFROM STREAM <http://ex.org/s> "
                              b"[RANGE 1m STEP 99999999999999999999d]\nWHERE { ?s ?p ?o }\n",
                              "huge.rsp:3:46: duration '99999999999999999999d' is longer than the limit"),
    "an expression too deep to parse": ("citybench/deep.rsp", b"REGISTER QUERY deep AS\nSELECT ?s\nFROM STREAM "
                                        b"<http://ex.org/s> [RANGE 1m STEP 1m]\nWHERE " + b"{" * 300 + b" ?s ?p ?o "
                                        + b"}" * 300 + b"\n", "deep.rsp:4:"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_one_bad_query_file_loses_only_its_own_dags(queries, name):
    relative, content, problem = BAD_FILES[name]
    (queries / relative).write_bytes(content)
    bag = dag_bag()
    (message,) = bag.import_errors.values()
    assert problem in message
    lost = {"congested_pairs"} if relative.endswith("congested_pairs.toml") else set()
    assert set(bag.dag_ids) == PROJECT_DAGS - lost


def test_a_query_file_that_cannot_be_read_loses_only_its_own_dag(queries):
    (queries / "citybench" / "gone.rsp").symlink_to(queries / "nowhere.rsp")
    (queries / "citybench" / "folder.rsp").mkdir()
    bag = dag_bag()
    (message,) = bag.import_errors.values()
    assert "2 registered files cannot become DAGs" in message
    assert f"{queries}/citybench/gone.rsp: cannot be read (No such file or directory)" in message
    assert f"{queries}/citybench/folder.rsp: cannot be read (Is a directory)" in message
    assert set(bag.dag_ids) == PROJECT_DAGS


def test_a_dag_that_fails_airflows_validation_loses_only_its_own_file(queries, monkeypatch):
    """A DAG that fails ``DAG.validate`` in the DAG processor fails its whole DAG file: the
    factory validates each one first and reports it as its query file's error."""
    from rsp_jobs.orchestrate import dag_factory

    made = dag_factory.query_dag

    def invalid_for_pairs(rq, derived):
        dag = made(rq, derived)
        if rq.dag_id == "congested_pairs":
            dag.owner_links["rsp"] = "not a link"  # what validate() checks again
        return dag

    monkeypatch.setattr(dag_factory, "query_dag", invalid_for_pairs)
    dags, errors = dag_factory.build()
    assert set(dags) == PROJECT_DAGS - {"congested_pairs"}
    (path,) = errors
    assert path.name == "congested_pairs.rsp"
    assert "congested_pairs.rsp: cannot be scheduled (" in str(errors[path]) and "not a link" in str(errors[path])


def test_a_broken_stream_catalog_loses_only_the_ingest_dags(queries):
    (queries / "streams.toml").write_text('[streams.aarhus_traffic]\niri = "http://ex.org/s"\nlate_policy = "keep"\n')
    bag = dag_bag()
    (message,) = bag.import_errors.values()
    assert "streams.toml: [streams.aarhus_traffic]: late_policy must be drop or reevaluate" in message
    assert set(bag.dag_ids) == {d for d in PROJECT_DAGS if not d.startswith("ingest_")}


def test_two_queries_registered_under_one_name_are_an_error_naming_both_files(queries):
    original = queries / "citybench" / "congested_pairs.rsp"
    copy = queries / "traffic" / "congested_pairs_again.rsp"
    copy.write_text(original.read_text())
    bag = dag_bag()
    (message,) = bag.import_errors.values()
    assert f"{original}: registers the name 'congested_pairs'" in message and f"as {copy} does" in message
    assert f"{copy}: registers the name 'congested_pairs'" in message and f"as {original} does" in message
    assert set(bag.dag_ids) == PROJECT_DAGS - {"congested_pairs"}


def test_every_dag_says_what_it_does_in_a_line_and_retries_only_transient_failures(queries, monkeypatch):
    """A failure the input or the query causes fails the task at once (``AirflowFailException``
    is not retried); anything else is retried ``RSP_TASK_RETRIES`` times."""
    from airflow.sdk.exceptions import AirflowFailException

    from rsp_jobs.errors import InputError

    monkeypatch.setenv("RSP_TASK_RETRIES", "3")
    bag = dag_bag()
    assert all(dag.description and "\n" not in dag.description for dag in bag.dags.values())
    assert bag.dags.get("ingest_aarhus_traffic").description == \
        "Loads the files dropped in landing/aarhus_traffic/ into <" + TRAFFIC_IRI + "> as they arrive"
    assert {t.retries for dag in bag.dags.values() for t in dag.tasks} == {3}
    from rsp_jobs.orchestrate import dag_factory as module

    def bad_input():
        raise InputError("landing/x.nq:3: malformed N-Quads line")

    def lost_executor():
        raise ConnectionError("executor lost")

    with pytest.raises(AirflowFailException, match="x.nq:3"):
        module.final(bad_input)
    with pytest.raises(ConnectionError):
        module.final(lost_executor)
    assert module.final(lambda: 42) == 42


def test_a_run_that_is_not_whole_batches_is_refused_before_it_waits_naming_a_whole_one(queries):
    """dags/README.md: a run's interval must be whole batches (congestion_by_segment: 15 min on
    its 5-min grid of closes); the check fails the task at once, without retries."""
    from datetime import datetime, timezone

    from airflow.sdk.exceptions import AirflowFailException

    from rsp_jobs.errors import InputError
    from rsp_jobs.orchestrate import registry

    rq = registry.load_query(queries / "citybench" / "congestion_by_segment.rsp")
    at = lambda h, m: datetime(2014, 8, 2, h, m, tzinfo=timezone.utc)  # noqa: E731
    for after, until in ((at(6, 30), at(6, 45)), (at(6, 35), at(6, 50)), (at(6, 0), at(8, 0))):
        rq.check_interval(after, until)  # one batch, one on the grid of closes, eight
    for after, until in ((at(6, 31), at(6, 46)), (at(6, 30), at(6, 40)), (at(6, 45), at(6, 30))):
        with pytest.raises(InputError, match=r"congestion_by_segment: the run's interval .* is not whole batches"):
            rq.check_interval(after, until)
    with pytest.raises(InputError, match=r"e\.g\. \(2014-08-02T06:35:00Z, 2014-08-02T06:50:00Z\]"):
        rq.check_interval(at(6, 31), at(6, 46))

    sensor = dag_bag().dags.get("congestion_by_segment").get_task("wait_for_inputs")
    with pytest.raises(AirflowFailException, match="is not whole batches"):
        sensor.execute({"data_interval_start": at(6, 31), "data_interval_end": at(6, 46), "run_id": "by_hand"})
    chained = dag_bag().dags.get("congested_segments").get_task("wait_for_inputs")
    assert chained.query_path is None  # its interval is its upstream's


def test_an_ingest_run_waits_deferred_for_a_file_and_one_by_hand_loads_what_is_there(home, queries):
    """dags/README.md: each scheduled ingest run is an arrival; an idle folder does not make a
    skipped run per look."""
    import asyncio
    import threading
    from types import SimpleNamespace

    from airflow.sdk.exceptions import AirflowSkipException, TaskDeferred

    from rsp_jobs.orchestrate import registry

    dag = dag_bag().dags["ingest_aarhus_traffic"]
    assert [t.task_id for t in dag.topological_sort()] == ["wait_for_files", "load_landing_files", "quarantined_input"]
    sensor = dag.get_task("wait_for_files")
    landing = registry.stream_config(sensor.stream).landing_dir
    scheduled, manual = ({"dag_run": SimpleNamespace(run_type=kind)} for kind in ("scheduled", "manual"))
    with pytest.raises(AirflowSkipException, match=f"no new files in {landing}"):
        sensor.execute(manual)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(scheduled)
    trigger = deferred.value.trigger
    trigger.poll_seconds = 0.05
    (landing / "rejected").mkdir(parents=True, exist_ok=True)
    (landing / "rejected" / "old.nq").write_text("")  # not a new file
    (landing / "notes.txt").write_text("")  # not a stream file

    async def first_event():
        threading.Timer(0.3, lambda: (landing / "morning.nq").write_text("")).start()
        async for event in trigger.run():
            return event.payload
    assert asyncio.run(asyncio.wait_for(first_event(), 30)) == {"folder": str(landing), "files": ["morning.nq"]}
    assert sensor.execute(manual) is None and sensor.execute(scheduled) is None  # a file waits: load it


def test_a_one_time_tasparql_file_is_no_registered_query_and_the_error_names_it():
    from rsp_jobs.errors import InputError
    from rsp_jobs.orchestrate.registry import load_query

    path = settings.REPO_ROOT / "tests" / "fixtures" / "tasparql" / "table2_last.tasparql"
    with pytest.raises(InputError, match=r"table2_last\.tasparql: a registered query is C-SPARQL"):
        load_query(path)
