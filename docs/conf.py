"""Sphinx configuration of the sklearn-fairaes documentation.

The build is offline (no intersphinx, no remote images) and strict: ``make docs``
runs ``sphinx-build -W --keep-going``, so every warning fails it.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import sklearn_fairaes  # noqa: E402

project = "sklearn-fairaes"
author = "the sklearn-fairaes developers"
copyright = f"2026, {author}"
release = sklearn_fairaes.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "replication/*.md",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "**.zip",
]
templates_path = ["_templates"]

# -- API reference --------------------------------------------------------------
# Every cross-reference to this package must resolve (checked with -W); those
# to other libraries cannot offline (no intersphinx) and render as plain code.
nitpicky = True
nitpick_ignore_regex = [
    (
        r"py:.*",
        r"(sklearn|scipy|numpy|pandas|joblib|matplotlib|dask|distributed|torch)(\..*)?",
    ),
    # scikit-learn's warning, re-exported for one filterwarnings entry
    (r"py:.*", r"sklearn_fairaes\.exceptions\.UndefinedMetricWarning"),
    # private base classes named by :show-inheritance: (documented through
    # their public subclasses)
    (r"py:class", r"sklearn_fairaes(\.\w+)*\._\w+(\.\w+)*"),
    # fitted attributes (idf_, ...) that numpydoc links from "Attributes"
    (r"py:obj", r"[a-z][a-z0-9_]*_"),
]
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's "Parameters" sections carry the types
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# numpydoc's validator runs in tests/test_docstrings.py; here we only render

# -- examples gallery -----------------------------------------------------------
# Files named plot_*.py run at build time on the demo corpus (seconds). The others
# need real data and minutes (the replication takes 12 minutes on two cores); they
# are shown with their code and their recorded results, not run.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    # "Examples using X" on each API page
    "backreferences_dir": "generated/backreferences",
    "doc_module": ("sklearn_fairaes",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "matplotlib_animations": False,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
}

# -- user-guide figures (matplotlib's plot directive) ---------------------------
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_rcparams = {"figure.figsize": (6.4, 3.6), "figure.dpi": 110}
plot_pre_code = "import numpy as np\nimport matplotlib.pyplot as plt\n"

# -- Markdown pages (user guide chapters, replication and benchmark records) -----
# no math extensions: MathJax would load from a CDN, and the site must read offline
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# -- HTML -------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-fairaes {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    # offline build: no version switcher, no external icons fetched at build time
    "icon_links": [],
}
html_show_sourcelink = False

# Headless figure rendering, and the examples' own progress output kept quiet.
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TQDM_DISABLE", "1")
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg")


# -- the command line's help, written at build time so it cannot drift ------------
def _write_cli_help() -> None:
    from sklearn_fairaes.cli import build_parser

    parser = build_parser()
    out = DOCS / "generated" / "cli"
    out.mkdir(parents=True, exist_ok=True)
    (out / "fairaes.txt").write_text(parser.format_help())
    subparsers = next(
        a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"
    )
    for name, sub in subparsers.choices.items():
        (out / f"fairaes-{name}.txt").write_text(sub.format_help())


os.environ.setdefault("COLUMNS", "88")  # argparse wraps help to the terminal width
_write_cli_help()


# -- one object, several public paths ---------------------------------------------
# A public object is documented once (sklearn_fairaes.qwk) but reachable under
# its subpackage too (sklearn_fairaes.metrics.qwk), and docstrings use both, or
# a bare name resolved in a private module's context. Resolve such references
# to the documented object when the name denotes the same object.
_DOCUMENTED: dict[int, str] | None = None


def _lookup(path: str) -> object | None:
    import importlib

    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _resolve_alias(app, env, node, contnode):  # type: ignore[no-untyped-def]
    from sphinx.util.nodes import make_refnode

    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    global _DOCUMENTED
    if _DOCUMENTED is None:
        _DOCUMENTED = {}
        for name in domain.objects:
            obj = _lookup(name) if name.startswith("sklearn_fairaes") else None
            # identity says nothing for None, numbers or strings (shared values)
            if obj is not None and not isinstance(obj, (str, int, float, bool)):
                _DOCUMENTED.setdefault(id(obj), name)
    target = node["reftarget"].lstrip("~.")
    candidates = [target]
    if "." not in target:  # a bare name, as written in a private module
        candidates += [n for n in domain.objects if n.rsplit(".", 1)[-1] == target]
    for candidate in candidates:
        obj = _lookup(candidate) if candidate.startswith("sklearn_fairaes") else None
        name = _DOCUMENTED.get(id(obj)) if obj is not None else None
        if name is not None:
            entry = domain.objects[name]
            return make_refnode(
                app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, name
            )
    return None


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("missing-reference", _resolve_alias)
