"""The package's layering: no import circle in aucopt/, every module imports only its
own layer or lower ones (:data:`LAYERS`), the base imports neither the registry nor
the package face, learner modules never import the registry; and the distributed
driver, the command line and the tools use learners through public interfaces
only (:func:`test_dask_cli_and_tools_use_no_private_learner_names`)."""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "aucopt"
TOOLS = PACKAGE.parent / "tools"

# The layers of aucopt, lowest first: a module may import modules of its own layer or
# of lower ones (a name ending in ".*" covers a package and its modules). Every
# module must be placed.
LAYERS = (
    # primitives: kernels, state declarations, file format, class traits
    ("aucopt._version", "aucopt._atomic", "aucopt._estimator", "aucopt._state",
     "aucopt._format", "aucopt._docs", "aucopt._kernels", "aucopt.exceptions", "aucopt.traits"),
    # checked data, metrics, data sets, feature maps, model selection, plots
    ("aucopt.validation", "aucopt.metrics", "aucopt.datasets.*", "aucopt.features",
     "aucopt.model_selection", "aucopt.plot"),
    ("aucopt.driver",),  # the driver: training calls, transactions
    ("aucopt.merging",),  # merge, on the driver's transactions
    ("aucopt.base",),  # the learner skeleton
    ("aucopt.learners.*",),
    ("aucopt.registry",),
    ("aucopt.persistence",),  # load needs the registry
    # the faces: the package, the contract suite, the cluster driver, the command line
    ("aucopt", "aucopt.testing", "aucopt.dask", "aucopt.cli", "aucopt.extend"),
)


def _module_name(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path, modules=()):
    """Every aucopt module imported anywhere in ``path`` (function bodies included).
    ``from package import name`` counts as the module ``package.name`` alone when that
    is one of ``modules`` (else as ``package`` and ``package.name``)."""
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
            names = {f"{mod}.{a.name}" for a in node.names}
            if not names <= set(modules):
                out.add(mod)
            out.update(names)
    return {m for m in out if m == "aucopt" or m.startswith("aucopt.")}


def _modules():
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _graph():
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        # a name imported from a package that is itself a module counts as that module
        graph[name] = {m for m in _imports(path, modules) if m in modules and m != name}
    return graph


def _layer(module):
    """The index of ``module``'s layer in :data:`LAYERS` (None: not placed)."""
    for index, layer in enumerate(LAYERS):
        for entry in layer:
            if module == entry or entry.endswith(".*") and (
                    module == entry[:-2] or module.startswith(entry[:-1])):
                return index
    return None


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


def test_every_module_imports_only_its_layer_or_lower_ones():
    graph = _graph()
    unplaced = sorted(m for m in graph if _layer(m) is None)
    assert not unplaced, f"modules without a layer in LAYERS: {unplaced}"
    upward = sorted(f"{m} -> {n}" for m, targets in graph.items() for n in targets
                    if _layer(n) > _layer(m))
    assert not upward, "upward imports: " + "; ".join(upward)


def test_base_does_not_import_upwards():
    imported = _imports(PACKAGE / "base.py")
    assert "aucopt" not in imported
    assert not {m for m in imported if m.startswith("aucopt.registry")
                or m.startswith("aucopt.learners") or m.startswith("aucopt.persistence")}


def test_learner_modules_do_not_import_the_registry():
    for path in (PACKAGE / "learners").glob("*.py"):
        assert not {m for m in _imports(path) if m.startswith("aucopt.registry")}, path.name


# Names a strict reading would flag that are clearly not a learner's: the standard
# library's documented ``os._exit`` (a forked child leaves without cleanup).
NOT_LEARNER_PRIVATE = {("os", "_exit")}
# The extension API for plugins is public though its helpers reach into learners.
PUBLIC_EXCEPTIONS = ("aucopt.extend",)


def _private_uses(path, root=PACKAGE.parent):
    """Every place in ``path`` that reads a private name: an attribute ``obj._name``
    (dunders excepted, :data:`NOT_LEARNER_PRIVATE` allowed), ``getattr`` / ``hasattr``
    / ``setattr`` / ``delattr`` of a literal ``"_name"``, an import of a private
    module of aucopt (a dotted part starting with ``_``) or of a private name from
    aucopt (:data:`PUBLIC_EXCEPTIONS` excepted). Strict on purpose: these files
    drive learners through :mod:`aucopt.driver`, the traits and the public API."""
    def private(name):
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))

    def private_module(module):
        if not (module == "aucopt" or module.startswith("aucopt.")):
            return False
        if any(module == e or module.startswith(e + ".") for e in PUBLIC_EXCEPTIONS):
            return False
        return any(private(part) for part in module.split("."))

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if (owner, node.attr) not in NOT_LEARNER_PRIVATE:
                found.append(f"{where} reads {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr", "setattr", "delattr") \
                and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and private(node.args[1].value):
            found.append(f"{where} {node.func.id}s {node.args[1].value!r}")
        elif isinstance(node, ast.Import):
            found += [f"{where} imports {a.name}" for a in node.names
                      if private_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if private_module(node.module):
                found.append(f"{where} imports from {node.module}")
            elif node.module == "aucopt" or node.module.startswith("aucopt."):
                found += [f"{where} imports {node.module}.{a.name}" for a in node.names
                          if private(a.name)]
    return found


def _driving_files(root=PACKAGE.parent):
    return [root / "aucopt" / "dask.py", root / "aucopt" / "cli.py",
            *sorted((root / "tools").glob("*.py"))]


def test_dask_cli_and_tools_use_no_private_learner_names():
    files = _driving_files()
    assert len(files) > 10, "tools/ not found"
    found = [use for path in files for use in _private_uses(path)]
    assert not found, "private names read by dask, cli or tools:\n" + "\n".join(found)


def test_tools_run_against_the_installed_package():
    """No tool edits ``sys.path`` (putting the source tree first would test it instead
    of the installed package; a script's own folder is first already)."""
    edits = [f"{path.name}:{node.lineno}" for path in sorted(TOOLS.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in ("insert", "append")
             and isinstance(node.value, ast.Attribute) and node.value.attr == "path"
             and isinstance(node.value.value, ast.Name) and node.value.value.id == "sys"]
    assert not edits, f"sys.path edits in tools/: {edits}"


def test_the_private_name_check_catches_each_kind_of_reach_in(tmp_path):
    """The check above is only as good as what it flags: each kind of reach-in, and
    nothing in public code of the same shape."""
    source = tmp_path / "snippet.py"
    source.write_text(
        "import os\n"
        "import aucopt._format\n"
        "from aucopt._kernels._weights import dense_scores\n"
        "from aucopt.base import _weighted_copies\n"
        "from aucopt import driver, extend, _state\n"
        "from aucopt.extend import row_dot\n"
        "model._learn_chunk(X, y)\n"
        "type(model)._merge\n"
        "hasattr(model, '_segment_streams')\n"
        "model.__dict__, model.fit(X, y), model.traits.merge\n"
        "os._exit(0)\n")
    found = _private_uses(source, root=tmp_path)
    lines = sorted(int(f.split(":")[1].split()[0]) for f in found)
    assert lines == [2, 3, 4, 5, 7, 8, 9], found
