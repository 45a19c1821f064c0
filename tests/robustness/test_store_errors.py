"""An unreachable store, or one without a schema, is one ``rsp: error:`` line naming the store
with its password hidden: no traceback, no secret on the screen (issue 15, "Clean up and tell")."""
from __future__ import annotations

import socket

from rsp_jobs.cli import main

QUERY = "SELECT ?v WHERE { ?x[LAST] <urn:p> ?v }"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_store_is_one_line_without_the_password(capsys):
    url = f"postgresql+psycopg://reader:s3cret-pw@127.0.0.1:{free_port()}/test"
    assert main(["query", QUERY, "--store", url]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("rsp: error: cannot use the store postgresql+psycopg://reader:***@127.0.0.1:")
    assert "Connection refused" in err and "s3cret-pw" not in err and "Traceback" not in err


def test_a_store_without_a_schema_says_how_to_create_it(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    assert main(["query", QUERY, "--store", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"rsp: error: the store {url} has no schema yet (no such table: ")
    assert err.rstrip().endswith("run `rsp store upgrade --url URL`")
