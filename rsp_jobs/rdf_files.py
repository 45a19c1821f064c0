"""Reading a user's RDF file (a background graph, a range catalogue) with rdflib, offline.

rdflib fetches a JSON-LD document's remote ``@context`` (and ``@import``) over HTTP; nothing
here may reach outside the machine while ingesting or evaluating, so such a file is refused
with the URL named. Contexts that are local files resolve as usual. RDF/XML's external entities
are not expanded (Python's SAX default) and Turtle, N3 and N-Triples have no way to fetch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlparse

from rdflib import Graph
from rdflib.util import guess_format

from rsp_jobs.errors import InputError
from rsp_jobs.textfile import read_text

__all__ = ["background_spec", "load_rdf_file", "parse_rdf_file"]

_LOADED: dict[tuple[str, float, int], Graph] = {}


def background_spec(spec: str) -> tuple[str | None, str]:
    """A ``--background`` value as (graph IRI or None, path): ``IRI=PATH`` names the FROM graph
    the file is for; a plain ``PATH`` (which may itself hold ``=``) is matched by its name."""
    iri, sep, path = spec.partition("=")
    if sep and ("://" in iri or iri.startswith("urn:")):
        return iri, path
    return None, spec


def parse_rdf_file(path: str | Path, what: str = "RDF") -> Graph:
    """The graph in ``path``, its format guessed from the name (Turtle when unknown); any
    problem is an InputError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {what} file not found")
    fmt = guess_format(str(path)) or "turtle"
    text = read_text(path, what)
    if fmt == "json-ld":
        _refuse_remote_contexts(text, path)
    try:
        return Graph().parse(data=text, format=fmt, publicID=path.resolve().as_uri())
    except Exception as exc:  # rdflib's parsers raise many kinds
        raise InputError(
            f"{path}: cannot parse as {fmt}: {' '.join(str(exc).split())[:300]}"
        ) from exc


def load_rdf_file(path: str | Path, what: str = "RDF") -> Graph:
    """``parse_rdf_file``, once per process and file version (path, modification time, size):
    the background, the quality ranges and the CityBench mapping all read the sensor repository
    (44k triples, about two seconds to parse), in the same DAG task. The graph is shared: read it,
    do not change it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {what} file not found")
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime, stat.st_size)
    if key not in _LOADED:
        _LOADED[key] = parse_rdf_file(path, what)
    return _LOADED[key]


def _refuse_remote_contexts(text: str, path: Path) -> None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not JSON: {exc.msg}") from None
    base = path.resolve().as_uri()
    for reference in _context_references(document):
        url = urljoin(base, reference)
        if urlparse(url).scheme != "file":
            raise InputError(
                f"{path}: the JSON-LD context {url} is not fetched (no network access while "
                "ingesting or evaluating); inline it, or save it beside the file and refer to that"
            )


def _context_references(node: Any) -> Iterator[str]:
    """Every context a JSON-LD document names by reference (``@context`` and ``@import``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("@context", "@import"):
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, str):
                        yield item
            yield from _context_references(value)
    elif isinstance(node, list):
        for item in node:
            yield from _context_references(item)
