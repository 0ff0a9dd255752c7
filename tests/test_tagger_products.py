"""The package's spaCy tagger multiplies with NumPy's BLAS and tags as spaCy ships it.

``features._pos`` hands the tok2vec's matrix products to NumPy's BLAS instead
of thinc's blis (tagging 1.9-2.6x faster: ``benchmarks/bench_tagger.py``). The
reference here is the pipeline exactly as ``spacy.load`` gives it: the tags of
real essays must be the same, token for token.
"""

from __future__ import annotations

from sklearn_fairaes.features import _pos
from sklearn_fairaes.features._tokenize import tokenize_essay

EXCLUDE = ["parser", "ner", "lemmatizer", "attribute_ruler", "senter"]


def _numpy_ops_nodes(nlp):
    from thinc.api import NumpyOps

    return [
        node
        for _, component in nlp.pipeline
        for node in component.model.walk()
        if isinstance(node.ops, NumpyOps)
    ]


def test_no_layer_multiplies_with_blis(spacy_label):
    nlp = _pos._load(spacy_label)
    nodes = _numpy_ops_nodes(nlp)
    assert nodes, "the tagger has no layer on NumPy's ops to check"
    assert not [n.name for n in nodes if n.ops.use_blis]


def test_stock_spacy_uses_blis_so_the_check_can_fail(spacy_label):
    import spacy

    stock = spacy.load(spacy_label[len("spacy:") :], exclude=EXCLUDE)
    assert any(n.ops.use_blis for n in _numpy_ops_nodes(stock))


def test_tags_equal_stock_spacy_on_real_essays(spacy_label, asap7):
    import spacy

    essays = [tokenize_essay(t) for t in asap7["essay"].iloc[:60]]
    ours = _pos._run_tagger(essays, spacy_label)
    stock = spacy.load(spacy_label[len("spacy:") :], exclude=EXCLUDE)
    saved = dict(_pos._TAGGERS)
    _pos._TAGGERS["spacy:stock"] = stock
    try:
        theirs = _pos._run_tagger(essays, "spacy:stock")
    finally:
        _pos._TAGGERS.clear()
        _pos._TAGGERS.update(saved)
    assert sum(len(t) for t in theirs) > 10_000
    assert ours == theirs


def test_tag_identity_names_the_blas(spacy_label):
    identity = _pos.tagger_identity(spacy_label)
    assert identity is not None
    import numpy as np

    assert identity["numpy"].startswith(np.__version__)
