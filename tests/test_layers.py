"""The package's import graph: no cycles, and every import points down the layers.

Read from the source (``ast``), so an import inside a function counts as much as one at the
top of a file.
"""

import ast
from pathlib import Path

import lit_seq

PACKAGE = Path(lit_seq.__file__).parent

# top-level part of lit_seq -> its layer; a module may import its own layer or lower ones
LAYERS = {
    "util": 0,
    "record": 1,
    "models": 2,
    "data": 2,
    "results": 2,
    "systems": 3,
    "fit": 4,
    "population": 5,
    "ablate": 6,
    "report": 7,
    "evaluate": 7,
    "compare": 7,
    "bench": 7,
    "api": 8,  # the Python API: a fit and a grid as functions, over everything
}
# same layer, still independent of each other (SPEC: models | data)
APART = {("models", "data"), ("data", "models")}


def _module_name(path: Path) -> str:
    parts = ["lit_seq", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """lit_seq module -> the lit_seq modules it imports (a package counts as its __init__)."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from .x import y
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets |= {base} | {f"{base}.{a.name}" for a in node.names}
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_every_part_of_the_package_has_a_layer():
    parts = {_part(m) for m in import_graph()} - {""}
    assert parts == set(LAYERS), "give a new module its layer in LAYERS"


def test_imports_point_down_the_layers_only():
    upward = [
        f"{src} -> {dst}"
        for src, targets in import_graph().items()
        for dst in targets
        if _part(src) and _part(dst) and _part(src) != _part(dst)
        if LAYERS[_part(dst)] > LAYERS[_part(src)] or (_part(src), _part(dst)) in APART
    ]
    assert upward == []


def test_no_import_cycles():
    graph = import_graph()
    state: dict[str, str] = {}  # module -> "open" while on the path, "done" after

    def visit(module: str, path: list[str]) -> list[str]:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path, module, target]
            if target not in state and (cycle := visit(target, [*path, module])):
                return cycle
        state[module] = "done"
        return []

    for module in sorted(graph):
        if module not in state:
            assert visit(module, []) == [], "import cycle"


def test_the_graph_sees_imports_inside_functions():
    # the control: ray_executor imports run_one only inside functions
    assert "lit_seq.ablate.run_one" in import_graph()["lit_seq.ablate.ray_executor"]
