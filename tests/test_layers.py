"""The package's layers, read from the source (no Spark, no Airflow, nothing imported): every
``import`` of an ``rsp_jobs`` module, at module level or inside a function (a deferred import is
a dependency all the same, and a cycle through one only shows at run time, in whichever order
the modules happen to load).

- no import cycle between modules;
- ``rsp_jobs.times``, ``rsp_jobs.settings`` and ``rsp_jobs.results`` are leaves that every layer may use;
- the language and the algebra (parsing, plans) know nothing of Spark, Airflow, the store or the
  orchestration, so that they can be checked and tested without them.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "rsp_jobs"

# what each leaf may import of the package; settings may read durations with times (itself a leaf)
LEAVES = {"rsp_jobs.times": {"rsp_jobs.errors"},
          "rsp_jobs.settings": {"rsp_jobs.errors", "rsp_jobs.times"},
          "rsp_jobs.results": {"rsp_jobs.times"}}  # typed results: every layer reads them
PURE = ("rsp_jobs.language", "rsp_jobs.algebra", "rsp_jobs.physical")
PURE_MUST_NOT_IMPORT = ("pyspark", "airflow", "rsp_jobs.spark", "rsp_jobs.store", "rsp_jobs.orchestrate")


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


def test_no_import_cycle():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "\n".join(_describe(group, cycle, graph) for group, cycle in found)


def test_times_and_settings_are_leaves():
    graph = import_graph()
    for leaf, allowed in LEAVES.items():
        used = {m for m in graph[leaf] if m.startswith("rsp_jobs")}
        assert used <= allowed, f"{leaf} imports {sorted(used - allowed)}; it may import only {sorted(allowed)}"


def test_language_and_algebra_know_nothing_of_spark_airflow_store_or_orchestration():
    graph = import_graph()
    wrong = [f"{name} imports {target} (line {line})"
             for name, targets in sorted(graph.items()) if name.startswith(PURE)
             for target, line in sorted(targets.items())
             if any(target == banned or target.startswith(banned + ".") for banned in PURE_MUST_NOT_IMPORT)]
    assert not wrong, "\n".join(wrong)


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
