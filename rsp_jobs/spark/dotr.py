"""Evaluate a DOTR rule over stream elements: per-instant SPARQL facts, combined in time.

DOTR (Margara, Cugola, Collavini, Dell'Aglio, ESWC 2018) decouples the two kinds of reasoning
(section 3, Fig. 2): ontological reasoning and event extraction happen per time instant, over
that instant's graph plus the background, and a TESLA-like engine then reasons on the
extracted events in time. Here:

1. *Facts.* Each event's SELECT is run by the ordinary ``Evaluator`` with one "window" per
   instant (``_win = _open = ts``), after per-frame RDFS entailment if the rule asks for it
   and the rule's Datalog rules closed per instant (``spark/datalog.py``). Each solution is a
   fact ``(label, ts, bindings)`` (DOTR §4: "For each query RDFox generates zero, one, or more
   facts of interests"; §3: each solution mapping "to a logic predicate that is true at time
   t"): solutions are a bag, so two equal solutions of one instant are two facts, merged only
   by the query's own DISTINCT. A fact is keyed ``label@ts#sha1(bindings)[:12]``, and the
   n-th further copy of an equal solution ``...#sha1[:12].n``: the copies of an instant are
   interchangeable, so which one is the n-th does not matter, and a batch reads an instant
   whole, so every batch keys it alike (consumption records stay valid across batches, and a
   fact that has no equal keeps the key it had before copies were told apart).
2. *Candidates (Spark).* For each trigger fact ``A`` at ``tA`` in ``(after, until]``, each
   positive event ``B ... within d from R`` joins the facts of ``B`` with
   ``tR - d <= tB < tR`` (TESLA's *within*: B occurs at most d before R, and before it; a
   fact at the same instant as R does not count) that satisfy every ``with`` condition whose
   events are bound by then. ``not C`` and aggregates are evaluated per full candidate.
3. *Selection and consumption (driver).* Trigger facts are processed in time order (ties by
   key); per prefix of the match, ``last`` keeps the latest candidate (ties: smallest key),
   ``first`` the earliest (ties: smallest key), ``each`` all. A candidate consumed by an
   earlier match (or an earlier batch: ``consumed``) is not usable; the facts a match uses of
   the ``consuming`` events become consumed once its trigger has been processed. Selection
   happens before negation and aggregate conditions are checked (T-Rex's order: the selected
   sequence is then tested). A ``not`` or aggregate scope is ``within d from R`` or ``between
   X and Y`` (``language.dotr.Between``).

Each match instantiates the ``define`` template, with a fresh IRI per match for its blank
nodes and unassigned variables, and is timestamped with its trigger's time.

Several rules are evaluated together as a ``RuleSetPlan`` (``evaluate_rules``): one Spark job
computes the facts of all of them (each group of rules with alike instants in one pass, an
event SELECT several rules share evaluated once, SELECTs that differ in an IRI evaluated as
one), one collect their candidates (alike rules joined by one plan; each event side joined is
broadcast, a small job of its own over the computed facts), and the driver selects and
consumes per rule, since a rule's consumption concerns "subsequent evaluations of
the same rule" only (DOTR §3). A rule alone is a set of one. What a batch does (its read,
each group's regime, the events, each set's levels of candidates, negations, aggregates and
selections) is its physical plan's (``physical.dotr.RulesPlan``, ``rsp explain --physical``),
which ``execute_rules`` executes.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rsp_jobs import terms
from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
from rsp_jobs.compiler import compile_rule_set
from rsp_jobs.language import ast
from rsp_jobs.language.dotr import SEP, Between, Within, expr_vars, split_qualified
from rsp_jobs.physical.dotr import Candidates, Instants, RulesPlan, plan_rules
from rsp_jobs.results import RuleMatch
from rsp_jobs.spark import aggregates
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.datalog import reason_per_instant
from rsp_jobs.spark.entailment import entail
from rsp_jobs.spark.evaluate import Evaluator
from rsp_jobs.spark.expressions import Scope, Value, compile_expr
from rsp_jobs.spark.local import materialized, release
from rsp_jobs.spark.r2r import WIN, vcol
from rsp_jobs.spark.session import NO_SIZE_BROADCASTS, settings_while

if TYPE_CHECKING:
    from rsp_jobs.reasoning.entailment import Schema

__all__ = ["evaluate_rule", "evaluate_rules", "execute_rules", "fact_key", "facts_frame"]


def fact_key(label: str, ts_us: int, bindings: dict[str, str], copy: int = 0) -> str:
    """The key ``facts_frame`` computes in Spark, for callers and tests: ``copy`` counts the
    equal solutions of the instant before this one."""
    text = "\n".join(f"{name}={value}" for name, value in sorted(bindings.items()))
    return f"{label}@{ts_us}#{hashlib.sha1(text.encode()).hexdigest()[:12]}" + (
        f".{copy}" if copy else ""
    )


def facts_frame(
    rules: RuleSetPlan,
    plan: Instants,
    elements: DataFrame,
    background: Background,
    lo_us: int | None = None,
    hi_us: int | None = None,
) -> DataFrame:
    """Every event's solutions per instant in ``[lo, hi]`` for one group of a rule set (rules
    alike in ``instants_key``: one pass over their instants, ``physical.dotr.Instants``):
    ``rule`` (its index in ``rules``), ``label, ts, b`` (variable → N-Triples term, bound ones
    only), ``key`` and ``frames`` (the instant's frame IRIs), under the plan's regime."""
    group = plan.group
    rule = rules.rules[group.rules[0]]  # the group's rules agree on all this reads
    if rule.streams:  # a rule without FROM STREAM reads the elements it is given
        elements = elements.where(F.col("stream").isin(list(rule.streams)))
    schema: Schema | None = None
    if plan.regime != "simple":
        background, schema = background.closed(plan.regime)
        elements = entail(elements, schema)
    rows = elements.select(F.unix_micros("ts").alias("ts"), "frame", "s", "p", "o")
    if lo_us is not None:
        rows = rows.where(F.col("ts") >= lo_us)
    if hi_us is not None:
        rows = rows.where(F.col("ts") <= hi_us)
    frames = rows.groupBy("ts").agg(F.array_sort(F.collect_set("frame")).alias("frames"))
    if rule.program:
        rows, background = reason_per_instant(rows, rule.program, background, schema)
    # Not cached: every event's plan reads ``instants`` through the same shuffle, which Spark
    # computes once per job (exchange reuse).
    instants = rows.select(
        F.col("ts").alias(WIN),
        F.col("ts").alias("_open"),
        F.lit(None).cast("string").alias("g"),
        "s",
        "p",
        "o",
        "ts",
    ).dropDuplicates([WIN, "s", "p", "o"])
    active = instants.groupBy(WIN).agg(F.min("_open").alias("_open"))
    parts = []
    for event in plan.events:  # optimize.share_event_queries, share_events_across_rules
        query = event.query
        evaluator = Evaluator(query, instants, active, background)
        solutions = evaluator.to_dep(evaluator.evaluate(query.plan))
        # a split event's variable says which events a solution is for, and is not a binding
        names = sorted(v.name for v in query.variables if v.name != event.split)
        split = [F.col(vcol(event.split)).alias("_iri")] if event.split else []
        entries = (
            F.filter(
                F.array(*[F.struct(F.lit(n).alias("k"), F.col(vcol(n)).alias("v")) for n in names]),
                lambda e: e["v"].isNotNull(),
            )
            if names
            else F.array().cast("array<struct<k:string,v:string>>")
        )
        text = (
            F.concat_ws(
                "\n",
                *[
                    F.when(F.col(vcol(n)).isNotNull(), F.concat(F.lit(n + "="), F.col(vcol(n))))
                    for n in names
                ],
            )
            if names
            else F.lit("")
        )
        digest = solutions.select(
            F.col(WIN).alias("ts"),
            *split,
            F.map_from_entries(entries).alias("b"),
            F.substring(F.sha1(text), 1, 12).alias("_digest"),
        )
        # one fact per solution: equal ones are counted, then numbered (see the module doc)
        by = ["ts", *(["_iri"] if split else []), "_digest"]
        digest = (
            digest.groupBy(*by)
            .agg(F.first("b").alias("b"), F.count(F.lit(1)).alias("_n"))
            .select(*by, "b", F.explode(F.sequence(F.lit(0), F.col("_n") - 1)).alias("_copy"))
        )
        parts.append(
            digest.select(_uses(event), "ts", "b", "_digest", "_copy").select(
                "_use.rule", "_use.label", "ts", "b", "_digest", "_copy"
            )
        )
    facts = functools.reduce(DataFrame.unionByName, parts)
    key = F.concat(
        F.col("label"),
        F.lit("@"),
        F.col("ts").cast("string"),
        F.lit("#"),
        F.col("_digest"),
        F.when(F.col("_copy") > 0, F.concat(F.lit("."), F.col("_copy").cast("string"))).otherwise(
            F.lit("")
        ),
    )
    return facts.select("rule", "label", "ts", "b", key.alias("key")).join(frames, "ts")


def _uses(event) -> Column:
    """The solutions of an evaluation are labelled once per rule and event that shares it; a
    split event's, once per rule and event that asked for the IRI in their ``_iri``."""

    def use(i: int, label: str) -> Column:
        return F.struct(F.lit(i).alias("rule"), F.lit(label).alias("label"))

    if not event.split:
        return F.explode(F.array(*[use(i, label) for i, label in event.uses])).alias("_use")
    wanted: dict[str, list[Column]] = {}
    for (i, label), iri in zip(event.uses, event.iris):
        wanted.setdefault(iri, []).append(use(i, label))
    table = F.create_map(*[c for iri, uses in wanted.items() for c in (F.lit(iri), F.array(*uses))])
    return F.explode(table[F.col("_iri")]).alias("_use")


def evaluate_rule(
    rule: RulePlan,
    elements: DataFrame,
    background: Background,
    after_us: int | None = None,
    until_us: int | None = None,
    consumed: frozenset[str] = frozenset(),
    entailment: str = "simple",
) -> tuple[list[RuleMatch], set[str]]:
    """The matches whose time lies in ``(after_us, until_us]``, sorted by time then triples,
    and the fact keys they newly consumed. ``elements`` must cover
    ``[after_us - rule.bound_us, until_us]``; ``consumed`` holds earlier batches' keys;
    ``entailment``: the run's regime (see ``facts_frame``). A rule alone is a set of one,
    optimized as a set (``optimize.SET_RULES``: its events may share an evaluation)."""
    return evaluate_rules(
        compile_rule_set([rule]), elements, [background], after_us, until_us, [consumed], entailment
    )[0]


def evaluate_rules(
    rules: RuleSetPlan,
    elements: DataFrame,
    backgrounds: Sequence[Background],
    after_us: int | None = None,
    until_us: int | None = None,
    consumed: Sequence[frozenset[str]] = (),
    entailment: str = "simple",
) -> list[tuple[list[RuleMatch], set[str]]]:
    """``evaluate_rule`` for each rule of a set: its physical plan (``physical.dotr.plan_rules``)
    executed over the ``elements`` given (``execute_rules``). ``backgrounds`` and ``consumed``
    are per rule; ``elements`` must cover the longest ``bound_us`` back."""
    return execute_rules(
        plan_rules(rules, None, after_us, until_us, entailment), elements, backgrounds, consumed
    )


def execute_rules(
    physical: RulesPlan,
    elements: DataFrame,
    backgrounds: Sequence[Background],
    consumed: Sequence[frozenset[str]] = (),
) -> list[tuple[list[RuleMatch], set[str]]]:
    """Run ``physical``: one Spark job computes the facts of every group of instants, one
    collect the candidates of every set of alike rules (beside a small broadcast job per event
    side joined), and the driver selects and consumes per rule."""
    rules, after_us, until_us = physical.rules, physical.after, physical.until
    consumed = list(consumed) or [frozenset()] * len(rules.rules)
    facts = functools.reduce(
        DataFrame.unionByName,
        [
            facts_frame(
                rules,
                instants,
                elements,
                backgrounds[instants.group.rules[0]],
                physical.start,
                until_us,
            )
            for instants in physical.instants
        ],
    )
    # One job: joins of per-instant solutions shuffle rather than broadcast, since every
    # broadcast of a computed side is a job of its own that computes the instants again (23
    # jobs for DOTR's benchmark rules). The background's explicit broadcasts stay.
    with settings_while(facts.sparkSession, NO_SIZE_BROADCASTS):
        facts = materialized(facts)
    try:
        cache: dict = {}  # see _value
        finals, orders = [], {}
        for cands in physical.candidates:  # the first rule stands for its alike ones
            final = _candidates(
                rules.rules[cands.rules[0]],
                cands,
                facts.where(F.col("rule").isin(list(cands.rules))),
                after_us,
                until_us,
                cache,
            )
            finals.append(final)
            orders.update(dict.fromkeys(cands.rules, cands.order))
        rows: list[list[dict]] = [[] for _ in rules.rules]
        for r in _collect_all(finals):
            rows[r["rule"]].append(json.loads(r["row"]))
        return [
            _select(rule, orders[i], rows[i], frozenset(done))
            for i, (rule, done) in enumerate(zip(rules.rules, consumed))
        ]
    finally:
        release(facts)


def _collect_all(frames: list[DataFrame]) -> list:
    """The rows of frames of different shapes in one job: each row's ``rule`` and the rest as
    JSON text, nulls kept (``_select`` reads a missing key as a prefix with no extension)."""
    rows = [
        frame.select(
            "rule",
            F.to_json(
                F.struct(*[c for c in frame.columns if c != "rule"]), {"ignoreNullFields": "false"}
            ).alias("row"),
        )
        for frame in frames
    ]
    return functools.reduce(DataFrame.unionByName, rows).collect()


# ---------------------------------------------------------------------------- candidates


def _c(label: str, what: str) -> str:
    return f"{label}__{what}"


def _side(rule: RulePlan, facts: DataFrame, label: str, cache: dict) -> DataFrame:
    """The facts of ``label`` that satisfy the conditions mentioning ``label`` alone (pushed
    below the joins: fewer candidates and small generated code per condition)."""
    side = facts.where(F.col("label") == label).select(
        F.col("rule").alias(_c(label, "rule")),
        F.col("ts").alias(_c(label, "ts")),
        F.col("b").alias(_c(label, "b")),
        F.col("key").alias(_c(label, "key")),
        F.col("frames").alias(_c(label, "frames")),
        *[F.col("b")[var].alias(_c(label, "v_" + var)) for var in _read(rule).get(label, ())],
    )
    return side.where(_test(rule, [c.expr for c in _own(rule, label)], cache))


def _read(rule: RulePlan) -> dict[str, list[str]]:
    """Label → the variables that conditions, assignments and aggregates read: taken out of
    the bindings map into columns once, so that compiled expressions do not repeat map
    lookups (whose generated code otherwise exceeds the JVM's 64 KB method limit)."""
    out: dict[str, list[str]] = {}
    exprs = [c.expr for c in rule.conditions] + [a.expr for a in rule.assignments]
    names = [v.name for e in exprs for v in expr_vars(e)] + [
        f"{a.label}{SEP}{a.var}" for a in rule.aggregates
    ]
    for name in names:
        parts = split_qualified(name)
        if parts is not None and parts[1] not in out.setdefault(parts[0], []):
            out[parts[0]].append(parts[1])
    return out


def _own(rule: RulePlan, label: str):
    """The conditions on ``label`` alone tested before its facts are joined
    (``optimize.push_down_conditions``)."""
    return [c for c in rule.pushed if c.labels == {label}]


def _scope(rule: RulePlan) -> Scope:
    def column(name: str) -> Column | None:
        parts = split_qualified(name)
        if parts is not None:
            return F.col(_c(parts[0], "v_" + parts[1]))
        if name.startswith("__g"):
            return F.col(name)
        return None

    return Scope(column, source=rule.source)


def _test(rule: RulePlan, exprs, cache: dict) -> Column:
    """The conjunction of ``exprs``. Each ``L.?a = M.?b`` between two events also compares
    their ``_join_key``s: a necessary condition Spark can hash-join on, where the SPARQL
    comparison alone makes it test every pair of facts (a nested-loop join)."""
    scope = _scope(rule)
    out = F.lit(True)
    for expr in exprs:
        pair = _equated_events(expr)
        columns = pair and (scope.columns(pair[0]), scope.columns(pair[1]))
        if columns and columns[0] is not None and columns[1] is not None:
            out = out & (_join_key(columns[0]) == _join_key(columns[1]))
        out = out & F.coalesce(_value(rule, expr, cache).ebv(), F.lit(False))
    return out


def _value(rule: RulePlan, expr, cache: dict) -> Value:
    """``expr`` compiled once per evaluation of a rule set: its rules often say the same
    (``A.?area = B.?area``), and a SPARQL comparison of two variables is some 400 py4j calls.
    Keyed by the expression alone: the columns it reads are named by label and variable in
    every rule, a rule's source only names a failure, and a failure is not kept."""
    if expr not in cache:
        cache[expr] = compile_expr(expr, _scope(rule))
    return cache[expr]


def _equated_events(expr) -> tuple[str, str] | None:
    """``(L·a, M·b)`` when ``expr`` is ``L.?a = M.?b`` for two different events, else None."""
    if (
        isinstance(expr, ast.BinaryOp)
        and expr.op == "="
        and isinstance(expr.left, ast.Var)
        and isinstance(expr.right, ast.Var)
    ):
        a, b = split_qualified(expr.left.name), split_qualified(expr.right.name)
        if a is not None and b is not None and a[0] != b[0]:
            return expr.left.name, expr.right.name
    return None


def _join_key(term: Column) -> Column:
    """IRIs and blank nodes are equal (SPARQL ``=``) only when their N-Triples texts are, and
    never equal a literal; literals may be equal with different texts (``"1"^^xsd:integer =
    "1.0"^^xsd:decimal``), so they all share one key and the SPARQL test decides."""
    return F.when(term.startswith("<") | term.startswith("_:"), term).otherwise(F.lit('"'))


def _same_rule(trigger: str, label: str) -> Column:
    return F.col(_c(trigger, "rule")) == F.col(_c(label, "rule"))


def _in_scope(rule: RulePlan, label: str, scope: Within | Between) -> Column:
    """``within d from R``: ``t_R - d <= t < t_R``; ``between X and Y``: ``min <= t < max``."""
    t = F.col(_c(label, "ts"))
    if isinstance(scope, Between):
        a, b = F.col(_c(scope.first, "ts")), F.col(_c(scope.second, "ts"))
        return (t >= F.least(a, b)) & (t < F.greatest(a, b))
    ref = F.col(_c(scope.ref, "ts"))
    return (t >= ref - F.lit(scope.us)) & (t < ref)


def _candidates(
    rule: RulePlan, cands: Candidates, facts: DataFrame, after_us, until_us, cache: dict
) -> DataFrame:
    """The rule's candidates as one frame (collected with the other rules', ``_collect_all``),
    joined level by level as ``cands`` orders them (trigger, then the positive events).
    ``facts`` may hold those of rules alike (``Candidates.rules``): every join is within one
    rule's facts, and each row says its ``rule``.

    The trigger facts are left-joined with each positive event in turn, so one frame holds
    every candidate prefix: a row whose keys stop at level ``i`` is a prefix with no
    extension. The driver reads the options of each level from it (distinct prefixes) and the
    full candidates with their negation, aggregate and output columns (``_select``)."""
    order = cands.order
    trigger = order[0]
    plain = [
        c
        for c in rule.conditions
        if not c.aggregates
        and c not in rule.pushed
        and all(rule.predicate(label).kind in ("trigger", "positive") for label in c.labels)
    ]
    level_of = {label: i for i, label in enumerate(order)}

    def conditions_at(i: int):
        return [
            c.expr for c in plain if max((level_of[label] for label in c.labels), default=0) == i
        ]

    cur = _side(rule, facts, trigger, cache)
    t = F.col(_c(trigger, "ts"))
    if after_us is not None:
        cur = cur.where(t > after_us)
    if until_us is not None:
        cur = cur.where(t <= until_us)
    cur = cur.where(_test(rule, conditions_at(0), cache))
    for i, level in enumerate(cands.levels, 1):
        on = (
            F.col(_c(order[i - 1], "key")).isNotNull()
            & _same_rule(trigger, level.label)
            & _in_scope(rule, level.label, level.within)
            & _test(rule, conditions_at(i), cache)
        )
        cur = cur.join(F.broadcast(_side(rule, facts, level.label, cache)), on, "left")
        if i == 1:  # a trigger with no candidate for the first event can neither fire nor consume
            cur = cur.where(F.col(_c(level.label, "key")).isNotNull())
    complete = F.col(_c(order[-1], "key")).isNotNull()
    # a fact's key names its event and instant, not its rule: alike rules' facts may share one
    cur = cur.withColumn(
        "_id",
        F.when(
            complete,
            F.concat_ws(
                "|",
                F.col(_c(trigger, "rule")).cast("string"),
                *[F.col(_c(label, "key")) for label in order],
            ),
        ),
    )
    full = cur.where(complete)
    kept = [
        "_id",
        _c(trigger, "rule"),
        *[c for c in full.columns if "__v_" in c or c.endswith("__ts")],
    ]

    ok = F.lit(True)
    for n in (rule.predicate(label) for label in cands.negations):
        exprs = [c.expr for c in rule.conditions if n.label in c.labels and c not in rule.pushed]
        hits = (
            full.select(*kept)
            .join(
                F.broadcast(_side(rule, facts, n.label, cache)),
                _same_rule(trigger, n.label) & _in_scope(rule, n.label, n.scope),
            )
            .where(_test(rule, exprs, cache))
            .select(F.col("_id").alias("_hit_id"))
            .distinct()
            .withColumn(f"_neg_{n.label}", F.lit(True))
        )
        cur = cur.join(hits, F.col("_id") == F.col("_hit_id"), "left").drop("_hit_id")
        ok = ok & F.col(f"_neg_{n.label}").isNull()
    for agg in cands.aggregates:
        cur = _attach_aggregate(rule, cur, full.select(*kept), facts, agg, cache)
    ok = ok & _test(rule, [c.expr for c in rule.conditions if c.aggregates], cache)
    outputs = [_value(rule, a.expr, cache).term.alias(f"_out_{a.var}") for a in rule.assignments]
    final = cur.select(
        F.col(_c(trigger, "rule")).alias("rule"),
        *[F.col(_c(label, w)) for label in order for w in ("ts", "key", "b", "frames")],
        F.when(complete, ok).alias("_ok"),
        *outputs,
    )
    return final


def _attach_aggregate(
    rule: RulePlan, cur: DataFrame, full: DataFrame, facts: DataFrame, agg, cache: dict
) -> DataFrame:
    """``fn(G.?v within d from R)`` per candidate: over the G facts in scope that satisfy the
    conditions mentioning G (SPARQL 18.5.1 aggregate semantics, empty COUNT/SUM/AVG = 0)."""
    exprs = [c.expr for c in rule.conditions if agg.label in c.labels and c not in rule.pushed]
    value = _value(rule, ast.Var(f"{agg.label}{SEP}{agg.var}"), cache)
    name = f"_a_{agg.placeholder}"
    aggregate = ast.Aggregate(agg.fn, ast.Var("x"))
    joined = (
        full.join(
            F.broadcast(_side(rule, facts, agg.label, cache)),
            _same_rule(rule.trigger.label, agg.label) & _in_scope(rule, agg.label, agg.scope),
        )
        .where(_test(rule, exprs, cache))
        .select(
            "_id",
            *[
                column.alias(c)
                for c, column in aggregates.arguments(aggregate, value, name).items()
            ],
        )
    )
    columns, render, default = aggregates.aggregate(aggregate, name, ("x",), rule.source)
    values = (
        joined.groupBy("_id")
        .agg(*columns)
        .select(F.col("_id").alias("_agg_id"), render.alias(agg.placeholder))
    )
    cur = cur.join(values, F.col("_id") == F.col("_agg_id"), "left").drop("_agg_id")
    if default is not None:
        cur = cur.withColumn(agg.placeholder, F.coalesce(F.col(agg.placeholder), F.lit(default)))
    return cur


# ---------------------------------------------------------------------------- selection


def _select(rule: RulePlan, order: list[str], rows: list[dict], consumed: frozenset[str]):
    """Selection policies and consumption, trigger by trigger in time order (see module doc),
    over the rows of ``_candidates``."""
    positives = [rule.predicate(label) for label in order[1:]]
    options: list[set] = [set() for _ in order]
    finals = {}
    for r in rows:
        keys = [r[_c(label, "key")] for label in order]
        for i, label in enumerate(order):
            if keys[i] is None:
                break
            options[i].add((tuple(keys[:i]), r[_c(label, "ts")], keys[i]))
        else:
            finals[tuple(keys)] = r
    by_prefix: list[dict] = [{}]
    for i in range(1, len(order)):
        table: dict[tuple, set] = {}
        for prefix, ts, key in options[i]:
            table.setdefault(prefix, set()).add((ts, key))
        by_prefix.append(table)
    triggers = sorted((ts, key) for _, ts, key in options[0])
    used_up = set(consumed)
    newly: set[str] = set()
    matches = []
    for _, trigger_key in triggers:
        if trigger_key in used_up:
            continue
        prefixes: list[tuple] = [(trigger_key,)]
        for i, p in enumerate(positives, 1):
            extended = []
            for prefix in prefixes:
                candidates = [c for c in by_prefix[i].get(prefix, ()) if c[1] not in used_up]
                if not candidates:
                    continue
                if p.policy == "last":
                    chosen = [min(candidates, key=lambda c: (-c[0], c[1]))]
                elif p.policy == "first":
                    chosen = [min(candidates)]
                else:
                    chosen = sorted(candidates)
                extended += [(*prefix, key) for _, key in chosen]
            prefixes = extended
        fired = [finals[f] for f in prefixes if f in finals and finals[f]["_ok"]]
        for row in fired:
            matches.append(_match(rule, order, row))
            for label in rule.consumes:
                key = row[_c(label, "key")]
                used_up.add(key)
                newly.add(key)
    matches.sort(key=lambda m: (m.time_us, m.triples))
    return matches, newly


def _match(rule: RulePlan, order: list[str], row) -> RuleMatch:
    keys = {label: row[_c(label, "key")] for label in order}
    digest = hashlib.sha1("|".join(sorted(keys.values())).encode()).hexdigest()[:12]
    fresh = f"urn:rsp:rule:{rule.name}/match/{digest}"
    outputs = {a.var: row[f"_out_{a.var}"] for a in rule.assignments}

    def term(t) -> str | None:
        if isinstance(t, ast.BNode):
            return f"<{fresh}/{t.label}>"
        if isinstance(t, ast.Var):
            parts = split_qualified(t.name)
            if parts is not None:
                return (row[_c(parts[0], "b")] or {}).get(parts[1])
            if t.name in outputs:
                return outputs[t.name]
            return f"<{fresh}/{t.name}>"
        return ast.to_nt(t)

    lines = terms.template_lines(rule.template, term)
    time_us = row[_c(order[0], "ts")]
    events = sorted({f for label in order for f in (row[_c(label, "frames")] or [])})
    return RuleMatch(
        start_us=time_us, end_us=time_us, events=tuple(events), triples=tuple(lines), facts=keys
    )
