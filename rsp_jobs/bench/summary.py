"""The one page ``make bench`` leaves beside its JSON: ``summary.md`` (the engine beside the
hand-written Spark jobs and rdflib, as tables of seconds and ratios) and ``evaluation.png``
(time against days and against RANGE/STEP). rdflib is timed over the first day only; its line
over more days is that day's time per window times the windows, and is drawn dashed."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

_SIDES = (
    ("engine_seconds", "engine"),
    ("hand_written_seconds", "hand-written Spark (RDF)"),
    ("typed_floor_seconds", "Spark over typed columns"),
)


def write(report: dict, out_dir: Path) -> Path:
    """Write ``summary.md`` and ``evaluation.png`` into ``out_dir``; returns the page."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = _plot(report, out_dir / "evaluation.png")
    page = out_dir / "summary.md"
    page.write_text(_page(report, plot.name))
    return page


def _rdflib_per_window(report: dict):
    entry = report["queries"].get("congestion_by_segment", {})
    rdflib = entry.get("rdflib")
    return (rdflib["seconds_per_window"], entry["windows"]) if rdflib else None


def _spark_vs_rdflib(report: dict):
    """congestion_by_segment per window over the first day: rdflib, the engine and the
    hand-written job, each side's time divided by the first day's windows."""
    rdflib = _rdflib_per_window(report)
    one_day = [e for e in report["anchors"]["by_days"] if e["days"] == 1]  # the query as registered
    if not rdflib or not one_day:
        return None
    per_window, windows = rdflib
    engine, hand = (one_day[0][key] / windows for key in ("engine_seconds", "hand_written_seconds"))
    return {
        "rdflib": round(per_window, 4),
        "engine": round(engine, 4),
        "hand": round(hand, 4),
        "engine_ratio": round(per_window / engine),
        "hand_ratio": round(per_window / hand),
    }


def _page(report: dict, plot: str) -> str:
    work, anchors = report["workload"], report["anchors"]
    lines = [
        f"# make bench: {work['day']}, {work['days']} days of the 33 CityBench traffic streams",
        "",
        f"Machine: {report['machine']['cores']} cores, Python {report['machine']['python']}.",
        "",
        f"Ingest: {work['triples']:,} triples parsed and written to the lake in {work['ingest_seconds']} s "
        f"({work['ingest_triples_per_second']:,} triples/s on one core; the CSV mapping before it took "
        f"{work['mapping_seconds']} s).",
        "",
        "## Queries over the first day (the registered CityBench queries, then the bench's own)",
        "",
        "| query | windows | engine s | s/window | rdflib s/window | engine vs rdflib per window | same answers |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, q in report["queries"].items():
        rdflib = q.get("rdflib", {})
        lines.append(
            f"| {name} | {q['windows']} | {q['engine']['seconds']} | {q['engine']['seconds_per_window']} | "
            f"{rdflib.get('seconds_per_window', '-')} | {q.get('engine_vs_rdflib_per_window', '-')}x | "
            f"{q.get('same_results', '-')} |"
        )
    micro = report.get("micro_batches")
    if micro:
        lines += [
            "",
            f"## A {micro['minutes']}-minute micro-batch (from the lake to the results, {micro['batches']} "
            "consecutive batches, Spark warm)",
            "",
            "| query | median s | max s | windows | Spark jobs | stages | py4j calls |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {name} | {q['median_seconds']} | {q['max_seconds']} | {q['windows_per_batch']} | "
            f"{q['jobs_per_batch']} | {q['stages_per_batch']} | {q['py4j_calls_per_batch']:,} |"
            for name, q in micro["queries"].items()
        ]
    for key, title in (
        ("by_days", f"{anchors['query']} over 1 to {work['days']} days, [RANGE 1h STEP 5m]"),
        ("by_range_over_step", f"{anchors['query']} over one day as RANGE/STEP grows (STEP 5m)"),
    ):
        lines += [
            "",
            f"## {title}",
            "",
            "| days | RANGE/STEP | answers | engine s | hand-written s | typed floor s | engine / hand-written "
            "| engine / floor | same answers |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {e['days']} | {e['range_over_step']} | {e['answers']} | {e['engine_seconds']} | "
            f"{e['hand_written_seconds']} | {e['typed_floor_seconds']} | {e['engine_vs_hand_written']} | "
            f"{e['engine_vs_typed_floor']} | {e['same_answers']} |"
            for e in anchors[key]
        ]
    # the shortest span (the fixed cost) and the longest (the cost per day)
    spans = anchors["by_days"][:1] + anchors["by_days"][1:][-1:]
    for entry in spans:
        profile = entry.get("engine_profile")
        if profile:
            lines += [
                "",
                f"The engine over {entry['days']} day(s): {profile['seconds']} s, "
                f"{profile['jobs']} Spark jobs, {profile['stages']} stages, {profile['py4j_calls']:,} py4j calls: "
                f"{profile['plan_calls_seconds']} s waiting on the short ones (building the plan) and "
                f"{profile['other_seconds']} s the rest (Spark running its jobs, the results reaching Python).",
            ]
    by_days = anchors.get("growth_over_days", {})
    if by_days.get("engine") is not None:
        first, last = by_days["from_days"], by_days["to_days"]
        lines += [
            "",
            f"From {first} to {last} days ({last / first:g}x the data) the engine's time grows "
            f"{by_days['engine']}x, the hand-written job's {by_days['hand_written']}x.",
        ]
    ceiling = _spark_vs_rdflib(report)
    if ceiling:
        lines += [
            "",
            f"Per window over the first day, rdflib takes {ceiling['rdflib']} s, the engine "
            f"{ceiling['engine']} s ({ceiling['engine_ratio']}x) and the hand-written job {ceiling['hand']} s "
            f"({ceiling['hand_ratio']}x): the hand-written job is the most a Spark job reaches here, "
            "whatever the engine does.",
        ]
    growth = anchors.get("growth_over_range_over_step", {})
    if growth.get("engine") is not None:
        ratios = [e["range_over_step"] for e in anchors["by_range_over_step"]]
        lines += [
            "",
            f"From RANGE/STEP {ratios[0]} to {ratios[-1]} the engine's time grows {growth['engine']}x, "
            f"the hand-written job's {growth['hand_written']}x.",
        ]
    lines += [
        "",
        f"![time against days and against RANGE/STEP]({plot})",
        "",
        "rdflib is timed over the first day; over more days its line is that day's seconds per window "
        "times the windows (dashed).",
        "",
    ]
    return "\n".join(lines)


def _plot(report: dict, out: Path) -> Path:
    anchors = report["anchors"]
    fig, (by_days, by_ratio) = plt.subplots(1, 2, figsize=(11, 4.2))
    for axis, key, x, label in (
        (by_days, "by_days", "days", "days of data"),
        (by_ratio, "by_range_over_step", "range_over_step", "RANGE / STEP (one day)"),
    ):
        entries = anchors[key]
        xs = [e[x] for e in entries]
        for field, name in _SIDES:
            axis.plot(xs, [e[field] for e in entries], marker="o", label=name)
        axis.set_xlabel(label)
        axis.set_ylabel("seconds")
        axis.set_xticks(xs)
        axis.grid(alpha=0.3)
    rdflib = _rdflib_per_window(report)
    if rdflib and anchors["by_days"]:
        per_window, windows = rdflib
        xs = [e["days"] for e in anchors["by_days"]]
        by_days.plot(
            xs, [per_window * windows * n for n in xs], linestyle="--", marker="x", label="rdflib"
        )
        by_days.set_yscale("log")
    by_days.legend(fontsize=8)
    by_days.set_title(f"{anchors['query']}, [RANGE 1h STEP 5m]")
    by_ratio.set_title(f"{anchors['query']}, STEP 5m")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
