"""A CSV file with a header, mapped to an RDF stream by a small declared mapping
(``docs/ingest.md``): which columns make a row's subject, which column becomes which predicate
(with an optional datatype), and which column is the row's time.

The mapping is a TOML table, inline in ``queries/streams.toml`` under the stream
(``[streams.<key>.mapping]``) or a file of its own (``rsp ingest --mapping FILE``)::

    subject = "http://example.org/sensor/{id}"  # {column}: that cell, percent-encoded
    time = "observed_at"                          # the time column
    time_format = "iso"     # "iso" (default), "unix", "unix_ms" or a strptime pattern
    timezone = "UTC"        # for times without an offset: "UTC" (default) or an IANA name
    delimiter = ","         # default ","

    [properties]            # column = predicate IRI, or a table with a datatype
    temperature = { predicate = "http://example.org/ns#temperature", datatype = "xsd:double" }
    room = "http://example.org/ns#room"         # a plain string literal

One frame per instant, ``<stream>/frame/<time>``, holding every row of that time; frames come
out in time order. Decisions, so that nothing is dropped silently (each rejected row is a
``Rejection(file, line, reason)`` in the ``MappingReport``, quarantined by the ingest):

* A blank value cell states nothing: that one triple is left out and the rest of the row is
  mapped; a row whose value cells are all blank yields no triples and is no error.
* A value that is not of its datatype, an unreadable or blank time, a blank cell the subject
  needs, or a row with the wrong number of columns rejects the whole row: a row with one
  property left out would make its other values look like a complete reading.
* A second row with the subject and the time of an earlier row is rejected as a duplicate
  naming that line (a frame holds one reading per subject).
* Values are kept as written (stripped of surrounding blanks); only their datatype is checked.
"""

from __future__ import annotations

import csv
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from urllib.parse import quote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from rdflib import Literal, URIRef

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.citybench import Frame, MappingReport, write_trig
from rsp_jobs.ingest.rdf_stream import Rejection
from rsp_jobs.textfile import open_text, read_text
from rsp_jobs.times import datetime_lexical

XSD = "http://www.w3.org/2001/XMLSchema#"
IRI_VALUE = "iri"  # the datatype that makes a cell an IRI, not a literal
TIME_FORMATS = ("iso", "unix", "unix_ms")  # or a strptime pattern (one with a %)
_KEYS = {"subject", "time", "time_format", "timezone", "delimiter", "properties"}
_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]+")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)")
_DOUBLE = re.compile(r"[+-]?((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|INF)|NaN")
_BOOLEAN = {"true", "false", "1", "0"}
_INTEGERS = ("integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger")


@dataclass(frozen=True)
class Property:
    column: str
    predicate: str
    datatype: str | None = None  # a datatype IRI, IRI_VALUE, or None: a plain string


@dataclass(frozen=True)
class CsvMapping:
    subject: str  # an IRI template with {column} placeholders
    time: str
    properties: tuple[Property, ...]
    time_format: str = "iso"
    timezone: str = "UTC"
    delimiter: str = ","

    @property
    def subject_columns(self) -> tuple[str, ...]:
        return tuple(_PLACEHOLDER.findall(self.subject))

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column the mapping reads, as the header must name them."""
        return (self.time, *self.subject_columns, *(p.column for p in self.properties))


def parse_mapping(table: object, where: str) -> CsvMapping:
    """A mapping table checked whole; an ``InputError`` names ``where`` and the key at fault."""
    if not isinstance(table, dict):
        raise InputError(f"{where}: a mapping is a table (subject, time, properties)")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(unknown)}; a mapping has {', '.join(sorted(_KEYS))}"
        )
    for key in ("subject", "time", "properties"):
        if key not in table:
            raise InputError(f"{where}: missing {key}")
    subject = _text(table, "subject", where)
    columns = _PLACEHOLDER.findall(subject)
    if not columns or not all(columns):
        raise InputError(
            f"{where}.subject: an IRI template naming at least one column, such as "
            f"http://example.org/sensor/{{id}}, got {subject!r}"
        )
    if not _IRI.fullmatch(_PLACEHOLDER.sub("x", subject)):
        raise InputError(f"{where}.subject: not an absolute IRI template: {subject!r}")
    time_format = _text(table, "time_format", where, "iso")
    if time_format not in TIME_FORMATS and "%" not in time_format:
        raise InputError(
            f"{where}.time_format: one of {', '.join(TIME_FORMATS)} or a strptime pattern "
            f"such as %d/%m/%Y %H:%M, got {time_format!r}"
        )
    timezone = _text(table, "timezone", where, "UTC")
    _zone(timezone, f"{where}.timezone")
    delimiter = _text(table, "delimiter", where, ",")
    if len(delimiter) != 1:
        raise InputError(f"{where}.delimiter: one character, got {delimiter!r}")
    properties = table["properties"]
    if not isinstance(properties, dict) or not properties:
        raise InputError(f"{where}.properties: a table of column = predicate IRI, at least one")
    return CsvMapping(
        subject,
        _text(table, "time", where),
        tuple(
            _property(column, spec, f"{where}.properties") for column, spec in properties.items()
        ),
        time_format,
        timezone,
        delimiter,
    )


def load_mapping(path: str | Path) -> CsvMapping:
    """A mapping file: the keys of a ``[streams.<key>.mapping]`` table at its top level."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such mapping file")
    try:
        table = tomllib.loads(read_text(path, "mapping"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: {exc}") from None
    return parse_mapping(table, str(path))


def _text(table: dict, key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}.{key}: a non-empty string, got {value!r}")
    return value


def _property(column: str, spec: object, where: str) -> Property:
    if isinstance(spec, str):
        spec = {"predicate": spec}
    if not isinstance(spec, dict) or set(spec) - {"predicate", "datatype"}:
        raise InputError(
            f"{where}.{column}: a predicate IRI or a table {{ predicate = IRI, datatype = ... }}"
        )
    predicate = spec.get("predicate")
    if not isinstance(predicate, str) or not _IRI.fullmatch(predicate):
        raise InputError(f"{where}.{column}.predicate: not an absolute IRI: {predicate!r}")
    datatype = spec.get("datatype")
    if datatype is not None:
        if not isinstance(datatype, str):
            raise InputError(f"{where}.{column}.datatype: a string, got {datatype!r}")
        if datatype.startswith("xsd:"):
            datatype = XSD + datatype[4:]
        if datatype != IRI_VALUE and not _IRI.fullmatch(datatype):
            raise InputError(
                f"{where}.{column}.datatype: xsd:NAME, a datatype IRI or {IRI_VALUE!r}, got "
                f"{spec['datatype']!r}"
            )
    return Property(column, predicate, datatype)


def _zone(name: str, where: str) -> ZoneInfo | None:
    if name.upper() == "UTC":
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"{where}: not a time zone name (UTC, Europe/Copenhagen...): {name!r}"
        ) from None


def parse_time(text: str, mapping: CsvMapping) -> datetime:
    """A time cell as an aware UTC time; ValueError says what is wrong with it. A time written
    without an offset is in the mapping's timezone; a wall-clock time that a change to summer
    time skips does not exist and is refused, and one that the change back repeats is the
    earlier of the two."""
    try:
        return _parse_time(text.strip(), mapping)
    except OverflowError:  # years 1-9999 in UTC only
        raise ValueError("out of the years 1-9999") from None


def _parse_time(text: str, mapping: CsvMapping) -> datetime:
    if not text:
        raise ValueError("blank")
    fmt = mapping.time_format
    if fmt in ("unix", "unix_ms"):
        try:
            number = Decimal(text)
        except InvalidOperation:
            unit = "milliseconds" if fmt == "unix_ms" else "seconds"
            raise ValueError(f"not a number of {unit}") from None
        if not number.is_finite():
            raise ValueError("not a finite number")
        micros = number * (1000 if fmt == "unix_ms" else 1_000_000)
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(micros))
    value = datetime.fromisoformat(text) if fmt == "iso" else datetime.strptime(text, fmt)
    if value.tzinfo is not None:
        return value.astimezone(UTC)
    zone = _zone(mapping.timezone, "timezone")
    if zone is None:
        return value.replace(tzinfo=UTC)
    local = value.replace(tzinfo=zone)
    utc = local.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) != value:
        raise ValueError(f"does not exist in {mapping.timezone} (skipped by a change of clocks)")
    return utc


def _term(text: str, prop: Property) -> URIRef | Literal:
    """The object of a value cell (stripped, not blank); ValueError if it is not of its type."""
    datatype = prop.datatype
    if datatype == IRI_VALUE:
        if not _IRI.fullmatch(text):
            raise ValueError("not an absolute IRI")
        return URIRef(text)
    if datatype is None:
        return Literal(text)
    local = datatype[len(XSD) :] if datatype.startswith(XSD) else None
    valid = {
        "double": _DOUBLE,
        "float": _DOUBLE,
        "decimal": _DECIMAL,
        **dict.fromkeys(_INTEGERS, _INTEGER),
    }
    if local in valid and not valid[local].fullmatch(text):
        raise ValueError(f"not an xsd:{local}")
    if local == "boolean" and text not in _BOOLEAN:
        raise ValueError("not an xsd:boolean (true, false, 1 or 0)")
    if local in ("dateTime", "date"):
        try:
            if local == "date":
                date.fromisoformat(text)
            elif "T" not in text:
                raise ValueError
            else:
                datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an xsd:{local}") from None
    return Literal(text, datatype=URIRef(datatype), normalize=False)


def _subject(fields: dict[str, str], mapping: CsvMapping) -> URIRef:
    def cell(match: re.Match) -> str:
        text = fields[match.group(1)].strip()
        if not text:
            raise ValueError(f"{match.group(1)}: blank, and the subject needs it")
        return quote(text, safe="-._~")

    return URIRef(_PLACEHOLDER.sub(cell, mapping.subject))


def _records(path: Path, delimiter: str) -> Iterator[tuple[int, list[str], str]]:
    """(first line, fields, text as read) of each CSV record, a quoted field's newlines kept."""
    lines: list[str] = []

    def feed(handle) -> Iterator[str]:
        for text in handle:
            lines.append(text)
            yield text

    with open_text(path, "CSV") as handle:
        reader = csv.reader(feed(handle), delimiter=delimiter)
        line = 1
        try:
            for row in reader:
                text = "".join(lines).rstrip("\r\n")
                lines.clear()
                yield line, row, text
                line = reader.line_num + 1
        except csv.Error as exc:
            raise InputError(f"{path}:{reader.line_num}: not CSV ({exc})") from None


def map_csv(
    path: str | Path, mapping: CsvMapping, stream: str
) -> tuple[list[Frame], MappingReport]:
    """Map one CSV file to the frames of ``stream`` in time order (see the module doc)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such CSV file")
    report = MappingReport(str(path))
    records = _records(path, mapping.delimiter)
    first = next(records, None)
    if first is None:
        raise InputError(f"{path}:1: empty; a CSV file starts with a header naming its columns")
    header = [name.strip() for name in first[1]]
    missing = [c for c in dict.fromkeys(mapping.columns) if c not in header]
    if missing:
        raise InputError(
            f"{path}:1: header lacks column(s) {', '.join(missing)} that the mapping reads "
            f"(the header has {', '.join(header)})"
        )

    def reject(line: int, reason: str, text: str) -> None:
        report.rejected.append(Rejection(str(path), line, f"{reason}; row skipped", 1, text))

    by_time: dict[datetime, list[tuple]] = {}
    seen: dict[tuple[URIRef, datetime], int] = {}
    for line, row, text in records:
        if not any(cell.strip() for cell in row):
            continue  # a blank line holds no row
        report.rows_read += 1
        if len(row) != len(header):
            reject(line, f"expected {len(header)} columns, found {len(row)}", text)
            continue
        fields = dict(zip(header, row))
        try:
            moment = parse_time(fields[mapping.time], mapping)
        except ValueError as exc:
            reject(line, f"{mapping.time}: bad time {fields[mapping.time]!r} ({exc})", text)
            continue
        problems, triples = [], []
        try:
            subject = _subject(fields, mapping)
        except ValueError as exc:
            problems.append(str(exc))
        for prop in mapping.properties:
            cell = fields[prop.column].strip()
            if not cell:
                continue  # a blank value cell states nothing (module doc)
            try:
                triples.append((URIRef(prop.predicate), _term(cell, prop)))
            except ValueError as exc:
                problems.append(f"{prop.column}: {exc}: {cell!r}")
        if problems:
            reject(line, "; ".join(problems), text)
            continue
        if (subject, moment) in seen:
            reject(
                line,
                f"duplicate of line {seen[subject, moment]} (same subject <{subject}> and time "
                f"{datetime_lexical(moment)})",
                text,
            )
            continue
        seen[subject, moment] = line
        report.rows_in_range += 1
        by_time.setdefault(moment, []).extend((subject, p, o) for p, o in triples)
    frames = [
        Frame(URIRef(f"{stream}/frame/{datetime_lexical(moment)}"), moment, triples)
        for moment, triples in sorted(by_time.items())
        if triples
    ]
    report.frames = len(frames)
    return frames, report


def write_csv_trig(
    path: str | Path, out_path: str | Path, *, stream: str, mapping: CsvMapping | None = None
) -> MappingReport:
    """``map_csv`` written as a TriG stream file (what a landing directory loads)."""
    if mapping is None:
        raise InputError(
            f"{path}: a CSV file needs a mapping: a [streams.<key>.mapping] table for <{stream}> "
            "in queries/streams.toml, or rsp ingest --mapping FILE"
        )
    frames, report = map_csv(path, mapping, stream)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_trig(URIRef(stream), frames, out_path)
    return report
