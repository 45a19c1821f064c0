"""The W3C SPARQL 1.1 query-evaluation tests run as the body of a continuous query.

The suite (``<data dir>/w3c-sparql11``, the W3C's files unchanged) is read from its manifests.
Each applicable test becomes what a user would register: the test's data is one frame of a
stream, at one instant, and the test's query gets ``FROM STREAM <urn:w3c:stream> [RANGE 1h STEP
1h]`` before its outer WHERE clause, so its body is evaluated over the one window that holds
the frame. Its answer is compared with the W3C's expected results (README.md says how).

Applicable, as the issue and the suite's own entailment split say: a query-evaluation test
without named graphs (``qt:graphData``), without SERVICE, outside ``entailment/``.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import unquote, urlparse

import rdflib
from rdflib import RDF, Graph, Namespace
from rdflib.query import Result

from rsp_jobs import terms as T

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
QT = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-query#")
RS = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/result-set#")

FOLDERS = ("aggregates", "bind", "bindings", "cast", "construct", "csv-tsv-res", "exists",
           "functions", "grouping", "json-res", "negation", "project-expression",
           "property-path", "subquery")
EVALUATION = {MF.QueryEvaluationTest, MF.CSVResultFormatTest}
STREAM = "urn:w3c:stream"
FRAME_TIME = '"2020-01-01T00:30:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>'
WINDOW = f"FROM STREAM <{STREAM}> [RANGE 1h STEP 1h]\n"
# The test's window: the hour holding the frame, evaluated whether or not the test has data
# (the every-close reporting policy), so that a test with no data answers over an empty graph.
_HOUR_US = 3_600_000_000
_CLOSE_US = int(datetime(2020, 1, 1, 1, tzinfo=timezone.utc).timestamp()) * 1_000_000
EXPECTED_FAILURES = Path(__file__).with_name("expected_failures.toml")


@dataclass(frozen=True)
class EvaluationTest:
    id: str  # folder/name, as the expected failures list it
    name: str
    query: Path
    data: tuple[Path, ...]
    result: Path | None
    named_graphs: bool

    @property
    def applicable(self) -> bool:
        return not self.named_graphs and "SERVICE" not in self.query.read_text().upper()


@dataclass(frozen=True)
class SyntaxTest:
    id: str
    query: Path
    positive: bool


def _path(node) -> Path:
    return Path(unquote(urlparse(str(node)).path))


def _manifest(folder: Path) -> tuple[Graph, list]:
    graph = Graph().parse(folder / "manifest.ttl", format="turtle")
    manifest = next(graph.subjects(RDF.type, MF.Manifest))
    entries = rdflib.collection.Collection(graph, graph.value(manifest, MF.entries))
    return graph, list(entries)


def evaluation_tests(suite: Path) -> list[EvaluationTest]:
    out = []
    for folder in FOLDERS:
        graph, entries = _manifest(suite / folder)
        for entry in entries:
            if graph.value(entry, RDF.type) not in EVALUATION:
                continue
            action = graph.value(entry, MF.action)
            result = graph.value(entry, MF.result)
            out.append(EvaluationTest(
                id=f"{folder}/{str(entry).rsplit('#', 1)[-1]}",
                name=str(graph.value(entry, MF.name)),
                query=_path(graph.value(action, QT.query)),
                data=tuple(_path(d) for d in graph.objects(action, QT.data)),
                result=_path(result) if result is not None else None,
                named_graphs=graph.value(action, QT.graphData) is not None,
            ))
    return out


def syntax_tests(suite: Path) -> list[SyntaxTest]:
    graph, entries = _manifest(suite / "syntax-query")
    kinds = {MF.PositiveSyntaxTest11: True, MF.NegativeSyntaxTest11: False}
    out = []
    for entry in entries:
        kind = graph.value(entry, RDF.type)
        if kind in kinds:
            out.append(SyntaxTest(f"syntax-query/{str(entry).rsplit('#', 1)[-1]}",
                                  _path(graph.value(entry, MF.action)), kinds[kind]))
    return out


def expected_failures() -> dict[str, str]:
    """{test id: why it fails}: each one a strict expected failure, its reason beside it."""
    return dict(tomllib.loads(EXPECTED_FAILURES.read_text())["failures"])


# ------------------------------------------------------------------ the test as a continuous query

_SKIP = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*"""|\'\'\'(?:[^\'\\]|\\.|\'(?!\'\'))*\'\'\''
                   r'|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|<[^<>"{}|^`\\\x00-\x20]*>|#[^\n]*')
_FORM = re.compile(r"\b(SELECT|CONSTRUCT|ASK|DESCRIBE)\b", re.I)


def windowed(text: str) -> str:
    """``text`` with the stream's window inserted as the dataset, before the outer WHERE clause
    (or its ``{``, WHERE being optional). Strings, IRIs and comments are skipped; in a CONSTRUCT
    the first top-level ``{`` is the template unless WHERE comes first."""
    masked = _SKIP.sub(lambda m: " " * len(m.group(0)), text)
    form = _FORM.search(masked)
    if form is None:
        raise ValueError("no query form")
    construct = form.group(1).upper() == "CONSTRUCT"
    depth, skipped_template, i = 0, not construct, form.end()
    while i < len(masked):
        c = masked[i]
        if c in "({":
            if depth == 0 and c == "{" and skipped_template:
                return text[:i] + WINDOW + text[i:]
            depth += 1
        elif c in ")}":
            depth -= 1
            if depth == 0 and c == "}" and not skipped_template:
                skipped_template = True
        elif depth == 0 and masked[i:i + 5].upper() == "WHERE" and not masked[i - 1].isalnum():
            return text[:i] + WINDOW + text[i:]
        i += 1
    raise ValueError("no WHERE clause")


def stream_lines(data: tuple[Path, ...]) -> list[str]:
    """The test's data as one frame: N-Quads whose context is the frame's time, each term as
    the data writes it."""
    graph = Graph()  # terms as written: rsp_jobs keeps rdflib from normalising literals
    for path in data:
        graph.parse(path, format=rdflib.util.guess_format(str(path)) or "turtle")
    return [f"{s.n3()} {p.n3()} {o.n3()} {FRAME_TIME} .\n" for s, p, o in graph]


# ---------------------------------------------------------------------------------- answers

_EXACT = T.INTEGER_TYPES | {T.XSD_DECIMAL}
_FLOATING = {T.XSD_DOUBLE, T.XSD_FLOAT}


def _literal(text: str, datatype: str | None, lang: str | None) -> tuple:
    if datatype == T.XSD_STRING:
        datatype = None
    return ("literal", text, datatype, (lang or "").lower() or None)


def _by_value(term: tuple) -> tuple:
    """A term as compared. Numbers compare by datatype and value, as Jena's result comparison
    does: the W3C's expected results are not all in canonical form (``"1050"`` beside
    ``"2.5E0"`` as xsd:double). A lexical form that is no number stays as written."""
    if term[0] != "literal" or term[2] not in _EXACT | _FLOATING:
        return term
    try:
        value = Decimal(term[1].strip()).normalize() if term[2] in _EXACT else float(term[1].strip())
    except (InvalidOperation, ValueError):
        return term
    return ("number", value, term[2])


def _term(node) -> tuple:
    """An rdflib term as compared, through the engine's own N-Triples and JSON encodings."""
    return _json_term(None if node is None else T.nt_to_json(T.to_nt(node)))


def _json_term(term: dict | None) -> tuple:
    """A SPARQL JSON results term as compared: kind, lexical form, datatype, language
    (lower-cased: tags are case-insensitive, RDF 1.1 §3.3). Blank nodes compare by kind only:
    labels are local to a result."""
    if term is None:
        return ("unbound",)
    if term["type"] == "bnode":
        return ("bnode",)
    if term["type"] == "uri":
        return ("uri", term["value"])
    return _literal(term["value"], term.get("datatype"), term.get("xml:lang"))


@dataclass(frozen=True)
class Answer:
    """What a query answers, in a form both sides reduce to: the variables and rows as a
    multiset (``rows``), a boolean, or a graph."""

    variables: tuple[str, ...] = ()
    rows: Counter | None = None
    boolean: bool | None = None
    graph: Graph | None = None
    # the rows in order, where the format keeps one (not the RDF result sets without rs:index)
    sequence: tuple | None = None
    ordered: bool = False  # the query has ORDER BY: the order must be the same too

    def same_as(self, other: Answer) -> bool:
        if self.graph is not None or other.graph is not None:
            from rdflib.compare import isomorphic
            return self.graph is not None and other.graph is not None and isomorphic(self.graph, other.graph)
        if self.boolean is not None or other.boolean is not None:
            return self.boolean == other.boolean
        if set(self.variables) != set(other.variables) or _compared(self.rows) != _compared(other.rows):
            return False
        if (self.ordered or other.ordered) and self.sequence is not None and other.sequence is not None:
            return [_by_values(row) for row in self.sequence] == [_by_values(row) for row in other.sequence]
        return True


def _by_values(row: tuple) -> tuple:
    return tuple((v, _by_value(t)) for v, t in row)


def _compared(rows: Counter | None) -> Counter | None:
    if rows is None:
        return None
    return Counter({_by_values(row): n for row, n in rows.items()})


def _solutions(variables, solutions, ordered: bool = True) -> Answer:
    """An answer of ``solutions`` (rows of terms, in ``variables``' order), their order kept
    where the format has one."""
    rows = tuple(tuple(sorted((v, t) for v, t in zip(variables, row, strict=True) if t != ("unbound",)))
                 for row in solutions)
    return Answer(variables, Counter(rows), sequence=rows if ordered else None)


def expected_answer(test: EvaluationTest) -> Answer:
    path = test.result
    assert path is not None
    suffix = path.suffix
    if suffix == ".srx":
        return _srx(path)
    if suffix in (".srj", ".tsv", ".csv"):
        fmt = {".srj": "json", ".tsv": "tsv", ".csv": "csv"}[suffix]
        with path.open("rb") as handle:
            result = Result.parse(handle, format=fmt)
        if result.type == "ASK":
            return Answer(boolean=bool(result.askAnswer))
        variables = tuple(str(v) for v in result.vars or ())
        return _solutions(variables, ([_term(t) for t in row] for row in result))
    graph = Graph().parse(path, format=rdflib.util.guess_format(str(path)) or "turtle")
    result_set = next(graph.subjects(RDF.type, RS.ResultSet), None)
    if result_set is None:
        return Answer(graph=graph)
    boolean = graph.value(result_set, RS.boolean)
    if boolean is not None:
        return Answer(boolean=bool(boolean.toPython()))
    variables = tuple(sorted(str(v) for v in graph.objects(result_set, RS.resultVariable)))
    solutions = []
    for solution in graph.objects(result_set, RS.solution):
        bound = {str(graph.value(b, RS.variable)): graph.value(b, RS.value)
                 for b in graph.objects(solution, RS.binding)}
        solutions.append([_term(bound.get(v)) for v in variables])
    return _solutions(variables, solutions, ordered=False)


def lossy(answer: Answer) -> Answer:
    """An answer as CSV keeps it (SPARQL 1.1 Query Results CSV §3.2): values without
    datatype, language or kind."""
    if answer.rows is None:
        return answer
    def value(term):
        return term if term[0] in ("unbound", "bnode") else ("value", term[1])

    def lossy_row(row):
        return tuple((v, value(t)) for v, t in row)
    sequence = None if answer.sequence is None else tuple(map(lossy_row, answer.sequence))
    return Answer(answer.variables, Counter({lossy_row(row): n for row, n in answer.rows.items()}),
                  sequence=sequence, ordered=answer.ordered)


def run(test: EvaluationTest, tmp_path: Path) -> tuple[Answer, Answer]:
    """The engine's answer and the W3C's, reduced alike."""
    from rsp_jobs import compiler
    from rsp_jobs.engine import Interval, evaluate
    from rsp_jobs.ingest.lake import Lake, load_files

    expected = expected_answer(test)
    stream = tmp_path / "stream.nq"
    stream.write_text("".join(stream_lines(test.data)))
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream)])
    compiled = compiler.compile(windowed(test.query.read_text()), str(test.query))
    windows = [w.to_json() for w in evaluate(compiled, lake, interval=Interval(_CLOSE_US - _HOUR_US, _CLOSE_US), report="every-close")]
    got = replace(engine_answer(windows, compiled.form, expected.variables), ordered=ordered(compiled.plan))
    if test.result is not None and test.result.suffix == ".csv":
        return lossy(got), lossy(expected)
    return got, expected


_SRX = "{http://www.w3.org/2005/sparql-results#}"


def _srx(path: Path) -> Answer:
    """SPARQL Query Results XML, read here: rdflib drops a ``<result>`` that binds nothing,
    which is how the suite writes a solution whose one variable is an error."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    boolean = root.find(f"{_SRX}boolean")
    if boolean is not None:
        return Answer(boolean=boolean.text.strip() == "true")
    variables = tuple(v.get("name") for v in root.iter(f"{_SRX}variable"))
    solutions = []
    for result in root.iter(f"{_SRX}result"):
        bound = {}
        for binding in result.iter(f"{_SRX}binding"):
            value = binding[0]
            kind = value.tag.removeprefix(_SRX)
            text = value.text or ""
            if kind == "uri":
                bound[binding.get("name")] = ("uri", text)
            elif kind == "bnode":
                bound[binding.get("name")] = ("bnode",)
            else:
                lang = value.get("{http://www.w3.org/XML/1998/namespace}lang")
                bound[binding.get("name")] = _literal(text, value.get("datatype"), lang)
        solutions.append([bound.get(v, ("unbound",)) for v in variables])
    return _solutions(variables, solutions)


def ordered(plan) -> bool:
    """Whether the query's solutions come in an ORDER BY's order (SPARQL 1.1 §15.1)."""
    from rsp_jobs.algebra import plan as P

    while isinstance(plan, (P.Slice, P.Distinct, P.Project)):
        plan = plan.input
    return isinstance(plan, P.OrderBy)


def engine_answer(windows: list[dict], form: str, variables: tuple[str, ...]) -> Answer:
    """The answer of the one window of the test's hour."""
    assert len(windows) == 1, f"expected the one window of the test's hour, got {len(windows)}"
    window = windows[0]
    if form == "ASK":
        return Answer(boolean=window["boolean"])
    if form in ("CONSTRUCT", "DESCRIBE"):
        return Answer(graph=Graph().parse(data="\n".join(window["triples"]), format="nt"))
    return _solutions(variables, ([_json_term(b.get(v)) for v in variables] for b in window["bindings"]))


def syntax_outcome(test: SyntaxTest) -> str | None:
    """None when the parser does as the manifest says, else what it did instead."""
    from rsp_jobs.errors import QueryError, QuerySyntaxError, UnsupportedConstruct
    from rsp_jobs.language.parser import parse_query

    from rsp_jobs.algebra.translate import translate

    text = test.query.read_text(encoding="utf-8")
    try:
        # the scope rules (SPARQL 1.1 §18.2.1) are checked where the plan is built, so a query
        # goes as far as the algebra, as the body of a window where it has a WHERE clause
        try:
            text = windowed(text)
        except ValueError:
            parse_query(text, str(test.query))
        else:
            translate(parse_query(text, str(test.query)))
    except (QuerySyntaxError, UnsupportedConstruct, QueryError) as err:
        if test.positive:
            return f"refused: {str(err).splitlines()[0]}"
        return None
    except Exception as err:  # a crash is a failure of either kind of test
        return f"crashed: {type(err).__name__}: {err}"
    return None if test.positive else "accepted"
