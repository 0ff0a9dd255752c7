"""The package's shape: no import cycles, and no module longer than 1,200 lines.

An import cycle makes the import order matter (a module may see the other
half-initialised) and couples modules that should be layered; a module of
thousands of lines mixes responsibilities (issue 32). Both are read from the
sources with :mod:`ast`, so the checks need no import of the package.
"""

import ast
import importlib

from conftest import REPO

PACKAGE = REPO / "sklearn_fairaes"
MAX_LINES = 1200


def _module_name(path):
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test):
    # `if TYPE_CHECKING:` / `if typing.TYPE_CHECKING:` never runs
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree):
    """Every import statement that can run: module level or inside functions."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        stack.extend(ast.iter_child_nodes(node))


def _import_graph():
    """``{module: {imported package module, ...}}`` over ``sklearn_fairaes``."""
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_module_name(p): p for p in paths}
    graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        targets = set()
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # `from pkg import mod` imports a module; `from mod import name` not
                candidates = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
            for target in candidates:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _ignoring_packages(graph):
    """The graph without edges into a package's ``__init__`` from its own modules.

    ``from . import _x`` in ``pkg/mod.py`` resolves to ``pkg`` first, and a
    package's ``__init__`` imports its modules: that is Python's normal
    package initialisation, not a cycle between two modules.
    """
    return {
        name: {t for t in targets if not name.startswith(t + ".")}
        for name, targets in graph.items()
    }


def test_the_import_graph_is_read():
    graph = _import_graph()
    # the control: imports at module level, inside functions, and relative
    assert (
        "sklearn_fairaes.metrics._pairs._engine"
        in graph["sklearn_fairaes.metrics._individual"]
    )
    assert (
        "sklearn_fairaes.metrics._pairs._review_screened"
        in graph["sklearn_fairaes.metrics._pairs._review_pass"]
    )  # a lazy import
    assert (
        "sklearn_fairaes.metrics._pairs._types"
        in graph["sklearn_fairaes.metrics._pairs._torch_backend"]
    )


def test_no_import_cycles():
    cycles = _cycles(_ignoring_packages(_import_graph()))
    assert not cycles, f"import cycles among sklearn_fairaes modules: {cycles}"


def test_the_cycle_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_over_the_line_limit():
    lengths = {
        str(p.relative_to(REPO)): len(p.read_text().splitlines())
        for p in sorted(PACKAGE.rglob("*.py"))
    }
    too_long = {p: n for p, n in lengths.items() if n > MAX_LINES}
    assert not too_long, (
        f"modules over {MAX_LINES} lines (split them by responsibility): {too_long}"
    )


#: The pair engine's modules, each importing only modules before it (the
#: order of ``sklearn_fairaes/metrics/_pairs/__init__.py``'s docstring).
PAIRS_LAYERS = [
    "_types",
    "_scaling",
    "_blocks",
    "_results",
    "_distances",
    "_kernels",
    "_torch_backend",
    "_range",
    "_range_int8",
    "_engine",
    "_reducers",
    "_keys",
    "_counters",
    "_bootstrap_pairs",
    "_review_stats",
    "_bootstrap_quantiles",
    "_review_fused",
    "_review_screened",
    "_review_pass",
]


def test_the_pair_engine_is_layered():
    prefix = "sklearn_fairaes.metrics._pairs."
    graph = _import_graph()
    modules = sorted(m[len(prefix) :] for m in graph if m.startswith(prefix))
    assert modules == sorted(PAIRS_LAYERS), "add the new module to PAIRS_LAYERS"
    upward = {
        module: sorted(
            target[len(prefix) :]
            for target in graph[prefix + module]
            if target.startswith(prefix)
            and PAIRS_LAYERS.index(target[len(prefix) :]) >= PAIRS_LAYERS.index(module)
        )
        for module in PAIRS_LAYERS
    }
    upward = {module: targets for module, targets in upward.items() if targets}
    assert not upward, f"imports of later layers (see PAIRS_LAYERS): {upward}"


def _public_home(module, name):
    """The nearest public package above ``module`` that exports ``name``, or None."""
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if any(part.startswith("_") for part in parts[1:i]):
            continue
        package = importlib.import_module(".".join(parts[:i]))
        if name in getattr(package, "__all__", ()):
            return package.__name__
    return None


def test_tests_import_public_names_from_their_public_path():
    """A test imports a private module only for what no public package exports."""
    found = []
    for path in sorted((REPO / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("sklearn_fairaes.")
                and any(part.startswith("_") for part in node.module.split(".")[1:])
            ):
                continue
            for alias in node.names:
                home = _public_home(node.module, alias.name)
                if home is not None:
                    found.append(f"{path.name}:{node.lineno}: {alias.name} from {home}")
    assert not found, f"import these from their public path: {found}"
