"""``make bench``'s one page (``rsp_jobs.bench.summary``): a table row per measurement, the
ratios, and a plot, from the report's JSON alone (no Spark)."""
from __future__ import annotations

from rsp_jobs.bench import summary


def side(days, ratio, engine, hand, floor):
    return {"days": days, "range_over_step": ratio, "answers": 9292 * days, "engine_seconds": engine,
            "hand_written_seconds": hand, "typed_floor_seconds": floor,
            "engine_vs_hand_written": round(engine / hand, 2), "engine_vs_typed_floor": round(engine / floor, 2),
            "same_answers": True}


REPORT = {
    "workload": {"day": "2014-08-02", "days": 2, "triples": 364860, "ingest_seconds": 3.2,
                 "ingest_triples_per_second": 114019, "mapping_seconds": 5.1},
    "machine": {"cores": 2, "python": "3.11.7"},
    "queries": {"congestion_by_segment": {"windows": 288, "engine": {"seconds": 7.0, "seconds_per_window": 0.0243},
                                          "rdflib": {"seconds_per_window": 9.1}, "same_results": True,
                                          "engine_vs_rdflib_per_window": 374.5}},
    "micro_batches": {"minutes": 15, "batches": 8, "queries": {"congestion_by_segment": {
        "median_seconds": 1.71, "max_seconds": 2.3, "windows_per_batch": 3, "jobs_per_batch": 3,
        "stages_per_batch": 15, "py4j_calls_per_batch": 2704}}},
    "anchors": {"query": "congestion_by_segment",
                "by_days": [{**side(1, 12, 6.2, 1.1, 0.4),
                             "engine_profile": {"seconds": 6.2, "jobs": 3, "stages": 18, "py4j_calls": 8805,
                                                "plan_calls_seconds": 0.91, "other_seconds": 5.29}},
                            side(2, 12, 10.2, 1.2, 0.45)],
                "by_range_over_step": [side(1, 1, 4.0, 0.9, 0.3), side(1, 12, 6.2, 1.1, 0.4)],
                "growth_over_range_over_step": {"engine": 1.55, "hand_written": 1.22},
                "growth_over_days": {"from_days": 1, "to_days": 2, "engine": 1.65, "hand_written": 1.09}},
}


def test_the_page_has_every_measurement_and_the_plot(tmp_path):
    page = summary.write(REPORT, tmp_path / "results").read_text()
    assert "114,019 triples/s" in page and "| congestion_by_segment | 288 | 7.0 | 0.0243 | 9.1 | 374.5x | True |" in page
    assert "| 2 | 12 | 18584 | 10.2 | 1.2 | 0.45 | 8.5 | 22.67 | True |" in page
    assert ("The engine over 1 day(s): 6.2 s, 3 Spark jobs, 18 stages, 8,805 py4j calls: 0.91 s waiting on the "
            "short ones (building the plan) and 5.29 s the rest (Spark running its jobs, the results reaching "
            "Python).") in page
    assert "## A 15-minute micro-batch (from the lake to the results, 8 consecutive batches, Spark warm)" in page
    assert "| congestion_by_segment | 1.71 | 2.3 | 3 | 3 | 15 | 2,704 |" in page
    assert "From RANGE/STEP 1 to 12 the engine's time grows 1.55x, the hand-written job's 1.22x." in page
    assert "From 1 to 2 days (2x the data) the engine's time grows 1.65x, the hand-written job's 1.09x." in page
    assert "The engine over 2 day(s)" not in page  # no profile of that span in the report
    # 9.1 s per window against 6.2 / 288 and 1.1 / 288
    assert ("Per window over the first day, rdflib takes 9.1 s, the engine 0.0215 s (423x) and the hand-written "
            "job 0.0038 s (2383x)") in page
    plot = tmp_path / "results" / "evaluation.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 10_000


def test_the_growth_over_days_leaves_out_the_one_day_span_of_mostly_fixed_cost():
    from rsp_jobs.bench.__main__ import _growth_over_days

    growth = _growth_over_days([side(1, 12, 3.7, 1.7, 0.5), side(8, 12, 7.6, 4.7, 1.4), side(60, 12, 69.2, 30.9, 8.3)])
    assert growth == {"from_days": 8, "to_days": 60, "engine": 9.11, "hand_written": 6.57}
    assert _growth_over_days([side(1, 12, 3.7, 1.7, 0.5), side(8, 12, 7.6, 4.7, 1.4)])["from_days"] == 1
    assert _growth_over_days([side(1, 12, 3.7, 1.7, 0.5)])["engine"] is None
