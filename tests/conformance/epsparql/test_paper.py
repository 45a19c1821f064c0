"""EP-SPARQL (Anicic, Fodor, Rudolph, Stojanovic, WWW 2011): the example queries (1)-(6) of
section 3.1 as printed, each over a stream built to exercise it, with the answer worked out by
hand from section 3.2's definitions and written beside the case; the engine and the brute-force
evaluator (``brute_force.py``) must both give it.

"As printed" is the query text copied from the paper; before it go only the PREFIX lines the
paper leaves out (its names are bare, `hasStockPrice`, read as `:hasStockPrice`, and its
durations say `xsd:duration`). Its queries have no FROM STREAM: they read the stream given.
Times are days.
"""
from __future__ import annotations

import pytest

from rsp_jobs import compiler
from rsp_jobs.errors import QuerySyntaxError
from tests.conformance.epsparql.support import EX, PREFIXES, rows, run, stream

C1, C2, C3 = EX + "C1", EX + "C2", EX + "C3"
PRICE = ":hasStockPrice"

EXAMPLE_1 = """SELECT ?company WHERE { ?company hasStockPrice ?price1 } SEQ { ?company hasStockPrice ?price2 } SEQ { ?company hasStockPrice ?price3 } FILTER ( ?price2 < ?price1 * 0.7 && ?price3 > ?price1 * 1.05 && getDURATION() < "P30D"^^xsd:duration)"""

EXAMPLE_2 = """SELECT ?company ?ratingagency WHERE { ?company downratedby ?ratingagency} OPTIONALSEQ { { ?company hasStockPrice ?price1 } SEQ { ?company hasStockPrice ?price2 }} FILTER (?price2 < ?price1 * 0.5)"""

EXAMPLE_3 = """SELECT ?company WHERE { ?company hasStockprice ?price1 } SEQ { { ?company hasAcquired ?othercompany } OPTIONALSEQ { ?company hasStockPrice ?price2 } } FILTER ( ?price2 < ?price1 * 1.5 && !BOUND(?othercompany) && getDURATION() < "P15D"^^xsd:duration )"""

EXAMPLE_4 = """CONSTRUCT ?company downratedby ?ratingagency WHERE { ?rating1 rater ?ratingagency ; rated ?company ; score ?score1 } SEQ { ?rating2 rater ?ratingagency ; rated ?company ; score ?score2 } FILTER ( ?score2 < ?score1 )"""

# The text extraction moved "?sum ." out of the template (it stands alone further down the
# page); put back, the template is `_:aaa :hasCount ?count . _:aaa :hasSum ?sum .`.
EXAMPLE_5_AS_EXTRACTED = """CONSTRUCT _:aaa :hasCount ?count . _:aaa :hasSum { SELECT ?count AS ?prevcount + 1 ?sum AS ?prevsum + ?price WHERE {{ ?point :hasCount ?prevcount . ?point :hasSum ?prevsum . } SEQ { :ACME :hasStockPrice ?price . }} EQUALSOPTIONAL {{ ?point :hasCount ?prevcount . ?point :hasSum ?prevsum . } SEQ { :ACME :hasStockPrice ?inbetween . } SEQ { :ACME :hasStockPrice ?price . }} FILTER ( !BOUND(?inbetween) && getDURATION() < "P10D"^^xsd:duration )}"""
EXAMPLE_5 = EXAMPLE_5_AS_EXTRACTED.replace(":hasSum { SELECT", ":hasSum ?sum . { SELECT")

EXAMPLE_6 = """SELECT ?sum / ?count AS ?average WHERE {{ :ACME :hasStockPrice ?price . } SEQ { ?point :hasCount ?prevcount . ?point :hasSum ?prevsum . }} EQUALSOPTIONAL {{ :ACME :hasStockPrice ?price . } SEQ { :ACME :hasStockPrice ?inbetween . } SEQ { ?point :hasCount ?prevcount . ?point :hasSum ?prevsum . }} FILTER ( !BOUND(?inbetween) && getDURATION() > "P10D"^^xsd:duration )"""


def test_example_1_a_fall_then_a_rise_within_30_days(spark):
    """(1): a price, a later one below 70 % of it, a later one above 105 %, within 30 days.
    C1: 100 (day 0), 60 (3), 110 (5) → one solution over [0, 5]; its 110 on day 40 is 40 days
    after the 100. C2 falls only to 80. SEQ is strict (tω < t'α): C3's 60 has the time of its
    100, so it does not follow it."""
    events = stream((0, ":C1", PRICE, 100), (3, ":C1", PRICE, 60), (5, ":C1", PRICE, 110), (40, ":C1", PRICE, 110),
                    (1, ":C2", PRICE, 100), (2, ":C2", PRICE, 80), (4, ":C2", PRICE, 120),
                    (6, ":C3", PRICE, 100), (6, ":C3", PRICE, 60), (8, ":C3", PRICE, 110))
    assert rows(run(spark, EXAMPLE_1, events), "company") == [(0, 5, C1)]


def test_example_2_the_optional_downrating_comes_first(spark):
    """(2): OPTIONALSEQ is SeqRightJoin (3.2): the left part (a downrating) is optional and must
    end before the right part (a price more than halving) starts. C1 was downrated by Moody on
    day 1 and halved over [2, 4]: one solution over [1, 4] naming Moody. C2 halved over [2, 5]
    and was never downrated: it stands alone. C3's downrating (day 3) comes inside its fall
    [2, 4], not before it: C3 stands alone too, without an agency."""
    events = stream((1, ":C1", ":downratedby", ":Moody"), (2, ":C1", PRICE, 100), (4, ":C1", PRICE, 40),
                    (2, ":C2", PRICE, 100), (5, ":C2", PRICE, 30),
                    (3, ":C3", ":downratedby", ":Fitch"), (2, ":C3", PRICE, 100), (4, ":C3", PRICE, 40))
    assert rows(run(spark, EXAMPLE_2, events), "company", "ratingagency") == [
        (1, 4, C1, EX + "Moody"), (2, 4, C3, None), (2, 5, C2, None)]


def test_example_3_a_rise_without_an_acquisition_before_it(spark):
    """(3) as printed writes `hasStockprice` (small p) for the first price and `hasStockPrice`
    for the second: as printed it only matches a stream that uses both names, and over one
    that says hasStockPrice it finds nothing. Repaired (one name), by 3.2: the inner
    `{acquired} OPTIONALSEQ {price2}` keeps price2 alone only if no acquisition by the company
    ended before it, whenever that was. C1 (100 on day 0, 120 on day 5, no acquisition): one
    solution over [0, 5]. C2 acquired T2 on day 2, before its 120 (day 4): ?othercompany is
    bound, so !BOUND drops it. C3 acquired T3 on day -10, before its prices: its price2 joins
    that acquisition, the inner solution starts at day -10, and a price1 on day 0 does not
    come before it: no solution."""
    events = stream((0, ":C1", PRICE, 100), (5, ":C1", PRICE, 120),
                    (0, ":C2", PRICE, 100), (2, ":C2", ":hasAcquired", ":T2"), (4, ":C2", PRICE, 120),
                    (-10, ":C3", ":hasAcquired", ":T3"), (0, ":C3", PRICE, 100), (4, ":C3", PRICE, 120))
    assert run(spark, EXAMPLE_3, events) == []
    misspelt = events + stream((0, ":C1", ":hasStockprice", 100))
    assert rows(run(spark, EXAMPLE_3, misspelt), "company") == [(0, 5, C1)]
    repaired = EXAMPLE_3.replace("hasStockprice", "hasStockPrice")
    assert rows(run(spark, repaired, events), "company") == [(0, 5, C1)]


RATINGS = ((0, ":r1", ":rater", ":Moody"), (0, ":r1", ":rated", ":C1"), (0, ":r1", ":score", 5),
           (1, ":r2", ":rater", ":Moody"), (1, ":r2", ":rated", ":C1"), (1, ":r2", ":score", 3),
           (2, ":r3", ":rater", ":Fitch"), (2, ":r3", ":rated", ":C1"), (2, ":r3", ":score", 4),
           (3, ":r4", ":rater", ":Moody"), (3, ":r4", ":rated", ":C1"), (3, ":r4", ":score", 6))


def test_example_4_a_construct_rule_without_template_braces(spark):
    """(4): two ratings of one company by one agency, the later score lower, make a
    `downratedby` event over both ratings' interval. Moody rated C1 5 (day 0) then 3 (day 1):
    one event over [0, 1]. Fitch's 4 has no partner; Moody's 6 on day 3 is higher than both."""
    matches = run(spark, EXAMPLE_4, stream(*RATINGS))
    assert rows(matches) == [(0, 1)]
    assert matches[0]["triples"] == [f"<{C1}> <{EX}downratedby> <{EX}Moody> ."]


def test_example_4_feeds_example_2(spark):
    """3.2's Q-closure: (2) reads the stream with (4)'s events added. C1's downrating derived over
    [0, 1] ends before its fall [2, 4] starts: one solution over [0, 4] naming Moody; and the
    solution's events are the rating frames behind the derived event and the price frames."""
    events = stream(*RATINGS, (2, ":C1", PRICE, 100), (4, ":C1", PRICE, 40))
    matches = run(spark, EXAMPLE_2, events, rules=(EXAMPLE_4,))
    assert rows(matches, "company", "ratingagency") == [(0, 4, C1, EX + "Moody")]
    assert matches[0]["events"] == [f"{EX}frame/{d}" for d in (0, 1, 2, 4)]


POINTS = ((0, ":p0", ":hasCount", 0), (0, ":p0", ":hasSum", 0),
          (-20, ":ACME", PRICE, 5), (1, ":ACME", PRICE, 10), (3, ":ACME", PRICE, 20), (6, ":ACME", PRICE, 30),
          (12, ":ACME", PRICE, 40))


def _values(match: dict) -> dict[str, float]:
    return {line.split(" ")[1][len(EX) + 1:-1]: float(line.split('"')[1]) for line in match["triples"]}


def test_example_5_accumulates_count_and_sum_to_a_fixpoint(spark):
    """(5), its template put back together: from a point (count, sum) and the next price (no
    price in between: the EQUALSOPTIONAL branch and !BOUND), a new point over [point's start,
    price], while that lasts under 10 days. Seeded with p0 = (0, 0) on day 0 and ACME prices
    10, 20, 30, 40 on days 1, 3, 6, 12: points (1, 10) over [0, 1], (2, 30) over [0, 3],
    (3, 60) over [0, 6]; the 40 on day 12 is 12 days from the start. Each point feeds the next:
    the closure needs four rounds, not a fixed number. The price on day -20 precedes the seed."""
    as_extracted = PREFIXES + EXAMPLE_5_AS_EXTRACTED
    with pytest.raises(QuerySyntaxError):
        compiler.compile(as_extracted, "example5.rsp")
    once = run(spark, EXAMPLE_5, stream(*POINTS))  # over the stream alone: only the seed's successor
    assert rows(once) == [(0, 1)]
    matches = run(spark, EXAMPLE_5, stream(*POINTS), rules=(EXAMPLE_5,))  # over its own closure
    assert rows(matches) == [(0, 1), (0, 3), (0, 6)]
    assert [_values(m) for m in matches] == [{"hasCount": 1, "hasSum": 10}, {"hasCount": 2, "hasSum": 30},
                                             {"hasCount": 3, "hasSum": 60}]


def test_example_6_reads_the_points_of_example_5(spark):
    """(6) over the closure under (5). Its pattern is a price before a point, with no price in
    between, lasting over 10 days: only the price of day -20 comes before the points (all start
    on day 0), so the seed and the three points each give a solution, over [-20, 0], [-20, 1],
    [-20, 3], [-20, 6]. As printed it divides ?sum by ?count, which its WHERE clause never binds
    (it names them ?prevsum and ?prevcount): an error, so ?average is unbound in every row.
    Repaired to ?prevsum / ?prevcount: the seed's 0 / 0 is an error (unbound), then 10 / 1,
    30 / 2 and 60 / 3."""
    events = stream(*POINTS)
    printed = run(spark, EXAMPLE_6, events, rules=(EXAMPLE_5,))
    assert rows(printed, "average") == [(-20, 0, None), (-20, 1, None), (-20, 3, None), (-20, 6, None)]
    repaired = EXAMPLE_6.replace("?sum / ?count AS", "?prevsum / ?prevcount AS")
    averages = rows(run(spark, repaired, events, rules=(EXAMPLE_5,)), "average")
    assert [(a, b, None if v is None else float(v)) for a, b, v in averages] == [
        (-20, 0, None), (-20, 1, 10.0), (-20, 3, 15.0), (-20, 6, 20.0)]


def test_the_rejected_seqoptional_and_timewise_monotonicity(spark):
    """3.2's counter-example: SEQOPTIONAL (a mandatory pattern then an optional one) would give
    ⟨{x ↦ a}, 0, 0⟩ over {⟨a,a,a⟩ at 0} and withdraw it once ⟨b,b,b⟩ comes at 1. It is not an
    operator; the paper's OPTIONALSEQ (the optional part first) keeps its answers: over the
    longer stream {x ↦ a} alone stays, and {x ↦ b} comes with y ↦ a."""
    with pytest.raises(QuerySyntaxError):
        compiler.compile(PREFIXES + "SELECT ?x ?y WHERE { ?x ?x ?x . } SEQOPTIONAL { ?y ?y ?y . }", "q.rsp")
    query = "SELECT ?x ?y WHERE { ?y ?y ?y . } OPTIONALSEQ { ?x ?x ?x . }"
    short = rows(run(spark, query, stream((0, ":a", ":a", ":a"))), "x", "y")
    longer = rows(run(spark, query, stream((0, ":a", ":a", ":a"), (1, ":b", ":b", ":b"))), "x", "y")
    assert short == [(0, 0, EX + "a", None)]
    assert longer == [(0, 0, EX + "a", None), (0, 1, EX + "b", EX + "a")]
