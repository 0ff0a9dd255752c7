"""The audit's options are declared once (``report._config``); everything else follows.

The command's flags, audit()'s signature, defaults and docstring, and the
report's settings table must list exactly the declared options, and every
value is refused at plan time naming the option (keyword and flag) and how
to fix it (exit 2 from the command).
"""

import argparse
import inspect
import numbers

import pytest
from numpydoc.docscrape import FunctionDoc

import sklearn_fairaes as sf
from sklearn_fairaes._param_validation import Interval
from sklearn_fairaes.cli import build_parser, main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._config import (
    GROUPS,
    AuditConfig,
    Option,
    OptionGroup,
    add_arguments,
    check_signature,
    cli_values,
    collect,
    setting_label,
)

OPTIONS = collect(GROUPS)


def _subparser(command):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


@pytest.mark.parametrize("command", ["audit", "demo"])
def test_every_option_is_a_flag_of_the_command(command):
    flags = {s for a in _subparser(command)._actions for s in a.option_strings}
    missing = [o.cli_flag for o in OPTIONS.values() if o.cli_flag not in flags]
    assert not missing
    # and the flags' defaults give audit()'s defaults
    values = cli_values(_subparser(command).parse_args(["--out", "x"] * (command == "demo")
                                                       or _AUDIT_ARGS))  # fmt: skip
    for name, value in values.items():
        assert value == OPTIONS[name].default or list(value) == list(OPTIONS[name].default)


_AUDIT_ARGS = ["data.csv", "--text-col", "essay", "--score-col", "score", "--out", "x"]


def test_audit_signature_and_docstring_match_the_declarations():
    parameters = inspect.signature(sf.audit).parameters
    assert check_signature({n: p.default for n, p in parameters.items()}) == []
    documented = {}
    for param in FunctionDoc(sf.audit)["Parameters"]:
        for name in param.name.split(", "):
            documented[name] = param.type
    for name, option in OPTIONS.items():
        assert name in documented, f"{name} is not documented in audit()"
        shown = repr(option.default).replace("'", '"')
        assert documented[name].endswith(f"default={shown}"), (name, documented[name])


def test_the_settings_table_shows_every_option_declared_there():
    df = sf.load_demo_essays().iloc[:40]
    result = sf.audit(df, text_col="essay", score_col="score", models=["ridge"], cv=2,
                      representations=["tfidf"], paraphrases="paraphrase", cache=False)  # fmt: skip
    html = result.to_html()
    shown = [o for o in OPTIONS.values() if o.setting is not None]
    assert {o.name for o in shown} >= {"cv", "random_state", "letters"}
    for option in shown:
        assert f"<dt>{setting_label(option.name)}</dt>" in html, option.name
        # the value behind the row is recorded in results.json's meta
        assert option.name in result.meta
    assert result.meta["cv"] == 2 and result.meta["random_state"] == 0


def test_config_holds_the_defaults_and_collects_groups_declared_elsewhere():
    config = AuditConfig(n_review=3)
    assert config.n_review == 3 and config.n_neighbors == 5 and config.cv == 5
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['n_neigbors'\]"):
        AuditConfig(n_neigbors=3)
    # a section may declare its options in its own module; the config collects them
    extra = OptionGroup("section", (
        Option("n_things", 3, (Interval(numbers.Integral, 1, None),), help="things",
               fix="e.g. n_things=3", cli_type=int),
    ))  # fmt: skip
    config = AuditConfig(groups=[*GROUPS, extra], n_things=0)
    assert config.n_things == 0 and config.cv == 5
    with pytest.raises(AuditInputError, match=r"n_things \(--n-things\) must be an int"):
        config.validate()
    parser = argparse.ArgumentParser()
    add_arguments(parser, groups=[extra])
    assert parser.parse_args(["--n-things", "4"]).n_things == 4
    with pytest.raises(RuntimeError, match="declared twice"):
        collect([*GROUPS, OptionGroup("again", (OPTIONS["cv"],))])


# one bad value per kind of constraint: Interval, Options, a type, "random_state",
# None-or-type, two Intervals (n_jobs), and a further check (the device)
BAD = [
    ("n_neighbors", 0, r"n_neighbors \(--n-neighbors\) must be an int in the range "
                       r"\[1, inf\), got 0; pass a number of neighbours such as n_neighbors=5"),
    ("cv", 1, r"cv \(--cv\) must be an int in the range \[2, inf\), got 1; pass a number "
              r"of folds such as cv=5"),
    ("letters", "latin", r"letters \(--letters\) must be a str among \['ascii', "
                         r"'unicode'\], got 'latin'; pass letters='ascii'"),
    ("sbert_model", 3, r"sbert_model \(--sbert-model\) must be an instance of 'str' or "
                       r"an instance of 'PathLike', got 3; give a Sentence-BERT model"),
    ("random_state", "seed", r"random_state \(--random-state\) must be an int in the "
                             r"range \[0, 4294967295\], .*; pass a seed such as"),
    ("grammar", 3, r"grammar \(--grammar\) must be None or an instance of 'str', got 3"),
    ("n_jobs", 0, r"n_jobs \(--n-jobs\) must be an int in the range \[1, inf\), an int in "
                  r"the range \(-inf, -1\] or None, got 0; pass a positive number"),
    ("device", "gpu", r"device \(--device\): device='gpu' is not a torch device .*use "
                      r"'cpu', 'cuda' or 'cuda:N'"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "value", "match"), BAD)
def test_a_bad_value_is_refused_at_plan_time(monkeypatch, name, value, match):
    from sklearn_fairaes.report import _build

    def no_data(*args, **kwargs):
        raise AssertionError("the data was read before the options were checked")

    monkeypatch.setattr(_build, "column", no_data)
    with pytest.raises(AuditInputError, match=match):
        sf.audit(sf.load_demo_essays(), text_col="essay", score_col="score",
                 cache=False, **{name: value})  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--n-neighbors", "0"], "n_neighbors (--n-neighbors) must be an int"),
        (["--cv", "1"], "cv (--cv) must be an int in the range [2, inf), got 1"),
        (["--random-state", "-1"], "random_state (--random-state) must be an int"),
        (["--device", "gpu"], "device (--device): device='gpu' is not a torch device"),
        (["--n-jobs", "0"], "0 runs nothing"),  # argparse's type refuses it
        (["--letters", "latin"], "invalid choice: 'latin'"),
    ],
)
def test_the_command_refuses_a_bad_value_with_exit_2(tmp_path, capsys, flags, fragment):
    data = tmp_path / "essays.csv"
    sf.load_demo_essays()[["essay", "score"]].to_csv(data, index=False)
    out = tmp_path / "out"
    args = ["audit", str(data), "--text-col", "essay", "--score-col", "score"]
    try:
        code = main([*args, "--out", str(out), "--no-cache", *flags])
    except SystemExit as exc:  # argparse's own refusals (a type or a choice)
        code = exc.code
    assert code == 2
    assert fragment in capsys.readouterr().err
    assert not out.exists()  # refused before --out was claimed
