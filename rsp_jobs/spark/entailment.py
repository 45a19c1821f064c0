"""Stream triples entailed per frame (or per window's graph) in Spark, under a regime of
``rsp_jobs.reasoning.entailment``: the closed background's ``Schema`` joined as broadcast
tables, so that windows are never loaded into rdflib. One pass, in this order, reaches the
fixpoint of the regime's rules for a frame:

1. *property map*: every triple gains its images under the sub-property and inverse/symmetric
   edges of the schema, composed on the driver (``p ⊑ r``, ``r inverseOf q`` gives
   ``(s p o) ⇒ (o q s)``), so one join does what alternating the two rules would;
2. *transitive and sameAs closure*, per frame in Python on the driver: only the triples of
   transitive properties and ``owl:sameAs`` are collected (one scan), frames are small, and a
   Python UDF per frame cost several times more in Spark than the whole RDFS pass:
   the frame's ``owl:sameAs`` triples merged with the background's identity classes, then for
   each transitive property the reachability over the frame's triples (after step 1, so
   sub-properties' triples count) and the background's triples of that property, with nodes
   taken up to identity (a chain ``a p x``, ``x sameAs y``, ``y p c`` gives ``a p c``;
   ``entailment.frame_closure``); the new triples then get their step-1 images (the image of a
   closed relation is closed, so a transitive super-property needs no second round);
3. *types*: domains, ranges and super-classes (substitution-invariant, so they commute with 4);
4. *sameAs copies*: every triple of the frame, stated or entailed, is copied with its subject
   and/or object replaced by each equivalent (the background's identity classes, and within the
   frame the classes its own sameAs triples make).

Derived triples the closed background already holds are dropped (the query sees the background
beside the window; one triple in both would match twice); stated stream triples are kept.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import functions as F
from pyspark.sql import types as T

from rsp_jobs.reasoning.entailment import SAME_AS, TYPE, Schema, frame_closure
from rsp_jobs.spark.local import local_frame

FRAME_KEY = ("stream", "ts")  # DOTR rules, EP-SPARQL patterns: one time instant of a stream
WINDOW_KEY = ("_win", "g")  # C-SPARQL window queries: a window's graph
LITERAL_COLUMNS = ("o_num", "o_time")


def entail(elements, schema: Schema, key: tuple[str, ...] = FRAME_KEY):
    """Rows plus what each group of rows with one ``key`` entails under ``schema``; derived
    triples keep their group's columns.

    Which query kind uses which key (the scope of reasoning):

    - ``FRAME_KEY`` (``stream, ts``): lake elements ``stream, ts, frame, s, p, o, o_num,
      o_time, seq``, each frame (all triples of a stream at one time, whatever files or graphs
      brought them) reasoned over alone with the background. DOTR rules (Margara et al.:
      reasoning at each time instant) and EP-SPARQL patterns (``engine.match``).
    - ``WINDOW_KEY`` (``_win, g``): window rows ``_win, g, s, p, o, _open, ts`` of
      ``windows.assign``, each window's graph (every stream of the window that shares a graph)
      reasoned over whole with the background. Registered C-SPARQL window queries
      (``engine.evaluate``): the tutorial's slides "C-SPARQL queries and reasoning" answer "under
      RDFS entailment regime" / "RDFS++ entailment regime" over what the window holds (the
      example's ``:posts`` at T2 on fs and ``:observes`` at T1 on rfid answer together).

    A derived triple's other columns (``ts``, what ``timestamp()`` reports, and ``_open``) come
    from the triple it was derived from (sub-property, inverse, domain, range, sub-class: one
    stream triple each). Decision: a triple derived or stated more than once in one group gets
    the latest ``ts`` (as ``windows.assign`` stamps a triple that arrives twice); a triple of
    the transitive or sameAs closure (step 2, derived from a chain) gets the latest ``ts`` of
    the group's transitive-property and ``owl:sameAs`` triples (an upper bound of its chain's
    latest link: ``frame_closure`` does not track which links it used); a sameAs copy (step 4)
    keeps the copied triple's ``ts``."""
    spark = elements.sparkSession
    columns = elements.columns
    carried = [c for c in columns if c not in ("s", "p", "o", *LITERAL_COLUMNS)]
    literal = [c for c in LITERAL_COLUMNS if c in columns]
    literal_types = {c: elements.schema[c].dataType for c in literal}

    def table(rows, names):
        return F.broadcast(local_frame(spark, rows, ", ".join(f"{n} string" for n in names)))

    def resource(column):
        return ~F.col(column).startswith('"')

    def no_literal_values():
        return [F.lit(None).cast(literal_types[c]).alias(c) for c in literal]

    def derived(frame, s, p, o):
        return frame.select(
            *carried, s.alias("s"), p.alias("p"), o.alias("o"), *no_literal_values()
        )

    mapping = defaultdict(list)
    for p, q, flip in schema.property_map():
        mapping[p].append((q, flip))
    map_table = None
    if mapping:
        map_table = F.broadcast(
            local_frame(
                spark,
                sorted(mapping.items()),
                "p string, targets array<struct<q: string, flip: boolean>>",
            )
        )

    def images(rows):
        """Each row and its images, by one join and an explode (no self-union: the plan stays
        one scan of the stream however many steps follow)."""
        if map_table is None:
            return rows
        me = F.array(F.struct(F.col("p").alias("q"), F.lit(False).alias("flip")))
        out = (
            rows.join(map_table, "p", "left")
            .select(
                *columns,
                F.explode(
                    F.concat(
                        me,
                        F.coalesce(
                            "targets", F.array().cast("array<struct<q: string, flip: boolean>>")
                        ),
                    )
                ).alias("t"),
            )
            .where(~F.col("t.flip") | resource("o"))
        )
        flip = F.col("t.flip")
        return out.select(
            *carried,
            F.when(flip, F.col("o")).otherwise(F.col("s")).alias("s"),
            F.col("t.q").alias("p"),
            F.when(flip, F.col("s")).otherwise(F.col("o")).alias("o"),
            *[F.when(flip, F.lit(None)).otherwise(F.col(c)).alias(c) for c in literal],
        )

    rows = images(elements)
    same = None
    if schema.regime == "rdfs++":
        rows, same = _transitive_and_same(rows, schema, images, derived, resource, key, carried)
    typed = rows
    if schema.domain:
        typed = typed.unionByName(
            derived(
                rows.join(table(schema.domain, ("p", "c")), "p"),
                F.col("s"),
                F.lit(TYPE),
                F.col("c"),
            )
        )
    if schema.range:
        typed = typed.unionByName(
            derived(
                rows.where(resource("o")).join(table(schema.range, ("p", "c")), "p"),
                F.col("o"),
                F.lit(TYPE),
                F.col("c"),
            )
        )
    if schema.sub_class:
        supers = typed.where(F.col("p") == TYPE).join(table(schema.sub_class, ("o", "sup")), "o")
        typed = typed.unionByName(derived(supers, F.col("s"), F.col("p"), F.col("sup")))
    if same is not None or schema.same_as:
        typed = _same_as_copies(typed, same, schema.same_as, columns, resource, key)
    if schema.background:  # a derived triple the background states would match a pattern twice
        typed = typed.join(table(schema.background, ("s", "p", "o")), ["s", "p", "o"], "left_anti")
        typed = typed.unionByName(elements)
    extras = [c for c in carried if c not in key]
    if not extras:  # a frame: every column but the triple's own is the key
        return typed.dropDuplicates([*key, "s", "p", "o"])
    latest = [F.max(c).alias(c) if c == "ts" else F.min(c).alias(c) for c in extras]
    return (
        typed.groupBy(*key, "s", "p", "o")
        .agg(*latest, *[F.max(c).alias(c) for c in literal])
        .select(*columns)
    )


def _transitive_and_same(rows, schema: Schema, images, derived, resource, key, carried):
    """Step 2: the closure per group (``frame_closure``) of the transitive properties' and
    owl:sameAs triples, with its images; returns the rows and the group's identities. The
    relevant triples are collected: the scan runs once, and nothing else of the stream moves."""
    transitive = set(schema.transitive) | {SAME_AS}
    background_triples, background_same = schema.transitive_triples, schema.same_as
    extras = [c for c in carried if c not in key]
    relevant = rows.where(F.col("p").isin(sorted(transitive)) & resource("o")).select(
        *carried, "s", "p", "o"
    )
    groups: defaultdict[tuple, list[tuple]] = defaultdict(list)
    stamps: dict[tuple, dict] = {}
    for row in relevant.collect():
        group = tuple(row[k] for k in key)
        groups[group].append((row.s, row.p, row.o))
        seen = stamps.setdefault(group, {c: row[c] for c in extras})
        for c in extras:  # see entail: the group's latest ts, the least of the others
            if seen[c] is None or row[c] is None:
                seen[c] = seen[c] if row[c] is None else row[c]
            else:
                seen[c] = (max if c == "ts" else min)(seen[c], row[c])
    found = [
        (*group, *[stamps[group][c] for c in extras], s, p, o)
        for group, edges in groups.items()
        for s, p, o in sorted(frame_closure(edges, transitive, background_triples, background_same))
    ]
    shape = T.StructType(
        [rows.schema[c] for c in (*key, *extras)]
        + [T.StructField(c, T.StringType()) for c in ("s", "p", "o")]
    )
    added = local_frame(rows.sparkSession, found, shape)
    added = derived(added, F.col("s"), F.col("p"), F.col("o"))
    rows = rows.unionByName(images(added))
    same = None
    if any(p == SAME_AS for *_, p, _o in found):
        same = added.where(F.col("p") == SAME_AS).select(
            *key, F.col("s").alias("x"), F.col("o").alias("y")
        )
    return rows, same


def _same_as_copies(rows, group_same, background_same, columns, resource, key):
    """Step 4 (eq-rep-s, eq-rep-o): every triple copied with its subject, then its object,
    replaced by each equivalent (a left join to the node's equivalents and an explode, so the
    plan does not repeat); reflexive sameAs copies are left out as eq-ref is. ``group_same``:
    the identities each group (``key``) adds."""
    spark = rows.sparkSession
    classes = defaultdict(list)
    for x, y in background_same:
        classes[x].append(y)
    background = None
    if classes:
        background = F.broadcast(
            local_frame(spark, sorted(classes.items()), "x string, bg array<string>")
        )
    mine = None
    if group_same is not None:
        mine = F.broadcast(
            group_same.groupBy(*key, "x")
            .agg(F.collect_set("y").alias("fr"))
            .select(*[F.col(k).alias(f"_{k}") for k in key], "x", "fr")
        )

    def replaced(frame, column):
        if background is not None:
            frame = frame.join(background, F.col(column) == F.col("x"), "left").drop("x")
        else:
            frame = frame.withColumn("bg", F.lit(None).cast("array<string>"))
        if mine is not None:  # null-safe: a window's default graph is a NULL g
            frame = frame.join(
                mine,
                [F.col(k).eqNullSafe(F.col(f"_{k}")) for k in key] + [F.col(column) == F.col("x")],
                "left",
            ).drop("x", *[f"_{k}" for k in key])
        else:
            frame = frame.withColumn("fr", F.lit(None).cast("array<string>"))
        empty = F.array().cast("array<string>")
        others = F.concat(F.coalesce("bg", empty), F.coalesce("fr", empty))
        if column == "o":
            others = F.when(resource("o"), others).otherwise(empty)
        frame = frame.select(
            *columns, F.explode(F.concat(F.array(F.col(column)), others)).alias("_v")
        )
        changed = F.col("_v") != F.col(column)
        return frame.select(
            *[
                F.col("_v").alias(c)
                if c == column
                else F.when(changed, F.lit(None)).otherwise(F.col(c)).alias(c)
                if column == "o" and c in LITERAL_COLUMNS
                else F.col(c)
                for c in columns
            ]
        )

    copies = replaced(replaced(rows, "s"), "o")
    return copies.where(~((F.col("p") == SAME_AS) & (F.col("s") == F.col("o"))))
