"""The API reference (docs/api.rst) lists every public name.

autosummary documents only what api.rst names, so a new public function that
is not added there would be missing from the site without any warning.
"""

import importlib
import re

from conftest import REPO
from test_docstrings import PUBLIC

API = REPO / "docs" / "api.rst"


def _documented():
    text = API.read_text(encoding="utf-8")
    names = set()
    module = "sklearn_fairaes"
    for line in text.splitlines():
        if m := re.match(r"\.\. currentmodule:: (\S+)", line):
            module = m.group(1)
        elif m := re.match(r"   ([A-Za-z_][A-Za-z0-9_]*)$", line):
            names.add(f"{module}.{m.group(1)}")
        elif m := re.match(r"\.\. auto(?:data|function|class):: (\S+)", line):
            names.add(m.group(1))
    return names


def _resolve(name):
    module, attr = name.rsplit(".", 1)
    return getattr(importlib.import_module(module), attr, None)


def test_every_public_name_is_in_the_api_reference():
    documented = {id(_resolve(name)) for name in _documented()}
    missing = [q for q, obj in PUBLIC if id(obj) not in documented]
    assert not missing, f"add to docs/api.rst: {missing}"


def test_every_api_entry_exists():
    unknown = [name for name in sorted(_documented()) if _resolve(name) is None]
    assert not unknown, f"docs/api.rst names what does not exist: {unknown}"
