"""The package's layers, read from the source (no Spark, no Airflow, nothing imported): every
``import`` of an ``rsp_jobs`` module, at module level or inside a function (a deferred import is
a dependency all the same, and a cycle through one only shows at run time, in whichever order
the modules happen to load).

The package reads as its pipeline, query text -> ``language`` -> ``algebra`` -> ``physical`` ->
``spark`` / ``store``, with the ``foundation`` under everything and the applications (the CLI,
the demo, the benchmarks) and the orchestration over it. ``LAYERS`` is that table: what each
layer may import. An import of a layer not in its row runs backwards, and fails here with the
module and the line, so that the language and the algebra can be checked and tested without
Spark, Airflow or a store, and reasoning, ingest and statistics without Spark.

- ``LAYERS``: every module of the package is in one layer (the longest prefix listed), and
  imports only modules of its own layer and of the layers in its row;
- ``PURE``: layers that import none of the heavy runtimes (Spark, Airflow, the store's
  libraries, Great Expectations), whatever the table says of the package's own layers;
- ``LEAVES``: what the foundation's leaves may import of the package, one by one;
- no import cycle between modules;
- ``PENDING``: backwards imports known and kept for a reason, each named with it, and
  ``FORMER_NAMES``: modules kept under an old name for the modules that still use it; an entry
  no longer needed must leave its list, so that the lists only shrink.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "rsp_jobs"

# layer -> the modules it holds (a module belongs to the longest prefix that names it)
MEMBERS = {
    "foundation": ("rsp_jobs", "rsp_jobs.errors", "rsp_jobs.times", "rsp_jobs.settings", "rsp_jobs.results",
                   "rsp_jobs.terms", "rsp_jobs.namespaces", "rsp_jobs.textfile", "rsp_jobs.tree", "rsp_jobs.rdf_files"),
    "language": ("rsp_jobs.language",),
    "algebra": ("rsp_jobs.algebra",),
    "compiler": ("rsp_jobs.compiler",),
    "reasoning": ("rsp_jobs.reasoning",),
    "ingest": ("rsp_jobs.ingest",),
    "physical": ("rsp_jobs.physical",),
    "spark": ("rsp_jobs.spark",),
    "store": ("rsp_jobs.store",),
    "engine": ("rsp_jobs.engine",),
    "quality": ("rsp_jobs.quality",),
    "alerts": ("rsp_jobs.alerts",),
    "orchestrate": ("rsp_jobs.orchestrate",),
    "applications": ("rsp_jobs.cli", "rsp_jobs.demo", "rsp_jobs.demo_deployment", "rsp_jobs.plots",
                     "rsp_jobs.reevaluate", "rsp_jobs.write_class_archive", "rsp_jobs.bench", "rsp_jobs.ui"),
}
# layer -> the other layers it may import (its own modules it always may)
LAYERS = {
    "foundation": set(),
    "language": {"foundation"},
    "algebra": {"language", "foundation"},
    "compiler": {"algebra", "language", "foundation"},
    "reasoning": {"language", "foundation"},
    "ingest": {"foundation"},
    # statistics read the lake's files (partitions, footers, dictionaries) with pyarrow
    "physical": {"algebra", "language", "ingest", "foundation"},
    "spark": {"physical", "compiler", "algebra", "language", "reasoning", "ingest", "foundation"},
    "store": {"algebra", "language", "ingest", "foundation"},
    "engine": {"spark", "physical", "compiler", "algebra", "language", "reasoning", "ingest", "foundation"},
    "quality": {"store", "ingest", "foundation"},
    "alerts": {"store", "reasoning", "ingest", "foundation"},
    "orchestrate": {"engine", "spark", "store", "quality", "alerts", "physical", "compiler", "algebra", "language",
                    "reasoning", "ingest", "foundation"},
    "applications": set(MEMBERS) - {"applications"},
}
PURE = ("language", "algebra", "compiler", "physical", "reasoning")
HEAVY = ("pyspark", "airflow", "sqlalchemy", "alembic", "great_expectations")

# what each leaf may import of the package; settings may read durations with times (itself a leaf)
LEAVES = {"rsp_jobs.times": {"rsp_jobs.errors"},
          "rsp_jobs.settings": {"rsp_jobs.errors", "rsp_jobs.times"},
          "rsp_jobs.results": {"rsp_jobs.times"},  # typed results: every layer reads them
          "rsp_jobs.terms": {"rsp_jobs.times"},
          "rsp_jobs.namespaces": set()}

# (module, what it imports) -> why the backwards import stays for now
PENDING: dict[tuple[str, str], str] = {}
# a module's former name -> the only modules that may still import it (they are being rewritten)
FORMER_NAMES: dict[str, set[str]] = {}
# modules that must stay independent of the engine they check: the foundation only
INDEPENDENT = {"rsp_jobs.bench.reference": {"foundation"}}


def module_files(package_dir: Path) -> dict[str, Path]:
    """Module name -> file; a package is its ``__init__.py``."""
    root = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """What module ``name`` imports, at any depth: imported name -> first line. ``rsp_jobs``
    modules are resolved to the module file (``from rsp_jobs.x import y`` is ``rsp_jobs.x.y``
    when that is a module, else ``rsp_jobs.x``); other imports keep their dotted name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target.split(".")[0] == package.split(".")[0]:
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
        if target != name:
            found.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per extra dot
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                add(submodule if submodule in modules else base, node.lineno)
    return found


def import_graph(package_dir: Path = PACKAGE_DIR) -> dict[str, dict[str, int]]:
    """Every module of the package -> what it imports (``imports_of``)."""
    modules = module_files(package_dir)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """Each group of modules that import each other (a strongly connected component), sorted,
    with one cycle through it (``[a, b, ..., a]``)."""
    edges = {name: sorted(t for t in targets if t in graph) for name, targets in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [(sorted(group), _path_back(min(group), group, edges)) for group in groups]


def _path_back(start: str, group: set[str], edges: dict[str, list[str]]) -> list[str]:
    """The shortest path from ``start`` back to itself inside ``group``."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in edges[node]:
            if target == start:
                return paths[node] + [start]
            if target in group and target not in paths:
                paths[target] = paths[node] + [target]
                queue.append(target)
    raise AssertionError(f"no cycle back to {start}")


def _describe(group: list[str], cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    steps = [f"{a} imports {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return (f"import cycle: {' -> '.join(cycle)}\n    " + "\n    ".join(steps)
            + (f"\n    (and more among {', '.join(group)})" if len(group) > len(cycle) - 1 else ""))


def layer_of(name: str) -> str:
    """The layer of module ``name``: the one whose member is its longest prefix (the package
    itself, ``rsp_jobs``, is only its ``__init__``: a new top-level module must be placed)."""
    best, found = -1, None
    for layer, members in MEMBERS.items():
        for member in members:
            inside = name.startswith(member + ".") and "." in member
            if (name == member or inside) and len(member) > best:
                best, found = len(member), layer
    if found is None:
        raise KeyError(name)
    return found


def backwards(graph: dict[str, dict[str, int]], package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Every import of a module of a layer its importer's row of ``LAYERS`` does not name, as
    ``path:line: importer (its layer) imports module (its layer)``; ``PENDING`` left out."""
    root = package_dir.parent
    files = module_files(package_dir)
    wrong = []
    for name, targets in sorted(graph.items()):
        mine = layer_of(name)
        for target, line in sorted(targets.items(), key=lambda item: item[1]):
            if target not in graph or (name, target) in PENDING:
                continue
            theirs = layer_of(target)
            if theirs != mine and theirs not in LAYERS[mine]:
                wrong.append(f"{files[name].relative_to(root)}:{line}: {name} ({mine}) imports {target} ({theirs}); "
                             f"{mine} may import {', '.join(sorted(LAYERS[mine])) or 'nothing of the package'}")
    return wrong


def test_every_module_has_a_layer():
    unplaced = []
    for name in import_graph():
        try:
            layer_of(name)
        except KeyError:
            unplaced.append(name)
    assert not unplaced, f"modules in no layer of MEMBERS: {', '.join(unplaced)}"


def test_the_table_names_only_layers_and_runs_one_way():
    assert set(LAYERS) == set(MEMBERS)
    assert all(allowed <= set(LAYERS) for allowed in LAYERS.values())
    order: list[str] = []
    while len(order) < len(LAYERS):  # a layer after everything it may import: no two import each other
        ready = [layer for layer, allowed in LAYERS.items() if layer not in order and allowed <= set(order)]
        assert ready, f"the table has a cycle among {sorted(set(LAYERS) - set(order))}"
        order += sorted(ready)


def test_no_import_runs_backwards():
    wrong = backwards(import_graph())
    assert not wrong, "imports against the layer table (tests/test_layers.py, LAYERS):\n" + "\n".join(wrong)


def test_pending_backwards_imports_are_still_there():
    graph = import_graph()
    gone = [f"{name} -> {target}" for name, target in PENDING if target not in graph.get(name, {})]
    assert not gone, f"no longer imported, remove from PENDING: {', '.join(gone)}"


def test_former_module_names_serve_only_the_modules_that_still_use_them():
    graph = import_graph()
    for former, allowed in FORMER_NAMES.items():
        users = {name for name, targets in graph.items() if former in targets}
        assert users <= allowed, f"{former} is a former name; import its new module in {sorted(users - allowed)}"
        assert users, f"nothing imports {former} any more: remove it and its FORMER_NAMES entry"


def test_no_import_cycle():
    graph = {name: {t: line for t, line in targets.items() if (name, t) not in PENDING}
             for name, targets in import_graph().items()}
    found = cycles(graph)
    assert not found, "\n".join(_describe(group, cycle, graph) for group, cycle in found)


def test_leaves_import_only_what_they_are_allowed():
    graph = import_graph()
    for leaf, allowed in LEAVES.items():
        used = {m for m in graph[leaf] if m.startswith("rsp_jobs") and (leaf, m) not in PENDING}
        assert used <= allowed, f"{leaf} imports {sorted(used - allowed)}; it may import only {sorted(allowed)}"


def test_pure_layers_import_no_spark_airflow_store_or_gx():
    graph = import_graph()
    wrong = [f"{name} ({layer_of(name)}) imports {target} (line {line})"
             for name, targets in sorted(graph.items()) if layer_of(name) in PURE
             for target, line in sorted(targets.items()) if (name, target) not in PENDING
             if any(target == heavy or target.startswith(heavy + ".") for heavy in HEAVY)]
    assert not wrong, "\n".join(wrong)


def test_the_rdflib_reference_uses_none_of_the_engine():
    """``rsp_jobs.bench.reference`` answers windows with rdflib for the differential tests and
    ``make bench``: an answer of the engine's own code would check the engine against itself."""
    graph = import_graph()
    for name, allowed in INDEPENDENT.items():
        used = sorted(f"{t} (line {line})" for t, line in graph[name].items()
                      if t in graph and layer_of(t) not in allowed)
        assert not used, f"{name} imports {', '.join(used)}; it may import only {', '.join(sorted(allowed))}"


def test_the_check_sees_deferred_imports_submodules_and_packages(tmp_path):
    """The checker itself, on a made-up package: a cycle through a function-level import, a
    ``from package import submodule`` and a package's ``__init__``."""
    package = tmp_path / "rsp_jobs"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from rsp_jobs.sub.b import thing\n")
    (package / "a.py").write_text("def f():\n    from rsp_jobs import sub\n")
    (package / "sub" / "b.py").write_text("from . import c\nthing = 1\n")
    (package / "sub" / "c.py").write_text("import pyspark.sql\nfrom rsp_jobs.a import f\n")
    graph = import_graph(package)
    assert graph["rsp_jobs.a"] == {"rsp_jobs.sub": 2}
    assert graph["rsp_jobs.sub.c"] == {"pyspark.sql": 1, "rsp_jobs.a": 2}
    cycle = ["rsp_jobs.a", "rsp_jobs.sub", "rsp_jobs.sub.b", "rsp_jobs.sub.c", "rsp_jobs.a"]
    assert cycles(graph) == [(sorted(cycle[:-1]), cycle)]
