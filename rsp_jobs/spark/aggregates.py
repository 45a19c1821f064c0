"""SPARQL 1.1 aggregates (§18.5.1) over Spark columns, for every evaluator that groups: the
window evaluator's GROUP BY and C-SPARQL AGGREGATE clause (``evaluate.Evaluator``, §18.5 Group),
and DOTR's aggregates over the facts in a candidate's scope (``spark/dotr.py``).

An aggregate is two steps: ``arguments`` computes, per solution, only the columns the aggregate
reads (a term, a number with its rank and exact value, an ORDER BY key), and ``aggregate`` gives
the Spark aggregate columns over them, the column that renders the result as a term and the
value over an empty group.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from rsp_jobs import terms
from rsp_jobs.errors import UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.spark import decimals as D
from rsp_jobs.spark import terms as ST
from rsp_jobs.spark.r2r import vcol

__all__ = ["aggregate", "arguments"]


def arguments(agg: ast.Aggregate, value, name: str) -> dict[str, Column]:
    """The per-solution columns ``aggregate`` reads for ``agg`` over ``value`` (a compiled
    expression), named ``name`` + suffix: only what that aggregate reads, so that the rows
    copied into every window holding their solution (RANGE/STEP copies under sliding windows)
    and sorted or hashed by the aggregation carry no term they do not need (a COUNT's IRIs,
    the values an AVG has as numbers)."""
    term = value.term
    # An unbound variable adds nothing to a group, but an argument expression that is an error
    # for one solution makes the aggregate an error, unbound (SPARQL 1.1 18.5.1: ListEval keeps
    # the error in the list the set function receives; docs/semantics/numbers.md, "Aggregates")
    expression = not isinstance(agg.arg, ast.Var)
    if agg.name == "count" and not agg.distinct:
        return {name + "_t": F.when(term.isNotNull(), F.lit(True))}  # counted where bound
    if agg.name in ("sum", "avg"):
        # a computed number (``?w * ?mean``) is never a bound non-number: its term is rendered
        # from it, so asking would render every solution's term for nothing
        number, rank, exact = value.number(), value.number_rank(), value.exact_number()
        # an integer or decimal member out of the exact range would make the sum another number
        wrong = number.isNull() | ((rank <= 1) & exact.isNull())
        if expression:
            bad = F.when(wrong, 1).otherwise(0)
        elif value.num is not None:
            bad = F.lit(0)
        else:
            bad = F.when(term.isNotNull() & wrong, 1).otherwise(0)
        return {name + "_n": number, name + "_r": rank, name + "_e": exact, name + "_bad": bad}
    if agg.name in ("min", "max"):  # the term is a field of its key
        key = (
            ST.order_struct(term)
            if value.num is None
            else ST.number_order_struct(value.num, value.exact_number(), term)
        )
        columns = {name + "_k": F.when(term.isNotNull(), key)}
        if expression:
            columns[name + "_bad"] = F.when(term.isNull(), 1).otherwise(0)
        return columns
    return {name + "_t": term}


def aggregate(
    agg: ast.Aggregate, name: str, vars_: tuple[str, ...], source: str, ranked: bool = False
) -> tuple[list[Column], Column, str | None]:
    """An aggregate (SPARQL 18.5.1) over the pre-computed columns of ``arguments``:
    ``<name>_t`` (term; for COUNT without DISTINCT, true where bound), ``_n`` (number), ``_r``
    (numeric rank), ``_bad`` (1 where bound but not a number) and, for MIN and MAX, ``_k``
    (the term's ORDER BY key with the term in it, NULL when unbound): the Spark aggregate
    columns, the column that renders their result as a term, and the value over an empty
    group (COUNT and SUM are 0, AVG is 0 as 18.5.1.4 defines, GROUP_CONCAT is ""). ``ranked``:
    a MIN or MAX whose ``_k`` is its term's rank (``evaluate.Evaluator._ranks``), and whose term the
    caller joins back from the least or greatest (``_v``) as ``_term``."""
    zero = f'"0"^^<{terms.XSD_INTEGER}>'
    term, num, rank = F.col(name + "_t"), F.col(name + "_n"), F.col(name + "_r")
    c = lambda suffix: F.col(name + suffix)  # noqa: E731 - the aggregated columns by suffix
    if agg.name == "count":
        if agg.arg is None:
            row = F.struct(*[F.col(vcol(v)) for v in vars_]) if vars_ else F.lit(1)
            count = F.size(F.collect_set(row)) if agg.distinct else F.count(F.lit(1))
        else:
            count = F.size(F.collect_set(term)) if agg.distinct else F.count(term)
        return [count.cast("double").alias(name + "_c")], ST.count_literal(c("_c")), zero
    if agg.name in ("sum", "avg"):
        # the exact sum of the integers and decimals, the doubles' where a float or double is a member
        sum_, count_ = (F.sum_distinct, F.count_distinct) if agg.distinct else (F.sum, F.count)
        columns = [
            sum_(num).alias(name + "_s"),
            sum_(c("_e")).cast(D.EXACT).alias(name + "_x"),
            count_(num).alias(name + "_c"),
            F.max(rank).alias(name + "_r"),
            F.max(c("_bad")).alias(name + "_bad"),
        ]
        ok, some = c("_bad") == 0, c("_c") > 0
        total, exact = F.coalesce(c("_s"), F.lit(0.0)), F.coalesce(c("_x"), F.lit(0).cast(D.EXACT))
        if agg.name == "sum":
            rank = F.coalesce(c("_r"), F.lit(0))
        else:
            rank = F.when(some, F.greatest(c("_r"), F.lit(1))).otherwise(F.lit(0))
            # a count is a divisor with no digits after the point: the quotient is exact to 18 (``D.divide``)
            total = F.when(some, total / c("_c")).otherwise(F.lit(0.0))
            exact = F.when(some, (c("_x") / c("_c").cast("decimal(20,0)")).cast(D.EXACT)).otherwise(
                exact
            )
        bound = ok & ((rank >= 2) | (some & c("_x").isNotNull()) | ~some)
        render = F.when(bound, ST.numeric_literal(total, rank, exact))
        return columns, render, zero
    if agg.name in ("min", "max") and ranked:  # a number: Spark hashes it
        pick = F.min if agg.name == "min" else F.max
        return [pick(c("_k")).alias(name + "_v")], c("_term"), None
    if agg.name in ("min", "max"):
        # The least or greatest ORDER BY key (a struct, the term its last field): Spark has no
        # hash aggregate over a struct, so the aggregation sorts by its groups; the greatest of
        # the group's ``collect_list`` instead would be an object hash aggregate holding every
        # key of every group until the end of the task.
        pick = F.min if agg.name == "min" else F.max
        columns, render = [pick(c("_k")).alias(name + "_v")], c("_v").getField(ST.ORDER_TERM)
        if not isinstance(agg.arg, ast.Var):  # an expression that was an error for a solution
            columns.append(F.max(c("_bad")).alias(name + "_bad"))
            render = F.when(c("_bad") == 0, render)
        return columns, render, None
    if agg.name == "sample":
        return [F.min(term).alias(name + "_v")], c("_v"), None
    if agg.name == "group_concat":
        sep = " " if agg.separator is None else agg.separator
        text = F.when(ST.is_literal(term), ST.lexical(term)).when(
            ST.is_iri(term), F.regexp_extract(term, r"^<(.*)>$", 1)
        )
        items = F.collect_set(text) if agg.distinct else F.collect_list(text)
        return (
            [F.array_join(F.array_sort(items), sep).alias(name + "_v")],
            ST.string_literal(c("_v")),
            '""',
        )
    raise UnsupportedConstruct(source, f"aggregate {agg.name.upper()}")
