"""The report renderers: figures (_plots), the HTML page and the JSON data (_html)."""

from __future__ import annotations

import base64
import datetime
import io
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from conftest import require_module
from hypothesis import given, settings
from hypothesis import strategies as st

pd = require_module("pandas", "report")
matplotlib = require_module("matplotlib", "report")

from markupsafe import escape  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from report_fixtures import (  # noqa: E402
    CONTRACT_COLUMNS,
    GROUP_TABLES,
    HOSTILE_TEXT,
    META_KEYS,
    RETEST_TABLES,
    SCORES_ONLY,
    SHORT_ANSWER_TABLES,
    make_audit_tables,
)

from sklearn_fairaes.report._html import (  # noqa: E402
    SECTION_TITLES,
    SUMMARY_TITLE,
    _environment,
    render_html,
    to_json_dict,
)
from sklearn_fairaes.report._plots import (  # noqa: E402
    MODEL_LABELS,
    figure_key,
    model_colors,
    representation_label,
)
from sklearn_fairaes.report.analyses import (  # noqa: E402
    FIGURE_NAMES,
    SECTIONS,
    make_figures,
)
from sklearn_fairaes.report.analyses._groups import (  # noqa: E402
    plot_group_agreement,
    plot_group_lipschitz,
)
from sklearn_fairaes.report.analyses._lipschitz import (  # noqa: E402
    plot_lipschitz,
    plot_score_distance,
)


def _esc(text, quote=True):
    """Text as the report's templates escape it (Jinja2 autoescaping: markupsafe)."""
    return str(escape(text))


def _titles(*left_out):
    """SECTION_TITLES without the headings of the section ids ``left_out``."""
    gone = {h.title for s in SECTIONS if s.id in left_out for h in s.headings}
    return tuple(t for t in SECTION_TITLES if t not in gone)


#: The sections of an essay audit (no short answers; scored once: no
#: test-retest section, whose tables the fixture does not make), in order.
ESSAY_SECTIONS = _titles("short_answers", "retest")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMG_RE = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)"')


def _png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=40)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def audit():
    return make_audit_tables()


@pytest.fixture(scope="module")
def figures(audit):
    return make_figures(*audit)


@pytest.fixture(scope="module")
def page(audit, figures):
    return render_html(*audit, figures)


# --------------------------------------------------------------------------- the fixture


def test_fixture_follows_the_contract(audit):
    tables, meta = audit
    essay_tables = {
        k: v
        for k, v in CONTRACT_COLUMNS.items()
        if k not in SHORT_ANSWER_TABLES and k not in RETEST_TABLES
    }
    for name, columns in essay_tables.items():
        assert list(tables[name].columns) == columns, name
    assert set(tables) == set(essay_tables) | {"features", "predictions"}
    assert list(tables["features"].columns) == ["prompt", "id", *meta["features"]]
    assert list(tables["predictions"].columns[:3]) == ["prompt", "id", "score"]
    assert set(meta) == set(META_KEYS)
    assert set(tables["lipschitz"]["system"]) == {*meta["models"], "human"}
    assert set(meta["systems"]) == set(meta["models"])
    assert set(tables["agreement"]["prompt"]) == {"all"}
    assert set(tables["score_distance"]["n_bins"]) == {5, 100}
    json.dumps(meta, allow_nan=False)


# --------------------------------------------------------------------------- figures


def test_make_figures_builds_every_figure_and_each_saves_as_png(figures):
    assert list(figures) == list(FIGURE_NAMES)
    for name, fig in figures.items():
        png = _png(fig)
        assert png.startswith(PNG_SIGNATURE), name
        assert fig.get_suptitle(), f"figure {name} has no title"


FIGURES_OF_TABLE = {
    "extreme_pair_features": {"extreme_pairs"},
    "feature_profile": {"feature_profile"},
    "lipschitz": {"lipschitz"},
    "distance_distribution": {"distance_distribution"},
    "score_distance": {"score_distance_5", "score_distance_100"},
    "group_agreement": {"group_agreement"},
    "group_lipschitz": {"group_lipschitz"},
    "perturbation": {"perturbation"},
}


def test_each_figure_needs_only_its_own_table(audit):
    tables, meta = audit
    others = {
        "agreement",
        "trend",
        "paraphrase",
        "features",
        "predictions",
        "extreme_pairs",
    }
    for name, expected in FIGURES_OF_TABLE.items():
        kept = {k: tables[k] for k in (*others, name)}
        assert set(make_figures(kept, meta)) == expected, name
        # the same table present but empty counts as missing
        assert make_figures(dict(kept, **{name: tables[name].iloc[:0]}), meta) == {}, name
    assert set().union(*FIGURES_OF_TABLE.values()) == set(FIGURE_NAMES)


def test_tables_that_no_figure_needs_give_no_figures(audit):
    tables, meta = audit
    unrelated = {k: v for k, v in tables.items() if k not in FIGURES_OF_TABLE}
    assert make_figures(unrelated, meta) == {}


def test_no_tables_no_figures():
    assert make_figures({}, {}) == {}
    assert make_figures({}, None) == {}


def test_only_five_bins_gives_only_the_five_bin_figure(audit):
    tables, meta = audit
    kept = dict(tables, score_distance=tables["score_distance"].query("n_bins == 5"))
    built = make_figures(kept, meta)
    assert "score_distance_5" in built and "score_distance_100" not in built


@pytest.mark.parametrize(
    "representations, models",
    [
        (("sbert",), ("gradient_boosting",)),
        (
            ("bow", "tfidf", "sbert", "laser"),
            ("ridge", "random_forest", "gradient_boosting", "svr"),
        ),
    ],
)
def test_figures_for_one_to_four_representations_and_models(representations, models):
    tables, meta = make_audit_tables(representations, models, n_essays=12, k=1, seed=3)
    built = make_figures(tables, meta)
    assert list(built) == list(FIGURE_NAMES)
    n = len(representations)
    for name in ("feature_profile", "distance_distribution", "score_distance_5"):
        titles = [ax.get_title() for ax in built[name].axes]
        assert len(titles) == n, name
    assert len(built["extreme_pairs"].axes) == 2 * n
    assert len(built["group_agreement"].axes) == 3 * n
    assert [ax.get_title() for ax in built["group_lipschitz"].axes] == [
        representation_label(r) for r in representations
    ]
    legend = [t.get_text() for t in built["score_distance_5"].legends[0].get_texts()]
    assert len(legend) == len(models) + 1 and legend[-1] == "Human scores"
    for fig in built.values():
        assert _png(fig).startswith(PNG_SIGNATURE)


def test_a_model_has_the_same_colour_in_every_figure(figures, audit):
    _, meta = audit

    def legend_colours(fig):
        legend = fig.legends[0]
        handles = legend.legend_handles
        out = {}
        for text, handle in zip(legend.get_texts(), handles):
            colour = (
                handle.get_facecolor()
                if hasattr(handle, "get_height")
                else handle.get_color()
            )
            out[text.get_text().removeprefix("|Δscore|: ")] = to_hex(colour)
        return out

    expected = {
        label: to_hex(colour)
        for label, colour in zip(
            ["Ridge", "Random Forest", "Gradient Boosting", "Human scores"],
            model_colors([*meta["models"], "human"]).values(),
        )
    }
    for name in (
        "lipschitz",
        "distance_distribution",
        "score_distance_5",
        "score_distance_100",
    ):
        got = legend_colours(figures[name])
        assert {k: got[k] for k in expected} == expected, name
    assert len(set(expected.values())) == len(expected)


def test_figure_panels_follow_meta_order(audit):
    tables, meta = audit
    only = {"score_distance": tables["score_distance"].query("n_bins == 5")}
    built = make_figures(only, dict(meta, representations=["sbert", "bow", "tfidf"]))
    titles = [ax.get_title() for ax in built["score_distance_5"].axes]
    assert titles == ["Sentence-BERT", "BOW", "TF-IDF"]


def test_labels_from_data_are_literal_text_not_mathtext():
    table = pd.DataFrame(
        {
            "representation": ["$\\frac{bad", "$\\frac{bad"],
            "system": ["ridge", "ridge"],
            "group": ["$x^", "50$ group"],
            "qwk": [0.7, 0.6],
            "smd": [0.1, -0.1],
            "dsm": [0.05, -0.05],
        }
    )
    fig = plot_group_agreement(table)
    assert _png(fig).startswith(PNG_SIGNATURE)  # unescaped, "$\frac{" fails to parse
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [r"\$x^", r"50\$ group"]


def test_group_agreement_figure_draws_dsm_with_its_thresholds(audit):
    tables, meta = audit
    table = tables["group_agreement"]
    fig = plot_group_agreement(table, representations=meta["representations"])
    n = len(meta["representations"])
    dsm_axes = fig.axes[2 * n : 3 * n]
    assert dsm_axes[0].get_ylabel() == "DSM (group vs. all essays)"
    for ax, r in zip(dsm_axes, meta["representations"]):
        refs = sorted({float(line.get_ydata()[0]) for line in ax.get_lines()})
        assert refs == [-0.10, 0.0, 0.10]
        heights = sorted(p.get_height() for p in ax.patches)
        expected = table.loc[table["representation"] == r, "dsm"]
        np.testing.assert_allclose(heights, sorted(expected))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["female", "male", "All essays"]


def test_group_lipschitz_figure_draws_within_and_cross(audit):
    tables, meta = audit
    table = tables["group_lipschitz"]
    fig = plot_group_lipschitz(table, models=meta["models"])
    assert len(fig.axes) == len(meta["representations"])
    for ax, r in zip(fig.axes, meta["representations"]):
        sub = table[table["representation"] == r].set_index(["system", "scope"])
        shown = {}
        for line in ax.get_lines():
            if line.get_marker() in ("o", "^"):
                shown.setdefault(line.get_marker(), []).append(line.get_ydata()[0])
        for marker, scope in (("o", "within"), ("^", "cross")):
            expected = [
                100 * sub.loc[(m, scope), "fraction"] for m in [*meta["models"], "human"]
            ]
            np.testing.assert_allclose(shown[marker], expected)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["Pairs within a group", "Pairs across groups", "All pairs"]
    with pytest.raises(ValueError, match=r"'group_lipschitz' lacks the column\(s\) scope"):
        plot_group_lipschitz(table.drop(columns="scope"))


def test_figures_leave_global_matplotlib_state_alone(audit):
    before = dict(matplotlib.rcParams)
    pyplot_before = "matplotlib.pyplot" in sys.modules
    figs_before = sys.modules["matplotlib.pyplot"].get_fignums() if pyplot_before else []
    make_figures(*audit)
    assert dict(matplotlib.rcParams) == before
    if "matplotlib.pyplot" in sys.modules:
        assert sys.modules["matplotlib.pyplot"].get_fignums() == figs_before
    assert ("matplotlib.pyplot" in sys.modules) == pyplot_before


def test_a_table_without_contract_columns_is_refused():
    with pytest.raises(
        ValueError, match=r"table 'lipschitz' lacks the column\(s\) lipschitz_max"
    ):
        plot_lipschitz(
            pd.DataFrame(
                {"representation": ["bow"], "system": ["ridge"], "lipschitz_minmax": [1]}
            )
        )


def test_score_distance_without_the_requested_bins_is_refused(audit):
    with pytest.raises(ValueError, match="no rows with n_bins=10; it has n_bins 5, 100"):
        plot_score_distance(audit[0]["score_distance"], n_bins=10)


# --------------------------------------------------------------------------- HTML


def _headings(page):
    return re.findall(r"<h2>(.*?)</h2>", page)


def test_sections_in_the_papers_order(page):
    assert page.startswith("<!DOCTYPE html>")
    assert _headings(page) == [f"{i} {t}" for i, t in enumerate(ESSAY_SECTIONS, start=1)]
    assert page.count('class="guide"') == len(ESSAY_SECTIONS)


def test_group_view_only_with_group_tables(audit):
    tables, meta = audit
    kept = {k: v for k, v in tables.items() if k not in GROUP_TABLES}
    page = render_html(kept, meta, {})
    assert _headings(page) == [
        f"{i} {t}"
        for i, t in enumerate([t for t in ESSAY_SECTIONS if t != "Group view"], start=1)
    ]
    assert "Group view" in page  # listed in the overview as left out, with the reason
    assert "no group column was given" in page


def _section(page, number):
    return page.split(f"<h2>{number} ")[1].split("<h2>")[0]


def test_group_view_shows_every_group_table(page, audit):
    tables, _ = audit
    section = _section(page, 9)
    agreement = tables["group_agreement"]
    for value in agreement["dsm"]:
        assert f'<td class="num">{value:.3f}</td>' in section
    for h, sd in zip(agreement["human_mean"], agreement["human_sd"]):
        assert f"{h:.3f} ± {sd:.3f}" in section
    assert section.count("<i>All essays</i>") == len(agreement.query("group == 'all'"))
    assert "|DSM| ≤ 0.10" in section and "|SMD| ≤ 0.15" in section
    for value in tables["group_fairness"]["r2_adjusted"]:
        assert f"{value:.3f}" in section
    assert "female (reference)" in section
    for value in tables["group_fairness_coefficients"]["estimate"]:
        assert f"{value:.3f}" in section
    lip = tables["group_lipschitz"]
    for value in lip["fraction"]:
        assert f"{100 * value:.3f}" in section
    assert "Within female (n = 20)" in section and "Across groups" in section
    for name in ("group_agreement", "group_lipschitz"):
        assert f'id="figure-{name}"' in section
    # the reading guide and the notes on the measures
    for phrase in (
        "The two views can disagree",
        "conditions on the human score",
        "DSM, the difference of standardized means",
        "Small groups give noisy values",
        "dominated by the largest group",
    ):
        assert phrase in section, phrase


def test_group_view_with_only_the_lipschitz_table(audit):
    tables, meta = audit
    kept = {k: v for k, v in tables.items() if k not in GROUP_TABLES[:3]}
    page = render_html(kept, meta, {})
    assert "9 Group view" in _headings(page)
    section = _section(page, 9)
    assert section.count("Not available in this run") == 2
    assert "Within male (n = 20)" in section


def test_one_embedded_png_per_figure(page, figures):
    images = IMG_RE.findall(page)
    assert len(images) == page.count("<img") == len(figures)
    for data, alt in images:
        assert base64.b64decode(data, validate=True).startswith(PNG_SIGNATURE)
        assert len(alt) > 20
    for name in figures:
        assert f'id="figure-{name}"' in page
    numbers = re.findall(r"<figcaption>Figure (\d+)\.", page)
    assert numbers == [str(i) for i in range(1, len(figures) + 1)]


def test_the_page_is_self_contained(page):
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", page, re.I)
    lowered = page.lower()
    for forbidden in (
        "<script",
        "<link",
        "<iframe",
        "<object",
        "<embed",
        "@import",
        "url(",
    ):
        assert forbidden not in lowered, forbidden
    assert re.findall(r'href="([^"]*)"', page) == [
        f"#section-{i}" for i in range(1, len(ESSAY_SECTIONS) + 1)
    ]


def test_essay_text_is_escaped(page):
    assert _esc(HOSTILE_TEXT, quote=True) in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&#34;patience&#34; &amp; &lt;b&gt;waiting&lt;/b&gt;" in page
    assert "<script" not in page.lower()
    assert "<img src=x" not in page
    assert "<b>waiting" not in page


def test_every_string_from_the_data_is_escaped():
    mark = "<u>M&amp;</u>"
    tables, meta = make_audit_tables(("bow", mark), ("ridge", mark), n_essays=10, k=1)
    tables["extreme_pairs"]["id_a"] = mark
    tables["paraphrase"]["source"] = mark
    tables["human_agreement"]["rater1"] = mark
    for name in GROUP_TABLES:
        tables[name]["group"] = mark
    tables["group_fairness"]["base_group"] = mark
    meta.update(
        title=mark,
        text_col=mark,
        score_col=mark,
        rater_cols=[mark, "r2"],
        group_col=mark,
        sbert_model=mark,
        paraphrase_source=mark,
        started=mark,
        features=[*meta["features"], mark],
        notes=[mark],
        omitted_features=[{"feature": mark, "reason": mark}],
        versions={mark: mark},
    )
    page = render_html(tables, meta, {})
    assert "<u>" not in page
    escaped = _esc(mark)
    # title (twice), columns, rater, group, sbert, paraphrase, started (twice), feature,
    # note, omitted feature and reason, versions, table cells
    assert page.count(escaped) >= 20
    assert "&amp;lt;" not in page.replace(escaped, "")  # nothing escaped twice


class _TagBalance(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input", "col", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.problems = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(
                f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
            )
        else:
            self.stack.pop()


def test_every_tag_is_closed_in_order(page):
    checker = _TagBalance()
    checker.feed(page)
    checker.close()
    assert checker.problems == []
    assert checker.stack == []


def test_markup_of_the_report_is_not_escaped(page):
    for tag in ("th", "td", "tr", "div", "span", "table", "figure", "section"):
        assert f"&lt;{tag}" not in page, tag
    assert '<th colspan="2" scope="colgroup">OSA</th>' in page
    assert '<th scope="col" class="num">spread-matched %</th>' in page


def test_overview_lists_what_was_left_out_and_why(page, audit):
    _, meta = audit
    assert "no prompt given: prompt-based features omitted" in page
    assert "no LanguageTool: language_errors omitted" in page
    for note in meta["notes"]:
        assert _esc(note) in page
    overview = page.split("<h2>2 ")[0]
    assert "<code>language_errors</code>" in overview
    assert "<code>prompt_similarity_sbert</code>" in overview


def _ran_on(page):
    overview = page.split("<h2>2 ")[0]
    found = re.findall(r"<dt>Ran on</dt><dd>(.*?)</dd>", overview)
    return found[0] if found else None


def test_overview_says_where_the_audit_ran(audit):
    # a Dask cluster (audit(client=)): its scheduler and workers; a local run:
    # its processes; results of a version that did not record it: no line
    tables, meta = audit
    cluster = {"scheduler": "tcp://10.0.0.5:8786", "workers": 8, "threads": 16}
    page = render_html(tables, {**meta, "n_jobs": None, "cluster": cluster}, {})
    assert _ran_on(page) == _esc(
        "Dask cluster tcp://10.0.0.5:8786 (8 workers, 16 threads): per-essay chunks "
        "and pair passes on the workers"
    )
    assert _ran_on(render_html(tables, {**meta, "n_jobs": 2}, {})) == "local (2 processes)"
    assert _ran_on(render_html(tables, {**meta, "n_jobs": None}, {})) == "local (1 process)"
    assert _ran_on(render_html(tables, {**meta, "n_jobs": -1}, {})) == "local (all cores)"
    assert "n_jobs" not in meta and _ran_on(render_html(tables, meta, {})) is None


def test_numbers_and_flags_are_formatted(page, audit):
    tables, _ = audit
    agreement = tables["agreement"]
    for value, low, high in zip(
        agreement["qwk"], agreement["qwk_ci_low"], agreement["qwk_ci_high"]
    ):
        # with its bootstrap interval where it has one (not the pooled rows)
        ci = "" if np.isnan(low) else f" [{low:.2f}, {high:.2f}]"
        assert f'<td class="num">{value:.3f}{ci}</td>' in page
    for value in tables["lipschitz"]["lipschitz_minmax"]:
        assert f"{100 * value:.3f}" in page
    assert page.count('<span class="ok"') >= int(agreement["smd_ok"].sum())
    assert page.count('<span class="bad"') >= int((~agreement["acceptable"]).sum())
    assert "QWK ≥ 0.70" in page and "Degradation ≤ 0.10" in page and "|SMD| ≤ 0.15" in page
    assert "Human–human QWK" in page and "qwk_truncated" not in page


def test_paraphrase_section_warns_about_full_list_ndcg(page):
    section = page.split("<h2>5 Paraphrase robustness</h2>")[1].split("<h2>")[0]
    assert "close to 1 even for a random ranking" in section
    assert "NDCG@10 (mean ± SD)" in section


def test_footer_has_versions_and_run_time(page):
    footer = page.split("<footer>")[1]
    assert "sklearn-fairaes 0.1.0" in footer
    assert "run time 123.4 s" in footer
    assert "scikit-learn 1.9.1" in footer and "2025-01-01T12:00:00+00:00" in footer


def test_without_raters_degradation_is_not_shown(audit):
    tables, meta = make_audit_tables(raters=False, n_essays=10, k=1, groups=None)
    page = render_html(tables, meta, {})
    assert "Degradation ≤" not in page
    assert "No rater columns were given" in page
    assert "Agreement between the two human raters" not in page


def test_an_empty_audit_renders_with_reasons():
    page = render_html({}, {}, {})
    assert _headings(page) == [
        f"{i} {t}"
        for i, t in enumerate(
            _titles("groups", "counterfactual", "short_answers", "retest"), start=1
        )
    ]
    assert "no perturbations were requested" in page
    assert "<img" not in page
    assert page.count("not available in this run (its table is missing)") == 7
    assert "Not run: no paraphrases were given or generated." in page


def test_unknown_figures_are_still_embedded(audit, figures):
    tables, meta = audit
    extra = {"lipschitz": figures["lipschitz"], "custom": figures["lipschitz"]}
    page = render_html(tables, meta, extra)
    assert page.count("<img") == len(extra)
    assert "Additional figure “custom”." in page


def test_bad_inputs_are_refused(audit):
    tables, meta = audit
    with pytest.raises(TypeError, match="tables must be a dict"):
        render_html([tables], meta, {})
    with pytest.raises(
        TypeError, match=r"tables\['agreement'\] must be a pandas.DataFrame"
    ):
        render_html({"agreement": [1, 2]}, meta, {})
    with pytest.raises(TypeError, match="meta must be a dict"):
        render_html(tables, "meta", {})
    with pytest.raises(
        TypeError, match=r"figures\['lipschitz'\] must be a matplotlib Figure"
    ):
        render_html(tables, meta, {"lipschitz": b"png"})
    broken = dict(tables, agreement=tables["agreement"].drop(columns="smd_ok"))
    with pytest.raises(ValueError, match=r"table 'agreement' lacks the column\(s\) smd_ok"):
        render_html(broken, meta, {})


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=80))
def test_essay_text_never_changes_the_markup(text):
    def extreme(essay):
        return pd.DataFrame(
            {
                "representation": ["bow"],
                "which": ["nearest"],
                "rank": [1],
                "row_a": [0],
                "row_b": [1],
                "id_a": [essay],
                "id_b": ["b"],
                "distance": [0.1],
                "text_a": [essay],
                "text_b": ["x"],
                "score_a": [1],
                "score_b": [2],
            }
        )

    page = render_html({"extreme_pairs": extreme(text)}, {"title": text}, {})
    reference = render_html({"extreme_pairs": extreme("plain")}, {"title": "plain"}, {})
    # Escaped text holds no "<" or ">", so the tag structure is the same whatever the essay.
    assert page.count("<") == reference.count("<")
    assert page.count(">") == reference.count(">")
    assert _esc(text, quote=True) in page


# --------------------------------------------------------------------------- JSON


def test_to_json_dict_round_trips_with_nan_as_null(audit):
    tables, meta = make_audit_tables(raters=False, n_essays=10, k=1)
    tables["lipschitz"].loc[0, "lipschitz_max"] = np.inf
    data = to_json_dict(tables, meta)
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    assert set(data) == {"meta", "tables"} and data["meta"] == meta
    for name, table in tables.items():
        records = data["tables"][name]
        assert len(records) == len(table)
        assert list(records[0]) == [str(c) for c in table.columns]
    agreement = data["tables"]["agreement"]
    assert all(r["human_human_qwk"] is None and r["degradation"] is None for r in agreement)
    assert data["tables"]["lipschitz"][0]["lipschitz_max"] is None
    first = agreement[0]
    assert type(first["n"]) is int and type(first["qwk"]) is float
    assert type(first["qwk_ok"]) is bool
    np.testing.assert_allclose([r["qwk"] for r in agreement], tables["agreement"]["qwk"])
    restored = pd.DataFrame(data["tables"]["score_distance"])
    pd.testing.assert_frame_equal(restored, tables["score_distance"], check_dtype=False)


def test_to_json_dict_converts_numpy_and_other_python_types():
    meta = {
        "n": np.int64(3),
        "x": np.float32(0.5),
        "flag": np.bool_(True),
        "nan": float("nan"),
        "arr": np.array([1.0, np.nan]),
        "when": datetime.datetime(2025, 1, 2, 3, 4, 5),
        "took": datetime.timedelta(seconds=90),
        "path": Path("/data/essays.tsv"),
        "cols": ("a", "b"),
        "nested": {1: [np.int8(2), None, pd.NA]},
        "ts": pd.Timestamp("2025-01-02"),
        "nat": pd.NaT,
    }
    data = to_json_dict({}, meta)
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert data["meta"] == {
        "n": 3,
        "x": 0.5,
        "flag": True,
        "nan": None,
        "arr": [1.0, None],
        "when": "2025-01-02T03:04:05",
        "took": 90.0,
        "path": str(Path("/data/essays.tsv")),
        "cols": ["a", "b"],
        "nested": {"1": [2, None, None]},
        "ts": "2025-01-02T00:00:00",
        "nat": None,
    }


def test_to_json_dict_names_a_value_without_json_form():
    table = pd.DataFrame({"system": ["ridge"], "obj": [object()]})
    with pytest.raises(
        TypeError, match=r"tables\['agreement'\] row 0 column 'obj' holds an object \(<"
    ):
        to_json_dict({"agreement": table}, {})


def test_counterfactual_section_shows_every_edit_escaped(page, audit):
    tables, _ = audit
    section = _section(page, 10)
    assert section.startswith("Counterfactual edits")
    for name in tables["perturbation"]["perturbation"].unique():
        assert name in section
    for phrase in ("oversensitivity", "overstability", "distance 0"):
        assert phrase in page.split("<h2>9 ")[1], phrase
    assert "<img src=x" not in section  # the example edit quotes essay text, escaped
    assert "&lt;img src=x" in section
    assert section.count("<img") == 1


# --------------------------------------------------------------------------- issue 16


def _part(page, number):
    """The part of one prompt: from its heading to the next part's (or the end)."""
    rest = page.split(f'<h2 class="part" id="part-{number}">')[1]
    return rest.split('<h2 class="part"')[0].split("</main>")[0]


def _rows(section, first_cell):
    """The cell texts of the table rows of ``section`` that start with ``first_cell``."""
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", section, re.S)
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in rows]
    return [c for c in cells if c and c[0] == first_cell]


@pytest.fixture(scope="module")
def multi():
    tables, meta = make_audit_tables(
        ("tfidf", "bow"),
        ("ridge",),
        given=("engine_v3",),
        prompts=("1", "2", "3"),
        n_essays=10,
        k=1,
        perturbations=None,
        seed=5,
    )
    figures = make_figures(tables, meta)
    return tables, meta, figures, render_html(tables, meta, figures)


def test_multi_prompt_page_has_a_summary_then_a_part_per_prompt(multi):
    tables, meta, figures, page = multi
    assert re.findall(r"<h2[^>]*>(.*?)</h2>", page) == [
        "1 Overview",
        f"2 {SUMMARY_TITLE}",
        "3 Prompt 1",
        "4 Prompt 2",
        "5 Prompt 3",
    ]
    shown = [t for t in ESSAY_SECTIONS[1:] if t != "Counterfactual edits"]
    for number in (3, 4, 5):
        part = _part(page, number)
        assert re.findall(r"<h3>(.*?)</h3>", part) == [
            f"{number}.{i} {t}" for i, t in enumerate(shown, start=1)
        ]
        assert part.count('class="guide"') == len(shown)
    # the top contents link the overview, the summary and the parts
    nav = page.split("</nav>")[0]
    assert re.findall(r'href="#([^"]*)"', nav) == [
        "section-1", "section-2", "part-3", "part-4", "part-5",
    ]  # fmt: skip
    # every anchor a link points to exists once
    for target in re.findall(r'href="#([^"]*)"', page):
        assert page.count(f'id="{target}"') == 1, target


def test_each_part_shows_its_own_prompts_rows(multi):
    tables, meta, figures, page = multi
    agreement = tables["agreement"]
    for number, prompt in zip((3, 4, 5), ("1", "2", "3")):
        part = _part(page, number)
        rows = agreement[agreement["prompt"] == prompt]
        given = rows[rows["system"] == "engine_v3"].iloc[0]
        # the given system's row: representation "" shown as its own scores
        cells = _rows(part, "<i>own scores</i>")
        assert ["<i>own scores</i>", "engine_v3", "given scores", "10"] == cells[0][:4]
        interval = f"[{given['qwk_ci_low']:.2f}, {given['qwk_ci_high']:.2f}]"
        assert cells[0][4] == f"{given['qwk']:.3f} {interval}"
        for value in rows["qwk"]:
            assert f'<td class="num">{value:.3f} [' in part
        lip = tables["lipschitz"]
        for value in lip.loc[lip["prompt"] == prompt, "lipschitz_minmax"]:
            assert f"{100 * value:.3f}" in part
        # its figures, each with an id of this part
        index = number - 2
        for name in ("lipschitz", "score_distance_5", "extreme_pairs"):
            assert f'id="figure-{name}-p{index}"' in part
    assert len(IMG_RE.findall(page)) == len(figures) == 3 * 8


def test_summary_has_per_prompt_and_pooled_rows(multi):
    tables, meta, figures, page = multi
    summary = page.split('<section id="section-2">')[1].split("</section>")[0]
    agreement = tables["agreement"]
    pooled = agreement[agreement["prompt"] == "pooled"]
    assert len(pooled) == 3  # engine_v3 (own scores), ridge on tfidf and on bow
    qwk_table, lip_table = summary.split("<caption>")[2:4]
    # columns: own scores / engine_v3 first, then tfidf and bow / ridge
    order = [("", "engine_v3"), ("tfidf", "ridge"), ("bow", "ridge")]
    for prompt in ("1", "2", "3"):
        expected = [
            f"{agreement.set_index(['prompt', 'representation', 'system']).loc[(prompt, r, s), 'qwk']:.3f}"
            for r, s in order
        ]
        assert _rows(qwk_table, prompt) == [[prompt, *expected]]
    pooled_cells = _rows(qwk_table, "<i>Pooled (Fisher-z mean)</i>")
    by = pooled.set_index(["representation", "system"])["qwk"]
    assert pooled_cells[0][1:] == [f"{by[k]:.3f}" for k in order]
    # the pooled QWK is the Fisher-z mean of the prompts' QWK (by hand)
    per_prompt = agreement[
        (agreement["prompt"] != "pooled") & (agreement["system"] == "engine_v3")
    ]["qwk"]
    assert by[("", "engine_v3")] == pytest.approx(np.tanh(np.arctanh(per_prompt).mean()))
    lip = tables["lipschitz"]
    pooled_lip = lip[lip["prompt"] == "pooled"].set_index(["representation", "system"])
    cells = _rows(lip_table, "<i>Pooled (pair-weighted)</i>")[0]
    assert cells[1] == f"{int(pooled_lip['n_pairs'].iloc[0]):,}"
    for key in [("tfidf", "engine_v3"), ("bow", "human")]:
        assert f"{100 * pooled_lip.loc[key, 'lipschitz_minmax']:.3f}" in cells
    assert '<tr class="pooled">' in lip_table
    # the scales, with how each was set
    assert _rows(summary, "2")[0] == [
        "2",
        "10",
        "2",
        "24",
        "inferred from the human scores",
    ]


def test_one_prompt_with_a_prompt_column_looks_like_one_study():
    tables, meta = make_audit_tables(prompts=("7",), n_essays=10, k=1)
    page = render_html(tables, meta, {})
    assert _headings(page) == [f"{i} {t}" for i, t in enumerate(ESSAY_SECTIONS, start=1)]
    assert SUMMARY_TITLE not in page and 'class="part"' not in page
    assert list(make_figures(tables, meta)) == list(FIGURE_NAMES)


def test_system_names_and_prompt_ids_are_escaped():
    hostile = "<script>alert(1)</script>"
    prompt = '<img src=x onerror="alert(2)">'
    tables, meta = make_audit_tables(
        ("bow",),
        ("ridge",),
        given=(hostile,),
        prompts=(prompt, "b&w"),
        n_essays=8,
        k=1,
        groups=("<i>g</i>", "h"),
    )
    meta["absent_sections"]["paraphrase"] = {prompt: f"no paraphrases for {hostile}"}
    tables["paraphrase"] = tables["paraphrase"][tables["paraphrase"]["prompt"] != prompt]
    meta["warnings"] = [{"prompt": prompt, "representation": "bow", "message": hostile}]
    page = render_html(tables, meta, make_figures(tables, meta))
    lowered = page.lower()
    assert "<script" not in lowered and "<img src=x" not in lowered and "<i>g" not in page
    assert page.count(_esc(hostile)) >= 10  # systems table, every table, legend-free text
    assert f"Prompt {_esc(prompt)}</h2>" in page
    assert "Prompt b&amp;w</h2>" in page
    assert _esc(f"no paraphrases for {hostile}") in page
    assert f"<b>Warning. </b>Prompt {_esc(prompt)}: {_esc(hostile)}" in page  # overview
    assert f"<b>Warning. </b>{_esc(hostile)}</div>" in _part(page, 3)
    assert f"<b>Warning. </b>{_esc(hostile)}</div>" not in _part(page, 4)
    checker = _TagBalance()
    checker.feed(page)
    assert checker.problems == [] and checker.stack == []


def test_the_absent_sections_reason_shows():
    tables, meta = make_audit_tables(
        ("tfidf",), (), given=("engine_v3",), n_essays=10, k=1, groups=None
    )
    assert "perturbation" not in tables
    meta["absent_sections"]["paraphrase"] = "the paraphraser found no synonyms"
    del tables["paraphrase"]
    page = render_html(tables, meta, {})
    overview = _section(page, 1)
    assert f"<li><b>Counterfactual edits</b> — {_esc(SCORES_ONLY)}</li>" in overview, (
        "the reason is listed with the section's name"
    )
    assert "<li><b>Group view</b> — no group column was given</li>" in overview
    assert (
        "<li><b>Paraphrase robustness</b> — the paraphraser found no synonyms</li>"
        in overview
    )
    assert "Not run: the paraphraser found no synonyms." in _section(page, 5)
    assert "Counterfactual edits</h2>" not in page and "Group view</h2>" not in page


def test_a_reason_for_some_prompts_names_them():
    tables, meta = make_audit_tables(
        ("bow",), ("ridge",), prompts=("1", "2", "3"), n_essays=8, k=1, perturbations=None
    )
    tables["paraphrase"] = tables["paraphrase"][tables["paraphrase"]["prompt"] == "1"]
    meta["absent_sections"]["paraphrase"] = {"2": "too few essays", "3": "too few essays"}
    page = render_html(tables, meta, {})
    assert "<b>Paraphrase robustness</b> (prompts 2, 3) — too few essays" in page
    assert "Not run: too few essays." in _part(page, 4)
    assert (
        "Not run"
        not in _part(page, 3).split("Paraphrase robustness</h3>")[1].split("</section>")[0]
    )


def test_agreement_shows_the_scale_and_scores_outside_it():
    tables, meta = make_audit_tables(n_essays=10, k=1, declared=True, score_range=(0, 6))
    page = render_html(tables, meta, {})
    section = _section(page, 2)
    assert "Score scale: 0 to 6, declared." in section
    assert "Outside the scale" not in section  # no score outside: no column
    tables["agreement"].loc[1, "n_outside_scale"] = 3
    meta.update(score_ranges={"all": [0, 6, "inferred"]})
    section = _section(render_html(tables, meta, {}), 2)
    assert (
        "Score scale: 0 to 6, inferred from the human scores (none was declared)."
        in section
    )
    assert '<th scope="col" class="num">Outside the scale</th>' in section
    assert "3 machine score(s) fell outside the score scale" in section
    row = _rows(section, "BOW")[1]
    assert row[1:5] == ["Random Forest", "trained baseline", "10", "3"]


def test_short_answer_section_shows_grading_and_coverage():
    tables, meta = make_audit_tables(
        ("tfidf",), ("ridge",), prompts=("q1", "q2"), n_essays=8, k=1, short_answer=True,
        groups=None, perturbations=None,
    )  # fmt: skip
    page = render_html(tables, meta, {})
    grading = tables["grading"]
    part = _part(page, 4)
    assert "4.8 Short answers: grading and reference coverage</h3>" in part
    for value in grading.loc[grading["prompt"] == "q2", "wrmse"]:
        assert f"{value:.3f}" in part
    summary = page.split('<section id="section-2">')[1].split("</section>")[0]
    pooled = grading[grading["prompt"] == "pooled"]["wrmse"].iloc[0]
    assert _rows(summary, "<i>All questions</i>")[0][1] == f"{pooled:.3f}"
    coverage = tables["reference_coverage"]
    for value in coverage.loc[coverage["prompt"] == "q1", "share_below_threshold"]:
        assert f"{100 * value:.3f}" in _part(page, 3)
    # no short-answer tables: no section, nothing listed as left out
    essays, meta = make_audit_tables(n_essays=8, k=1)
    assert "Short answers" not in render_html(essays, meta, {})


def test_multi_prompt_figures_are_keyed_per_prompt_on_the_prompts_scale(multi):
    tables, meta, figures, _ = multi
    assert list(figures) == [
        figure_key(name, p)
        for p in ("1", "2", "3")
        for name in FIGURE_NAMES
        if name != "perturbation"
    ]
    # each prompt's figure is drawn from that prompt's rows only
    lip = tables["lipschitz"]
    for p in ("1", "2"):
        ax = figures[figure_key("lipschitz", p)].axes[0]
        heights = sorted(bar.get_height() for bar in ax.patches)
        expected = 100 * lip.loc[lip["prompt"] == p, "lipschitz_minmax"]
        np.testing.assert_allclose(heights, sorted(expected))
    ax = figures[figure_key("score_distance_5", "1")].axes[0]
    assert ax.get_ylabel() == "Mean |Δscore| (points, scale 2–24)"
    low, high = ax.get_ylim()
    assert low == 0 and high <= 24 - 2


def test_score_distance_axis_ends_at_the_largest_difference_the_scale_allows():
    table = pd.DataFrame(
        {"representation": ["bow"] * 2, "system": ["ridge"] * 2, "n_bins": [2, 2],
         "bin": [1, 2], "mean_abs_diff": [1.5, 5.9], "se": [0.1, 0.2]}
    )  # fmt: skip
    ax = plot_score_distance(table, n_bins=2, score_range=(0, 6)).axes[0]
    assert ax.get_ylim() == (0.0, 6.0)
    ax = plot_score_distance(table, n_bins=2).axes[0]
    assert ax.get_ylabel() == "Mean |Δscore| (score points)"


def test_templates_autoescape_and_refuse_undefined_names():
    import jinja2

    env = _environment()
    assert env.autoescape is True
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"
    with pytest.raises(jinja2.UndefinedError, match="'nope' is undefined"):
        env.from_string("{{ nope }}").render()
    # one template per analysis, shipped with the package
    from importlib.resources import files

    folder = files("sklearn_fairaes.report") / "templates"
    names = {s.id for s in SECTIONS}
    for name in names:
        assert (folder / "sections" / f"{name}.html.j2").is_file(), name
    assert (folder / "layout.html.j2").is_file()


def test_overview_lists_each_system_with_its_kind(multi):
    _, meta, _, page = multi
    overview = _section(page, 1)
    table = overview.split("<caption>Scoring systems audited</caption>")[1].split(
        "</table>"
    )[0]
    assert _rows(table, "engine_v3") == [["engine_v3", "given scores", "column engine_v3"]]
    assert _rows(table, "Ridge")[0][:2] == ["Ridge", "trained baseline, out-of-fold"]
    assert (
        "2 combinations of representation and trained model were evaluated (2 × 1)"
        in overview
    )
    assert (
        _esc(
            "1 given or fitted system's scores were audited under every representation (2)."
        )
        in overview
    )
    assert "<dt>Prompts</dt><dd>3: 1, 2, 3</dd>" in overview


def test_every_title_fits_its_figure_with_one_representation():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    tables, meta = make_audit_tables(("tfidf",), ("ridge",), n_essays=10, k=1)
    for name, fig in make_figures(tables, meta).items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        box = fig.get_suptitle() and fig._suptitle.get_window_extent(canvas.get_renderer())
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width, name


def test_essays_of_a_pair_name_their_row_in_the_users_data(multi):
    tables, _, _, page = multi
    pairs = tables["extreme_pairs"]
    top = pairs[(pairs["prompt"] == "2") & (pairs["which"] == "nearest")].iloc[0]
    assert top["data_row_a"] == 11  # the first essay of the second prompt of 10
    head = f"<b>Essay A</b> · id {top['id_a']} · data row 11 · human score "
    assert head in _part(page, 4)
    # without the audit's data rows, the essay's position + 1
    single = pairs[pairs["prompt"] == "1"].drop(columns=["data_row_a", "data_row_b"])
    page = render_html({"extreme_pairs": single}, {}, {})
    first = single[single["which"] == "farthest"].iloc[0]
    assert f"id {first['id_b']} · data row {first['row_b'] + 1} · " in page


@settings(max_examples=25, deadline=None)
@given(
    system=st.text(min_size=1, max_size=30).filter(
        # names with a display label ("ridge" -> "Ridge") are shown by that label
        lambda s: s.strip() and s not in ("pooled", "all", *MODEL_LABELS)
    ),
    prompt=st.text(min_size=1, max_size=30).filter(
        lambda s: s.strip() and s not in ("pooled", "2")
    ),
)
def test_system_names_and_prompt_ids_never_change_the_markup(system, prompt):
    def page(system, prompt):
        lipschitz = pd.DataFrame(
            [
                {"prompt": p, "representation": "bow", "system": m,
                 "lipschitz_minmax": 0.9, "lipschitz_max": 0.95, "n_pairs": 45}
                for p in (prompt, "2", "pooled")
                for m in (system, "human")
            ]
        )  # fmt: skip
        meta = {
            "prompts": [prompt, "2"],
            "systems": {system: {"kind": "given", "description": system}},
            "score_ranges": {prompt: [0, 6, "declared"], "2": [1, 4, "inferred"]},
            "absent_sections": {"paraphrase": {prompt: system}},
        }
        return render_html({"lipschitz": lipschitz}, meta, {})

    hostile = page(system, prompt)
    plain = page("sys", "one")
    # escaped text holds no "<" or ">": the tags are the same whatever the names
    assert hostile.count("<") == plain.count("<")
    assert hostile.count(">") == plain.count(">")
    assert f"Prompt {_esc(prompt)}</h2>" in hostile
    # the summary's column, the part's column header, the systems table (twice)
    assert hostile.count(f">{_esc(system)}<") >= 4


def test_scores_are_shown_without_trailing_zeros():
    from sklearn_fairaes.report._cells import _score

    assert [_score(v).text for v in (2.0, 2.5, 0.125, 1 / 3, 12_000.0)] == [
        "2", "2.5", "0.125", "0.333", "12,000",
    ]  # fmt: skip
    assert _score(float("nan")).kind == "na"


def test_prompt_ids_of_the_metadata_may_be_numbers():
    tables, meta = make_audit_tables(
        ("bow",), ("ridge",), prompts=("1", "2"), n_essays=8, k=1, perturbations=None
    )
    meta.update(
        prompts=[1, 2],
        score_ranges={1: [0, 6, "declared"], 2: [1, 4, "inferred"]},
        absent_sections={"groups": {1: "one group only", 2: "one group only"}},
    )
    page = render_html({k: v for k, v in tables.items() if k not in GROUP_TABLES}, meta, {})
    assert _rows(page, "1")[0][2:] == ["0", "6", "declared"]
    assert _rows(page, "2")[0][2:] == ["1", "4", "inferred from the human scores"]
    assert "<b>Group view</b> — one group only" in page
    figures = make_figures(tables, meta)
    ax = figures[figure_key("score_distance_5", "1")].axes[0]
    assert ax.get_ylabel() == "Mean |Δscore| (points, scale 0–6)"
