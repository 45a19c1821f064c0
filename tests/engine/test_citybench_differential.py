"""CityBench's own C-SPARQL queries over real Aarhus observations (mapped as its README
describes) and its background files: every window's answer equals rdflib's over the same window
contents plus the background.

Every query in ``../shared/data/citybench/queries/csparql/`` is either checked here or left out for a reason that a test
below also checks; ``queries/citybench/README.md`` has the table. Two queries (Q11, Q12) are empty
on every window by construction, so each also runs as a variant that changes one operator
(``bound`` for ``!bound``, ``> 0`` for ``> 3``): same shape, non-empty answers."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

import pytest
from rdflib import Graph, URIRef

from rsp_jobs.bench.reference import Elem, WindowSpec, plain_sparql, rdflib_answer, same_bindings, window_contents
from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.spark.background import load_graph
from rsp_jobs.terms import nt_to_json, to_nt

START = datetime(2014, 8, 2, 6, 0)
END = datetime(2014, 8, 2, 6, 30)
# UserLocationService has no times; the mapping stamps its 288 lines over 2014-08-01 only, so its
# half hour is the same wall-clock half hour one day earlier.
LOCATION = "UserLocationService"
LOCATION_SHIFT = timedelta(days=1)
SSN_OBSERVES = URIRef("http://purl.oclc.org/NET/ssnx/ssn#observes")
SSN_IS_PROPERTY_OF = URIRef("http://purl.oclc.org/NET/ssnx/ssn#isPropertyOf")


@dataclass(frozen=True)
class Case:
    query: str  # file stem in <RSP_DATA_DIR>/citybench/queries/csparql
    repository: str = "subset"  # "subset" of SensorRepository.n3 (see below), "full" or "none"
    events: bool = False  # AarhusCulturalEvents.n3 for FROM <.../AarhusCulturalEvents.rdf>
    variant: Optional[tuple[str, str]] = None  # (text, replacement), made exactly once
    always_empty: bool = False  # empty (or false) on every window by construction

    @property
    def id(self) -> str:
        return self.query + ("" if self.variant is None else f"[{self.variant[1]}]")


CASES = [
    Case("Q1"),
    Case("Q1_win_1"),
    Case("Q1_5_win_1"),
    Case("Q2", "full"),
    Case("Q3"),
    Case("Q4", "none", events=True),
    Case("Q5", events=True),
    Case("Q7"),
    Case("Q9", events=True),
    Case("Q10"),
    Case("Q10_5"),
    Case("Q10_8"),
    # ASK { {?obId1 ...} FILTER(!bound(?obId1)) }: the group always binds ?obId1, so false
    Case("Q11", "none", always_empty=True),
    Case("Q11", "none", variant=("!bound(?obId1)", "bound(?obId1)")),
    # a 3 s window holds one 5-minute reading of 186979, so COUNT per sensor is 1, never > 3
    Case("Q12", always_empty=True),
    Case("Q12", variant=("count(?obId1) > 3", "count(?obId1) > 0")),
    Case("pollution_weather_1"),
]


def query_path(data_dir: Path, name: str) -> Path:
    return data_dir / "citybench" / "queries" / "csparql" / f"{name}.txt"


def query_text(data_dir: Path, case: Case) -> str:
    text = query_path(data_dir, case.query).read_text()
    if case.variant is not None:
        old, new = case.variant
        assert text.count(old) == 1, f"{case.query}: variant text {old!r} not found exactly once"
        text = text.replace(old, new)
    return text


def local_name(stream: str) -> str:
    return stream.rsplit("#", 1)[-1]


def checked_streams(data_dir: Path) -> list[str]:
    """The local names of the streams the checked queries read."""
    return sorted({local_name(w.stream) for case in CASES
                   for w in compiler.compile(query_text(data_dir, case), case.id).windows})


@pytest.fixture(scope="module")
def citybench_lake(data_dir, tmp_path_factory):
    """Half an hour of every stream the checked queries read, loaded into one lake, and the same
    elements for the reference."""
    work = tmp_path_factory.mktemp("citybench")
    lake = Lake(work / "lake")
    elements = []
    for name in checked_streams(data_dir):
        shift = LOCATION_SHIFT if name == LOCATION else timedelta(0)
        for stream, path in citybench.export_streams([name], work, START - shift, END - shift, fmt="nquads"):
            batch = read_stream_file(path, str(stream))
            assert not batch.rejections, [str(r) for r in batch.rejections]
            assert batch.elements, f"{name}: no readings between {START - shift} and {END - shift}"
            lake.write(batch)
            elements += [Elem(str(stream), round(e.ts.timestamp() * 1000), e.s, e.p, e.o) for e in batch.elements]
    return lake, elements


def repository_subset(sensors: list[str]) -> Graph:
    """SensorRepository.n3's triples about the given sensors' observed properties and those
    properties' features of interest."""
    repository = load_graph(citybench.sensor_repository_path())
    subset = Graph()
    for sensor in sensors:
        for prop in repository.objects(URIRef(str(citybench.SES) + sensor), SSN_OBSERVES):
            for triple in repository.triples((prop, None, None)):
                subset.add(triple)
            for feature in repository.objects(prop, SSN_IS_PROPERTY_OF):
                for triple in repository.triples((feature, None, None)):
                    subset.add(triple)
    return subset


@pytest.fixture(scope="module")
def streams_repository(data_dir, tmp_path_factory):
    """The repository cut down to the sensors of the checked streams (repository_subset). Q1, Q3
    and Q1_5_win_1 start with the cartesian product of all 449 congestion properties with
    themselves (cubed in Q1_5_win_1), and Q5 with that of the 449 congestion properties and the
    99 cultural events: rdflib takes from seconds to minutes per window for these over the
    whole repository. Both engines get this same real subset instead. Every background pattern
    of these queries is joined to an observation's property, so the answers are those over the
    whole repository, which Q2 reads here (and the benchmark)."""
    path = tmp_path_factory.mktemp("repository") / "SensorRepository.ttl"
    subset = repository_subset(checked_streams(data_dir))
    assert len(subset) > 0
    subset.serialize(path, format="turtle")
    return path


def events_path() -> Path:
    return citybench.citybench_dir() / "background" / "AarhusCulturalEvents.n3"


def background_files(case: Case, subset: Path) -> list[Path]:
    files = {"full": [citybench.sensor_repository_path()], "subset": [subset], "none": []}[case.repository]
    return files + ([events_path()] if case.events else [])


def close_ms(window: dict) -> int:
    return round(datetime.fromisoformat(window["window_close"].replace("Z", "+00:00")).timestamp() * 1000)


@pytest.fixture(scope="module")
def engine_runs() -> dict:
    """Engine answers by (query text, background files): Q1_win_1 is the same file as Q1, and
    one Spark run answers both."""
    return {}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_citybench_query_matches_rdflib_on_every_window(case, data_dir, citybench_lake,
                                                       streams_repository, engine_runs, spark):
    lake, elements = citybench_lake
    text = query_text(data_dir, case)
    query = compiler.compile(text, str(query_path(data_dir, case.query)))
    files = background_files(case, streams_repository)
    key = (text, tuple(files))
    if key not in engine_runs:
        engine_runs[key] = [w.to_json() for w in evaluate(query, lake, [str(f) for f in files])]
    engine = engine_runs[key]

    specs = [WindowSpec(w.stream, w.window.range_ms, w.window.step_ms) for w in query.windows]
    contents = window_contents(elements, specs)
    sparql = plain_sparql(text)
    background = [load_graph(f) for f in files]
    assert [close_ms(w) for w in engine] == sorted(contents) and contents
    answered = 0
    for window in engine:
        expected = rdflib_answer(sparql, contents[close_ms(window)], background)
        if query.form == "ASK":
            assert window["boolean"] == expected, (window["window_close"], window["boolean"], expected)
            answered += expected
            continue
        theirs = [{k: nt_to_json(to_nt(v)) for k, v in b.items()} for b in expected]
        assert same_bindings(window["bindings"], theirs), (window["window_close"], window["bindings"], theirs)
        answered += bool(theirs)
    if case.always_empty:
        assert answered == 0, f"{case.id} was expected to be empty on every window"
    else:
        assert answered > 0, "no window had a non-empty answer: the test would prove nothing"


LEFT_OUT = {"Q6", "Q8", "location_parking_1", "traffic_parking_1"}
README = Path(__file__).resolve().parents[2] / "queries" / "citybench" / "README.md"


def test_every_citybench_query_is_checked_or_left_out_in_the_readme(data_dir):
    """Each query file is a case above or left out, and has its row in the README's table."""
    names = {p.stem for p in query_path(data_dir, "Q1").parent.glob("*.txt")}
    checked = {case.query for case in CASES}
    assert names == checked | LEFT_OUT and not checked & LEFT_OUT
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and cells[0] in names:
            rows[cells[0]] = cells[2]
    assert rows == {name: "left out" if name in LEFT_OUT else "checked" for name in names}


@pytest.mark.parametrize("name, error, message", [
    ("Q8", QueryError, r"AarhusLibraryEvents\.rdf"),
    ("location_parking_1", UnsupportedConstruct, r"different STEPs.*1500 ms, 10000 ms"),
    ("traffic_parking_1", UnsupportedConstruct, r"different STEPs.*1500 ms, 10000 ms"),
])
def test_left_out_queries_fail_for_the_recorded_reason(name, error, message, data_dir,
                                                       citybench_lake, spark):
    """Q8 reads a background file CityBench does not ship; the *_parking_1 queries slide their
    windows by different STEPs, which the engine rejects (queries/citybench/README.md)."""
    lake, _ = citybench_lake
    path = query_path(data_dir, name)
    query = compiler.compile(path.read_text(), str(path))
    # only the repository: an unmatched file would stand in for the missing graph
    files = [str(citybench.sensor_repository_path())]
    with pytest.raises(error, match=message):
        next(iter(evaluate(query, lake, files)))


def test_q6_streams_never_share_a_window(data_dir):
    """Q6 joins a parking garage's readings with the user's location in the same 3 s window; on
    the one day the location stream covers, no window holds both, so every answer is empty and
    Q6 is left out of the differential test (queries/citybench/README.md)."""
    path = query_path(data_dir, "Q6")
    query = compiler.compile(path.read_text(), str(path))
    day = citybench.LOCATION_START.replace(tzinfo=None)
    elements = []
    for w in query.windows:
        stream, frames, _ = citybench.map_stream(
            citybench.citybench_dir() / "streams" / f"{local_name(w.stream)}.stream",
            start=day, end=day + timedelta(days=1))
        assert frames, f"{w.stream}: no readings on {day:%Y-%m-%d}"
        elements += [Elem(str(stream), round(f.timestamp.timestamp() * 1000), "", "", "") for f in frames]
    specs = [WindowSpec(w.stream, w.window.range_ms, w.window.step_ms) for w in query.windows]
    windows = window_contents(elements, specs)
    assert windows
    assert not [c for c, content in windows.items() if len({spec.stream for spec, _ in content}) > 1]


def test_background_file_is_bound_to_the_from_graph_by_name(data_dir, spark):
    """Q1 says FROM <http://127.0.0.1:9000/WebGlCity/RDF/SensorRepository.rdf>; the repository
    file given on the command line binds to it by its name, and a missing one is an error."""
    from rsp_jobs.spark.background import Background

    query = compiler.compile(query_path(data_dir, "Q1").read_text(), "Q1.txt")
    background = Background.for_query(query.graphs, [str(citybench.sensor_repository_path())], "Q1.txt")
    assert len(background.default) == 1 and len(background.default[0]) > 40_000
    with pytest.raises(QueryError, match="SensorRepository.rdf"):
        Background.for_query(query.graphs, [], "Q1.txt")


def test_citybench_times_are_wall_clock_utc(citybench_lake):
    """The CSV's Aarhus wall-clock times are read as UTC: 06:00 in the file is 06:00Z."""
    _, elements = citybench_lake
    for location in (False, True):
        start = (START - LOCATION_SHIFT if location else START).replace(tzinfo=timezone.utc)
        first = min(e.ts_ms for e in elements if (local_name(e.stream) == LOCATION) == location)
        assert datetime.fromtimestamp(first / 1000, tz=timezone.utc) == start


def test_patterns_matching_window_and_background_build_a_plan_linear_in_their_number(tmp_path, spark):
    """Engine fix found by Q4, Q5 and Q9, whose BGPs have up to twelve patterns that match both
    window and background triples: joining such a pattern used to put the solutions joined so
    far into the Spark plan twice, so the plan doubled with each one (Q4: 55,278 logical plan
    nodes, minutes in Catalyst before any data was read; rsp_jobs.spark.evaluate.Evaluator._join_either).
    A chain of links that alternate between background and stream, and a pattern with no
    shared variable: the answers equal rdflib's, and the plan of 6 links is about twice that of
    3 (it was 8 times: 13,553 nodes against 1,625)."""
    from rdflib import Literal

    from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
    from rsp_jobs.spark import windows
    from rsp_jobs.spark.background import Background
    from rsp_jobs.spark.evaluate import WIN, Evaluator

    ex, stream = "http://ex.org/", "http://ex.org/stream"
    link, tag = URIRef(ex + "link"), URIRef(ex + "tag")
    node = lambda i: URIRef(f"{ex}a{i}")  # noqa: E731
    background = Graph()
    for i in range(0, 10, 2):  # a0 -> a1, a2 -> a3, ... in the background
        background.add((node(i), link, node(i + 1)))
    background.add((URIRef(ex + "b"), tag, Literal("background")))
    background_path = tmp_path / "links.ttl"
    background.serialize(background_path, format="turtle")
    elements = [Elem(stream, ts, to_nt(node(i)), to_nt(link), to_nt(node(i + 1)))  # a1 -> a2, ...
                for ts, i in ((1000, 1), (1500, 3), (2200, 5), (2900, 7), (4100, 9))]
    elements.append(Elem(stream, 1000, f"<{ex}s>", to_nt(tag), '"stream"'))
    lake = Lake(tmp_path / "lake")
    batch = StreamBatch(stream=stream, source="generated")
    for e in elements:
        ts = datetime.fromtimestamp(e.ts_ms / 1000, tz=timezone.utc)
        batch.elements.append(Element(stream, ts, f"{stream}/{e.ts_ms}", e.s, e.p, e.o, None, None))
    lake.write(batch)

    def chain(n: int, dataset: str = f"FROM STREAM <{stream}> [RANGE 3s STEP 1s] FROM <{ex}links.ttl>") -> str:
        links = " . ".join(f"?x{i} <{link}> ?x{i + 1}" for i in range(n))
        return f"SELECT * {dataset} WHERE {{ {links} . ?t <{tag}> ?label }}"

    def plan_nodes(n: int) -> int:
        query = compiler.compile(chain(n))
        rows = windows.assign(lake.read(spark, [stream]), query, windows.schedule(query, 0), None, None)
        evaluator = Evaluator(query, rows, rows.select(WIN, "_open").distinct(),
                              Background.for_query(query.graphs, [str(background_path)], "chain"))
        return evaluator.to_dep(evaluator.evaluate(query.plan))._jdf.queryExecution().logical().treeString().count("\n")

    assert plan_nodes(6) < 3 * plan_nodes(3)
    contents = window_contents(elements, [WindowSpec(stream, 3000, 1000)])
    engine = [w.to_json() for w in evaluate(compiler.compile(chain(3)), lake, [str(background_path)])]
    assert [close_ms(w) for w in engine] == sorted(contents)
    found = 0
    for window in engine:
        expected = rdflib_answer(chain(3, dataset=""), contents[close_ms(window)], [background])
        theirs = [{k: nt_to_json(to_nt(v)) for k, v in b.items()} for b in expected]
        assert same_bindings(window["bindings"], theirs), (window["window_close"], window["bindings"], theirs)
        found += bool(theirs)
    assert found > 0


def test_streams_under_one_window_are_windowed_in_one_pass(tmp_path, spark):
    """Engine fix found by Q10_5 and Q10_8 (five and eight streams under [RANGE 3s STEP 1s]):
    window assignment windowed each stream in a pass over the rows of all streams, so its plan
    grew with the square of the streams (Q10_8: 2,358 nodes, read again by each of the 24
    triple patterns); streams under the same window now share one pass
    (rsp_jobs.spark.windows.assign). The window rows of 8 streams are not 16 times those of 2
    (with the square they were); the answers of such queries are checked above (Q10_8) and in
    tests/engine/test_differential.py (two streams)."""
    from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
    from rsp_jobs.spark import windows

    ex = "http://ex.org/"
    lake = Lake(tmp_path / "lake")
    for i in range(8):
        stream = f"{ex}stream{i}"
        batch = StreamBatch(stream=stream, source="generated")
        batch.elements.append(Element(stream, datetime(2014, 8, 2, tzinfo=timezone.utc), f"{stream}/f",
                                      f"<{ex}s{i}>", f"<{ex}p>", f"<{ex}o{i}>", None, None))
        lake.write(batch)

    def rows_plan_nodes(n: int) -> int:
        streams = [f"{ex}stream{i}" for i in range(n)]
        text = ("SELECT * " + " ".join(f"FROM STREAM <{s}> [RANGE 3s STEP 1s]" for s in streams)
                + " WHERE { " + " ".join(f"{{ ?x{i} <{ex}p> ?y{i} }}" for i in range(n)) + " }")
        query = compiler.compile(text)
        rows = windows.assign(lake.read(spark, streams), query, windows.schedule(query, 0), None, None)
        return rows._jdf.queryExecution().logical().treeString().count("\n")

    assert rows_plan_nodes(8) < 8 * rows_plan_nodes(2)


def test_the_checked_queries_evaluated_together_answer_as_each_alone(data_dir, citybench_lake,
                                                                     streams_repository, engine_runs, spark):
    """Multi-query execution: every case in one ``evaluate_together``, the queries of each slice
    over one scan of it in one job, answers what each evaluated alone does (ASK, SELECT with
    aggregates, several streams and windows)."""
    from rsp_jobs.engine import evaluate_together
    from rsp_jobs.physical import planner
    from rsp_jobs.physical.statistics import LakeStatistics

    lake, _ = citybench_lake
    texts = [query_text(data_dir, case) for case in CASES]
    queries = [compiler.compile(t, str(query_path(data_dir, c.query))) for t, c in zip(texts, CASES)]
    files = [[str(f) for f in background_files(case, streams_repository)] for case in CASES]
    shared = planner.plan_together(queries, LakeStatistics(lake))
    assert sorted(i for plan in shared for i in plan.members) == list(range(len(CASES)))
    assert any(len(plan.members) > 1 for plan in shared), "no slice is shared: nothing is tested"
    together = evaluate_together(queries, lake, files)
    for case, query, text, mine, its_files in zip(CASES, queries, texts, together, files):
        key = (text, tuple(Path(f) for f in its_files))
        if key not in engine_runs:
            engine_runs[key] = [w.to_json() for w in evaluate(query, lake, its_files)]
        assert [w.to_json() for w in mine] == engine_runs[key], case.id
