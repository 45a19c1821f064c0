"""``LakeStatistics`` of a slice of the lake, from its files, without Spark: ``rows``, what a
read of a span scans, from the Parquet footers (it chooses between Spark's interpreted and
generated code, ``session.batch_settings``); ``repeats``, whether it holds a triple twice;
``times``, its distinct times; ``terms``, its terms at a place; and ``vocabulary``, the
predicates and classes it names."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from rsp_jobs.ingest.lake import RDF_TYPE, VOCABULARY_KEY, Lake, Vocabulary, triple_hashes
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.physical.statistics import LakeStatistics

A, B = "http://ex.org/a", "http://ex.org/b"
T0 = datetime(2024, 1, 1, 10, 0, tzinfo=timezone.utc)
PINNED_HASH = 11816754589248570956  # triple_hashes of the first triple below, as written since 2026-12-03


def _batch(stream: str, minutes: list[int]) -> StreamBatch:
    batch = StreamBatch(stream=stream, source="generated")
    for m in minutes:
        ts = T0 + timedelta(minutes=m)
        batch.elements.append(Element(stream, ts, f"{stream}/f{m}", f"<{stream}/s{m}>", "<http://ex.org/p>",
                                      f'"{m}"', None, None))
    return batch


def test_rows_counts_the_hours_a_read_touches(tmp_path):
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    lake.write(_batch(A, [0, 10, 50, 70, 130]), batch_id="one")  # hours 10, 10, 10, 11, 12
    lake.write(_batch(A, [75]), batch_id="two")  # a second file in hour 11
    lake.write(_batch(B, [5, 6]), batch_id="one")
    assert stats.rows([A]) == 6 and stats.rows([B]) == 2 and stats.rows([A, B]) == 8
    assert stats.rows([A], T0 + timedelta(minutes=65), T0 + timedelta(minutes=80)) == 2  # hour 11 alone
    assert stats.rows([A], T0 + timedelta(minutes=65)) == 3  # hours 11 and 12
    assert stats.rows([A], None, T0 + timedelta(minutes=5)) == 3  # hour 10 whole: an upper bound
    assert stats.rows(["http://ex.org/none"]) == 0


def test_terms_are_the_distinct_subjects_or_objects_of_a_predicate_in_the_hours_a_read_touches(tmp_path):
    """``LakeStatistics.terms`` (the MIN and MAX ranks of ``optimize.rank_extrema``): every term at the
    place in the files of the read's streams and hours, each once, never one of another
    predicate, place or stream; a superset of the read's (an hour is read whole)."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    lake.write(_batch(A, [0, 10, 70, 130]), batch_id="one")  # hours 10, 10, 11, 12
    lake.write(_batch(A, [10, 75]), batch_id="two")  # "10" again, in a file of its own
    other = _batch(B, [5])
    other.elements = [replace(e, p="<http://ex.org/q>") for e in other.elements] + _batch(B, [6]).elements
    lake.write(other, batch_id="one")
    p, q = "<http://ex.org/p>", "<http://ex.org/q>"
    found = stats.terms([A], None, None, [("o", p), ("s", p), ("o", q)])
    assert sorted(found[("o", p)]) == sorted(f'"{m}"' for m in (0, 10, 70, 75, 130))
    assert sorted(found[("s", p)]) == sorted(f"<{A}/s{m}>" for m in (0, 10, 70, 75, 130))
    assert found[("o", q)] == []
    assert sorted(stats.terms([A, B], None, None, [("o", q), ("o", p)])[("o", p)]) == \
        sorted(f'"{m}"' for m in (0, 6, 10, 70, 75, 130))
    assert stats.terms([B], None, None, [("o", q)]) == {("o", q): ['"5"']}
    assert sorted(stats.terms([A], T0 + timedelta(minutes=65), T0 + timedelta(minutes=80), [("o", p)])[("o", p)]) == \
        ['"70"', '"75"']  # hour 11 alone
    assert sorted(stats.terms([A], None, T0 + timedelta(minutes=5), [("o", p)])[("o", p)]) == \
        ['"0"', '"10"']  # hour 10 whole
    assert stats.terms(["http://ex.org/none"], None, None, [("o", p)]) == {("o", p): []}


@pytest.mark.parametrize("told_by", ["terms", "hashes"])
def test_repeats_says_whether_the_hours_a_read_touches_hold_a_triple_twice(told_by, tmp_path):
    """``LakeStatistics.repeats`` (a small batch's ``windows.with_repeats``, without Spark), and
    ``repeats_by_hash`` (a large one's, from the files' triple hashes), alike: never no where
    a triple repeats; yes for a repeat anywhere in the hours read, though the read's own span
    may hold it once (a de-duplication is all that costs)."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    if told_by == "hashes":
        stats.repeats = stats.repeats_by_hash  # type: ignore[method-assign]
    lake.write(_batch(A, [0, 10, 70]), batch_id="one")  # hours 10, 10, 11: all different
    lake.write(_batch(B, [0]), batch_id="one")
    assert not stats.repeats([A]) and not stats.repeats([A, B]) and not stats.repeats(["http://ex.org/none"])
    again = _batch(A, [0])  # the 10:00 triple again at 11:15, in another file
    again.elements = [replace(e, ts=T0 + timedelta(minutes=75), frame=f"{A}/f75") for e in again.elements]
    lake.write(again, batch_id="two")
    assert stats.repeats([A]) and stats.repeats([A, B])
    assert not stats.repeats([A], T0 + timedelta(minutes=65))  # hour 11 alone holds it once
    assert not stats.repeats([A], None, T0 + timedelta(minutes=5))  # hour 10 alone
    assert stats.repeats([A], None, T0 + timedelta(minutes=65))  # hours 10 and 11 whole, though 11:15 is past the end


def test_triple_hashes_tell_triples_apart_by_every_term_and_its_place():
    """The lake's ``h``: the same triple, written by any process at any time, hashes alike (a
    repeat across files is found whoever wrote them: the first value is pinned, so a change of
    the hash function, which would split a lake's old files from its new ones, fails here);
    a term changed in its form or moved to another place hashes apart."""
    s, p, o = "<http://ex.org/s>", "<http://ex.org/p>", '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'
    triples = [(s, p, o), (s, p, o), (o, p, s), (s, o, p), (s, p, '"01"^^<http://www.w3.org/2001/XMLSchema#integer>'),
               (s, p, '"a"'), (s, p, '"a"@en'), ("_:b1", p, o)]
    hashes = [int(h) for h in triple_hashes(*map(list, zip(*triples)))]
    assert hashes[0] == PINNED_HASH
    assert hashes[0] == hashes[1] and len(set(hashes[1:])) == len(triples) - 1


def test_repeats_by_hash_leaves_files_without_hashes_to_spark(tmp_path):
    """A file written before the lake had ``h`` gives no answer (the engine asks Spark then);
    the same files with their hashes do."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    lake.write(_batch(A, [0, 10, 70]), batch_id="one")
    assert stats.repeats_by_hash([A]) is False and stats.repeats_by_hash(["http://ex.org/none"]) is False
    older = lake.parts([A])[-1]
    pq.write_table(pq.read_table(older).drop_columns(["h"]), older)
    assert stats.repeats_by_hash([A]) is None
    assert stats.repeats_by_hash([A], None, T0 + timedelta(minutes=15)) is False  # hour 10 has them


def test_times_are_the_distinct_times_a_read_returns(tmp_path):
    """``LakeStatistics.times`` (``windows.Spans.active_of``'s input): each time once however many frames
    and files hold it, only the read's streams, and exactly its span ``[start, end)``, not the
    whole hours the files cover."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    lake.write(_batch(A, [0, 10, 10, 50, 70, 130]), batch_id="one")  # two frames at 10:10
    lake.write(_batch(A, [10, 75]), batch_id="two")  # 10:10 again, in a file of its own
    lake.write(_batch(B, [5, 6]), batch_id="one")
    us = [int((T0 + timedelta(minutes=m)).timestamp() * 1_000_000) for m in range(0, 200)]
    assert sorted(stats.times([A])) == [us[m] for m in (0, 10, 50, 70, 75, 130)]
    assert sorted(stats.times([A, B])) == [us[m] for m in (0, 5, 6, 10, 50, 70, 75, 130)]
    assert sorted(stats.times([A], T0 + timedelta(minutes=10), T0 + timedelta(minutes=75))) == [us[m] for m in (10, 50, 70)]
    assert stats.times(["http://ex.org/none"]) == [] and stats.times([A], T0 + timedelta(hours=5)) == []


def test_vocabulary_names_the_predicates_and_classes_of_the_hours_a_read_touches(tmp_path):
    """``LakeStatistics.vocabulary``: a pattern naming a predicate, or rdf:type with a class, that the
    hours read do not hold matches only the background (``Evaluator._pattern``)."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    lake.write(_batch(A, [0, 70]), batch_id="one")  # <http://ex.org/p> at 10:00 and 11:10
    typed = _batch(A, [80])
    typed.elements = [replace(e, p=RDF_TYPE, o="<http://ex.org/Car>") for e in typed.elements]
    lake.write(typed, batch_id="two")  # 11:20: a Car
    everything = stats.vocabulary([A])
    assert everything == Vocabulary(frozenset({"<http://ex.org/p>", RDF_TYPE}), frozenset({"<http://ex.org/Car>"}))
    assert stats.vocabulary([A], None, T0 + timedelta(minutes=5)) == Vocabulary(frozenset({"<http://ex.org/p>"}),
                                                                              frozenset())
    assert stats.vocabulary([B]) == stats.vocabulary(["http://ex.org/none"]) == Vocabulary(frozenset(), frozenset())
    assert everything.may_match("<http://ex.org/p>", None) and everything.may_match(None, "<http://ex.org/Bus>")
    assert everything.may_match(RDF_TYPE, "<http://ex.org/Car>") and everything.may_match(RDF_TYPE, None)
    assert not everything.may_match(RDF_TYPE, "<http://ex.org/Bus>")
    assert not everything.may_match("<http://ex.org/q>", None)
    assert not stats.vocabulary([B]).may_match(None, None)  # nothing at all


def test_vocabulary_is_read_from_the_footers_and_from_the_rows_of_older_files(tmp_path):
    """A part file's footer names its batch's vocabulary; a file written before that (no such
    footer) is read for its ``p`` and ``o`` columns, with the same answer."""
    lake = Lake(tmp_path / "lake")
    stats = LakeStatistics(lake)
    typed = _batch(A, [0, 10])
    typed.elements[1] = replace(typed.elements[1], p=RDF_TYPE, o="<http://ex.org/Car>")
    lake.write(typed, batch_id="one")
    [part] = lake.parts([A])
    assert Vocabulary.from_json(pq.read_schema(part).metadata[VOCABULARY_KEY]) == stats.vocabulary([A])
    expected = Vocabulary(frozenset({"<http://ex.org/p>", RDF_TYPE}), frozenset({"<http://ex.org/Car>"}))
    assert stats.vocabulary([A]) == expected
    pq.write_table(pq.read_table(part).replace_schema_metadata(None), part)  # as an older lake wrote it
    assert VOCABULARY_KEY not in (pq.read_schema(part).metadata or {})
    assert stats.vocabulary([A]) == expected
