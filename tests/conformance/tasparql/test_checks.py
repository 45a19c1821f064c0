"""Checks of TA-RDF and TA-SPARQL that are not a query and its answers (those are the cases of
``cases/*.toml``, run by ``test_suite.py``): Theorem 2's round trip through an export, and how
the text of a query reaches SQL."""
from __future__ import annotations

import pytest

from rsp_jobs.store.tardf import export_stream, import_stream
from rsp_jobs.store.tasparql import translate
from tests.conformance.tasparql.conftest import STREAMS


def stored(engine) -> list:
    from sqlalchemy import select

    from rsp_jobs.store.models import Frame, FrameTriple, InvariantTriple, Stream
    with engine.connect() as conn:
        frames = conn.execute(select(Stream.iri, Frame.ts, Frame.frame_iri, FrameTriple.s, FrameTriple.p, FrameTriple.o)
                              .join(Frame, Frame.stream_id == Stream.id)
                              .join(FrameTriple, FrameTriple.frame_id == Frame.id)).all()
        invariant = conn.execute(select(InvariantTriple.s, InvariantTriple.p, InvariantTriple.o)).all()
    return [sorted(map(tuple, frames)), sorted(map(tuple, invariant))]


@pytest.mark.parametrize("fmt", ["trig", "nquads"])
def test_export_then_import_gives_the_same_frames(fig1, tmp_path, request, fmt):
    """Theorem 2: the translation is reversible; for both forms an export writes."""
    from tests.store.conftest import empty_store_url
    from rsp_jobs.store import db
    with empty_store_url(request.node.callspec.params["store_url"], tmp_path, request, "again") as url:
        db.upgrade(url)
        again = db.engine(url)
        for i, stream in enumerate(STREAMS):
            path = tmp_path / f"s{i}.{'trig' if fmt == 'trig' else 'nq'}"
            export_stream(fig1, stream, path, fmt)
            import_stream(again, path)
        assert stored(again) == stored(fig1)


def test_hostile_text_in_the_new_syntax_reaches_sql_only_as_parameters():
    hostile = "x:');\\u0020DROP\\u0020TABLE\\u0020frames;--"
    statement, params = translate(f'SELECT ?v WHERE {{ <{hostile}>[LAST] <urn:p> ?v . '
                                  f'<urn:s> <urn:q> ?x[*] FILTER(contains(?v, "\\u0027 OR 1=1")) }}')
    sql = str(statement.compile())
    assert "DROP TABLE" not in sql and "OR 1=1" not in sql
    assert any("x:'); DROP TABLE frames;--" in str(v) for v in params.values())
