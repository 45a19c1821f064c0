"""Time-invariant statements into the store (TA-RDF §4, r[Nil]; restriction 1), each once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from sqlalchemy import Connection, select

from rsp_jobs.ingest.tardf import TimeInvariant
from rsp_jobs.store.frames import INSERT_ON_CONFLICT, stored_number
from rsp_jobs.store.models import InvariantTriple, table_of


def statement_checksum(s: str, p: str, o: str) -> str:
    """sha256 hex of the statement's N-Triples line: its identity in ``invariant_triples``."""
    return hashlib.sha256(f"{s} {p} {o} .\n".encode()).hexdigest()


def write_invariants(conn: Connection, source: str, statements: Iterable[TimeInvariant]) -> int:
    """Store the statements not stored yet (whoever stated them first keeps the source);
    returns how many were new."""
    rows = {statement_checksum(st.s, st.p, st.o): st for st in statements}
    if not rows:
        return 0
    table = table_of(InvariantTriple)
    known = set()
    checksums = list(rows)
    for i in range(0, len(checksums), 1000):
        chunk = checksums[i : i + 1000]
        known |= set(
            conn.execute(select(table.c.checksum).where(table.c.checksum.in_(chunk))).scalars()
        )
    new = [
        {
            "s": st.s,
            "p": st.p,
            "o": st.o,
            "o_num": stored_number(st.o_num),
            "o_time": st.o_time,
            "checksum": key,
            "source": source,
            "line": st.line,
        }
        for key, st in rows.items()
        if key not in known
    ]
    if new:
        conn.execute(
            INSERT_ON_CONFLICT[conn.dialect.name](table).on_conflict_do_nothing(
                index_elements=[table.c.checksum]
            ),
            new,
        )
    return len(new)


def invariants_about(conn: Connection, nt: str) -> list[tuple[str, str, str]]:
    """The stored time-invariant statements with ``nt`` as subject or object, sorted."""
    table = table_of(InvariantTriple)
    rows = conn.execute(
        select(table.c.s, table.c.p, table.c.o).where((table.c.s == nt) | (table.c.o == nt))
    )
    return sorted(tuple(row) for row in rows)
