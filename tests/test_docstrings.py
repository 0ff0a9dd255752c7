"""Every public name has a valid numpydoc docstring with a runnable example.

"Public" means listed in ``__all__`` of the package or of one of its public
subpackages (and the public helpers of ``resources`` and ``cli``). The examples
themselves run as doctests (``--doctest-modules`` in setup.cfg); this file checks
that they exist and that the docstrings follow numpydoc, using numpydoc's own
validator so the rules are the ecosystem's, not ours.
"""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from conftest import require_module

import sklearn_fairaes

validate = require_module("numpydoc.validate", "dev").validate

# numpydoc's checks we do not enforce, with the reason:
IGNORED = {
    "ES01",  # extended summary: many small functions need none
    "SA01",  # "See Also": welcome, not mandatory
    "SA04",  # a description for each "See Also" entry
    "RT02",  # sklearn's convention names the returned value ("score : float")
    "GL08",  # checked separately below so the message names the object
}
# methods are covered by their class's example, as in scikit-learn
IGNORED_FOR_METHODS = IGNORED | {"EX01"}


def _public_modules():
    yield sklearn_fairaes
    for info in pkgutil.iter_modules(sklearn_fairaes.__path__):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"sklearn_fairaes.{info.name}")


def _public_objects():
    seen = {}
    for module in _public_modules():
        names = getattr(module, "__all__", None)
        if names is None:  # cli, resources: modules without __all__
            names = [
                n
                for n, obj in vars(module).items()
                if not n.startswith("_")
                and callable(obj)
                and getattr(obj, "__module__", None) == module.__name__
            ]
        for name in names:
            obj = getattr(module, name)
            if not callable(obj):
                continue  # constants are documented in their module's docstring
            if not getattr(obj, "__module__", "").startswith("sklearn_fairaes"):
                continue  # re-exported from scikit-learn, documented there
            seen.setdefault(id(obj), (f"{module.__name__}.{name}", obj))
    return sorted(seen.values())


PUBLIC = _public_objects()


def _own_methods(cls):
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(member, property) or inspect.isfunction(member):
            yield name


def _errors(qualname, ignored):
    result = validate(qualname)
    return [f"{code}: {msg}" for code, msg in result["errors"] if code not in ignored]


def test_there_are_public_names():
    assert len(PUBLIC) > 60


@pytest.mark.parametrize("qualname,obj", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_public_docstring(qualname, obj):
    assert inspect.getdoc(obj), f"{qualname} has no docstring"
    errors = _errors(qualname, IGNORED)
    if inspect.isclass(obj):
        for method in _own_methods(obj):
            member = getattr(obj, method)
            if method != "__call__" and not (member.__doc__ or "").strip():
                errors.append(f"{method}: no docstring")
                continue
            errors += [
                f"{method}: {e}"
                for e in _errors(f"{qualname}.{method}", IGNORED_FOR_METHODS)
            ]
    assert not errors, f"{qualname}:\n  " + "\n  ".join(errors)


# an example's import line: ">>> from sklearn_fairaes.x._y import a, b"
_EXAMPLE_IMPORT = re.compile(
    r"^\s*>>> from (sklearn_fairaes[\w.]*) import \(?([\w, ]+)\)?\s*$", re.MULTILINE
)


def _docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(
            node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        ):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "lineno", 1), doc


def test_examples_import_public_names_from_their_public_path():
    # users copy the examples: a public name imported from a private module
    # ("from sklearn_fairaes.metrics._agreement import qwk") teaches a path
    # that may move; internal helpers that only a private module has may stay
    public = {}
    for module in _public_modules():
        for name in getattr(module, "__all__", ()):
            public.setdefault(id(getattr(module, name)), f"{module.__name__}.{name}")
    root = Path(sklearn_fairaes.__file__).parent
    found, wrong = 0, []
    for path in sorted(root.rglob("*.py")):
        for line, doc in _docstrings(ast.parse(path.read_text(encoding="utf-8"))):
            for module_name, names in _EXAMPLE_IMPORT.findall(doc):
                if not any(p.startswith("_") for p in module_name.split(".")):
                    continue
                module = importlib.import_module(module_name)
                for name in filter(None, (n.strip() for n in names.split(","))):
                    found += 1
                    obj = getattr(module, name)
                    if id(obj) in public:
                        where = (
                            f"{path.relative_to(root.parent)} (docstring at line {line})"
                        )
                        wrong.append(
                            f"{where}: from {module_name} import {name}; use "
                            f"{public[id(obj)].rpartition('.')[0]}"
                        )
    assert found > 0  # the scan sees the examples' imports
    assert not wrong, "\n".join(wrong)
