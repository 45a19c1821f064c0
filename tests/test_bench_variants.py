"""The multi-query bench's generated queries: a hundred distinct, valid C-SPARQL queries over the
traffic stream, of every family, the same for the same count."""
from __future__ import annotations

from collections import Counter

from rsp_jobs.bench import variants, window_query
from rsp_jobs.bench.workload import TRAFFIC

SENSORS = [f"http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData{n}" for n in range(33)]


def test_a_hundred_variants_compile_and_mix_their_families():
    texts = variants.variants(100, SENSORS)
    queries = [window_query(t, f"variant {i}") for i, t in enumerate(texts)]
    assert len({q.name for q in queries}) == 100
    assert all([w.stream for w in q.windows] == [TRAFFIC] for q in queries)
    assert Counter(q.form for q in queries).keys() == {"SELECT", "CONSTRUCT", "ASK"}
    assert len({str(q.windows[0].window) for q in queries}) == len(variants.WINDOWS)
    assert sum("VALUES ?sensor" in t for t in texts) == 14  # 33 sensors five at a time, two windows each
    assert {q.form for q in queries[:5]} == {"SELECT", "CONSTRUCT", "ASK"}  # the families take turns
    assert variants.variants(100, SENSORS) == texts


def test_more_variants_than_the_families_hold_is_an_error():
    import pytest

    with pytest.raises(ValueError, match="only"):
        variants.variants(10_000, SENSORS)
