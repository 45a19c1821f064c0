"""No network access while ingesting or evaluating (issue 15): a background file that would make
rdflib fetch something (a JSON-LD remote @context or @import, an RDF/XML external entity) is
refused or read offline, and a local socket that records connections proves none is attempted."""
from __future__ import annotations

import socket
import threading

import pytest

from rsp_jobs.errors import InputError
from rsp_jobs.rdf_files import parse_rdf_file
from rsp_jobs.spark.background import load_graph


@pytest.fixture
def listener():
    """A TCP server on 127.0.0.1 that records every connection made to it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    connections, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            connections.append(conn.recv(200))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", connections
    stop.set()
    thread.join()
    server.close()


def test_the_listener_records_a_connection(listener):
    url, connections = listener
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as client:
        client.sendall(b"ping")
    threading.Event().wait(0.5)
    assert connections == [b"ping"]  # so an empty record below means no attempt was made


@pytest.mark.parametrize("document", [
    '{{"@context": "{url}/context.jsonld", "@id": "http://ex.org/s", "name": "x"}}',
    '{{"@context": ["{url}/a.jsonld", {{"name": "http://ex.org/name"}}], "@id": "http://ex.org/s", "name": "x"}}',
    '{{"@context": {{"@import": "{url}/b.jsonld"}}, "@id": "http://ex.org/s"}}',
    '{{"@graph": [{{"@context": "{url}/nested.jsonld", "@id": "http://ex.org/s"}}]}}',
])
def test_a_remote_jsonld_context_is_refused_without_a_connection(tmp_path, listener, document):
    url, connections = listener
    path = tmp_path / "background.jsonld"
    path.write_text(document.format(url=url))
    with pytest.raises(InputError, match=rf"^{path}: the JSON-LD context {url}/\w+\.jsonld is not fetched"):
        load_graph(path)
    assert connections == []


def test_a_local_jsonld_context_is_read(tmp_path):
    (tmp_path / "context.jsonld").write_text('{"@context": {"name": "http://ex.org/name"}}')
    path = tmp_path / "background.jsonld"
    path.write_text('{"@context": "context.jsonld", "@id": "http://ex.org/s", "name": "x"}')
    assert [(str(s), str(p), str(o)) for s, p, o in parse_rdf_file(path)] == [
        ("http://ex.org/s", "http://ex.org/name", "x")]


def test_an_rdfxml_external_entity_is_not_fetched(tmp_path, listener):
    url, connections = listener
    path = tmp_path / "background.rdf"
    path.write_text(f'''<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [ <!ENTITY remote SYSTEM "{url}/entity.txt"> ]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://ex.org/">
  <rdf:Description rdf:about="http://ex.org/s"><ex:p>&remote;</ex:p></rdf:Description>
</rdf:RDF>
''')
    try:
        parse_rdf_file(path)
    except InputError:
        pass  # refused is fine too; fetched is not
    threading.Event().wait(0.3)
    assert connections == []
