"""Multi-query execution (``engine.evaluate_together``): queries of every form, window and
reporting mode over the same streams, evaluated together (one scan of each slice, one job for
their results), answer exactly what each evaluated alone does, over a whole stream and over a
run's interval. That each alone answers as rdflib does is checked in ``test_differential``."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rsp_jobs import compiler
from rsp_jobs.engine import Interval, evaluate, evaluate_together
from rsp_jobs.physical import planner
from rsp_jobs.physical.statistics import LakeStatistics
from tests.engine.test_differential import CASES, EX, PREFIXES, S1, S2, SETTINGS, background_file, run_engine, streams

__all__ = ["background_file"]  # the fixture, for pytest

FORMS = ["join", "aggregates", "order_limit", "construct", "ask", "describe", "subquery", "values",
         "background_join", "exists"]


def texts(window: str) -> list[str]:
    out = []
    for number, case in enumerate(FORMS):
        head, body, modifiers = CASES[case]
        stream_window = window if number % 2 else "[RANGE 3000ms STEP 1000ms]"
        out.append(f"REGISTER QUERY q{number} AS {PREFIXES}{head} FROM STREAM <{S1}> {stream_window} "
                   f"FROM <{EX}background.ttl> WHERE {body} {modifiers}")
    return out + [
        # a solution of no variable, one per match of a pattern of constants
        f"REGISTER QUERY constant AS {PREFIXES}SELECT * FROM STREAM <{S1}> {window} WHERE {{ ex:a0 ex:p0 ex:a1 }}",
        f"REGISTER ISTREAM changes AS {PREFIXES}SELECT ?x ?v FROM STREAM <{S1}> {window} WHERE {{ ?x ex:val ?v }}",
        # a count window reads back without bound: a slice of its own
        f"REGISTER QUERY last AS {PREFIXES}SELECT ?x ?v FROM STREAM <{S1}> [TRIPLES 3] WHERE {{ ?x ex:val ?v }}",
        # two streams: another slice
        f"REGISTER QUERY both AS {PREFIXES}SELECT ?x ?y FROM STREAM <{S1}> {window} FROM STREAM <{S2}> {window} "
        "WHERE { ?x ex:p0 ?y }",
    ]


@SETTINGS
@given(elements=streams(names=(S1, S2)), window=st.sampled_from(["[RANGE 2000ms STEP 500ms]",
                                                                 "[RANGE 1000ms TUMBLING]"]),
       cut=st.integers(1_000, 9_000))
def test_queries_evaluated_together_answer_as_each_alone(elements, window, cut, tmp_path_factory,
                                                        background_file, spark):
    lake = run_engine(tmp_path_factory.mktemp("together"), "", elements, lake_only=True)
    queries = [compiler.compile(t, f"q{i}") for i, t in enumerate(texts(window))]
    files = [[str(background_file)]] * len(queries)
    answered = 0
    # over a whole stream every query reads from its start; over an interval the count window does
    for interval, slices in ((Interval(), [len(queries) - 1, 1]),
                             (Interval(cut * 1000, (cut + 4_000) * 1000), [len(queries) - 2, 1, 1])):
        shared = planner.plan_together(queries, LakeStatistics(lake), interval.after, interval.until)
        assert [len(p.plans) for p in shared] == slices
        alone = [[w.to_json() for w in evaluate(q, lake, f, interval=interval)] for q, f in zip(queries, files)]
        together = evaluate_together(queries, lake, files, interval=interval)
        assert [[w.to_json() for w in q] for q in together] == alone
        answered += sum(map(bool, alone))
    assert answered, "no query answered: the test would prove nothing"
