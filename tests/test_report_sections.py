"""The report's sections: one list orders them, one module and one template add one.

Issue 32: a section owns its room. A toy section written outside the package
(a module and a template in a temporary folder), registered through
``register_section``, must reach the HTML, ``results.json`` and
``tables/*.csv`` with no other edit; ``sections=`` / ``--sections`` run and
show only the sections asked for and refuse an unknown id.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pandas as pd
import pytest
from conftest import require_module

import sklearn_fairaes as sf
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report.analyses import SECTIONS, register_section, section_ids

require_module("jinja2", "report")
require_module("matplotlib", "report")

TOY_MODULE = '''
"""A toy section: the number of essays per representation."""

import pandas as pd

from sklearn_fairaes.report._cells import _num, _present, _table
from sklearn_fairaes.report.analyses import AnalysisOutput, Heading, Section


class ToyAnalysis:
    name = "toy"

    def absent(self, study):
        return None

    def run(self, study):
        rows = [{"representation": r, "n_toy": study.n} for r in study.spaces]
        return AnalysisOutput(tables={"toy_counts": pd.DataFrame(rows)})


def view(tables, meta, prompt):
    if not _present(tables, "toy_counts"):
        return {"table": None}
    rows = [[r, _num(n)] for r, n in zip(tables["toy_counts"]["representation"],
                                         tables["toy_counts"]["n_toy"])]
    return {"table": _table(["Representation", "Toy essays"], rows, caption="Toy counts")}


SECTION = Section(
    "toy",
    (Heading("toy", "A toy section", ("toy_counts",)),),
    analysis=ToyAnalysis(),
    view=view,
    schema={"toy_counts": ("representation", "n_toy")},
    template_dir=TEMPLATES,
)
'''

TOY_TEMPLATE = """\
{% import "_macros.html.j2" as m %}
{% call m.section(s[0], level, "A toy reading guide (the agreement is section " ~ ref.agreement ~ ").") %}
{% if v.table %}{{ m.table(v.table) }}{% else %}{{ m.absent(reason) }}{% endif %}
{% endcall %}
"""


@pytest.fixture
def toy(tmp_path):
    """The toy section, written to a temporary folder and registered; removed after."""
    folder = tmp_path / "toy_section"
    (folder / "sections").mkdir(parents=True)
    (folder / "sections" / "toy.html.j2").write_text(TOY_TEMPLATE, encoding="utf-8")
    module_path = folder / "toy_section.py"
    module_path.write_text(
        textwrap.dedent(TOY_MODULE).replace("TEMPLATES", repr(str(folder))),
        encoding="utf-8",
    )
    spec = importlib.util.spec_from_file_location("toy_section", module_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    section = register_section(module.SECTION, after="agreement")
    try:
        yield section
    finally:
        SECTIONS.remove(section)
        sys.modules.pop("toy_section", None)


def _audit(**kwargs):
    df = sf.load_demo_essays().iloc[:30]
    return sf.audit(
        df,
        text_col="essay",
        score_col="score",
        systems={"engine": df["score"].to_numpy()},
        score_range=(0, 12),
        representations=["tfidf"],
        cv=2,
        **kwargs,
    )


def test_one_list_orders_the_report():
    assert section_ids() == [
        "overview", "summary", "agreement", "extremes", "paraphrase", "lipschitz",
        "review", "errors", "groups", "counterfactual", "short_answers", "retest",
    ]  # fmt: skip
    for section in SECTIONS:
        assert section.title == section.headings[0].title
        assert section.template == f"sections/{section.id}.html.j2"
        assert (section.analysis is None) == (not section.per_prompt)


def test_register_section_refuses_a_taken_id_and_an_unknown_anchor():
    with pytest.raises(ValueError, match="already registered"):
        register_section(SECTIONS[2])
    with pytest.raises(ValueError, match="after='nope' is no section; the sections are"):
        register_section(SECTIONS[2].__class__("x", SECTIONS[2].headings), after="nope")


def test_a_toy_section_reaches_html_json_and_csv(toy, tmp_path):
    result = _audit(sections=["overview", "agreement", "toy"])
    # its analysis ran on the study; its table is stacked with the prompt in front
    assert list(result.tables["toy_counts"].columns) == [
        "prompt",
        "representation",
        "n_toy",
    ]
    out = tmp_path / "report"
    result.save(out)
    page = (out / "report.html").read_text(encoding="utf-8")
    # numbered after the agreement, and the template's reference to it resolved
    assert 'id="section-3"' in page and "3 A toy section" in page
    assert "the agreement is section 2" in page
    assert "<caption>Toy counts</caption>" in page
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["tables"]["toy_counts"] == [
        {"prompt": "all", "representation": "tfidf", "n_toy": 30}
    ]
    assert data["meta"]["sections"] == ["overview", "agreement", "toy"]
    csv = pd.read_csv(out / "tables" / "toy_counts.csv")
    assert csv.to_dict("records") == [
        {"prompt": "all", "representation": "tfidf", "n_toy": 30}
    ]
    # the sections not selected were neither run nor shown, and the overview says so
    assert "lipschitz" not in result.tables and "extreme_pairs" not in result.tables
    assert "Individual fairness: Lipschitz fraction</h2>" not in page
    assert "not selected (sections=..., --sections)" in page
    assert "Sections run" in page


def test_an_unknown_section_is_refused_naming_the_valid_ids():
    with pytest.raises(
        AuditInputError, match="unknown section id\\(s\\) 'nope'.*agreement"
    ):
        _audit(sections=["agreement", "nope"])


def test_the_command_refuses_an_unknown_section(tmp_path, capsys):
    code = main(["demo", "--out", str(tmp_path / "out"), "--sections", "agreement,nope"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "'nope'" in err and "short_answers" in err
