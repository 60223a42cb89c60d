"""The package's layering: no import circle in aucopt/, the base imports neither the
registry nor the package face, learner modules never import the registry."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "aucopt"


def _module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path):
    """Every aucopt module imported anywhere in ``path`` (function bodies included)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m == "aucopt" or m.startswith("aucopt.")}


def _graph():
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        # a name imported from a package that is itself a module counts as that module
        graph[name] = {m for m in _imports(path) if m in modules and m != name}
    return graph


def test_no_import_circle():
    graph = _graph()
    state = {}

    def visit(node, trail):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_base_does_not_import_upwards():
    imported = _imports(PACKAGE / "base.py")
    assert "aucopt" not in imported
    assert not {m for m in imported if m.startswith("aucopt.registry")
                or m.startswith("aucopt.learners") or m.startswith("aucopt.persistence")}


def test_learner_modules_do_not_import_the_registry():
    for path in (PACKAGE / "learners").glob("*.py"):
        assert not {m for m in _imports(path) if m.startswith("aucopt.registry")}, path.name
