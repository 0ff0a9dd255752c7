"""LASER essay embeddings (the paper's §4.2.4).

The vectors come from the ``laserembeddings`` package (import name of
``laserembeddings-fork``): Moses tokenisation, LASER's shared BPE vocabulary,
then the BiLSTM encoder max-pooled over time (1024 dimensions for the released
93-language model). No registry package ships the weights; they are found by
:func:`sklearn_fairaes.resources.resolve_laser_files`.
"""

from __future__ import annotations

import numbers
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .._param_validation import Interval, Options, check_device, check_params
from ..resources import ResourceNotFoundError, require, resolve_laser_files
from ._base import _BaseEssayEncoder
from ._cache import EmbeddingCache, file_sha256

__all__ = ["LaserEncoder", "load_laser", "split_sentences"]

_POOLINGS = ("essay", "sentence_mean")

# (path, size, mtime) of a model file
_Signature = tuple[str, int, int]

# (signatures of the files, max_tokens, device) -> laserembeddings.Laser
_LASERS: dict[tuple[tuple[_Signature, ...], int, str | None], Any] = {}
_LOCK = threading.Lock()

# A period after one of these does not end a sentence ("Dr. Smith", "e.g. this").
_ABBREVIATIONS = frozenset(
    {"dr", "e.g", "i.e", "jr", "mr", "mrs", "ms", "prof", "sr", "st", "vs"}
)
# sentence-final punctuation, with any closing quotes or brackets, then whitespace
_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s)")
_PARAGRAPH = re.compile(r"\n\s*\n")


def split_sentences(text: str) -> list[str]:
    """Split an essay into sentences with a small rule set that needs no data.

    Rules, in order: a blank line ends a paragraph (and so a sentence); within
    a paragraph a run of ``.``, ``!`` or ``?`` (with any closing quotes or
    brackets) followed by whitespace ends a sentence, except a single period
    after a common abbreviation (Dr, Mr, Mrs, Ms, Prof, Sr, Jr, St, vs, e.g,
    i.e) or after one capital letter other than "I" (an initial, as in
    "J. K. Rowling").
    Decimals ("3.5") are never split, since no space follows the period.
    Sentence-case is not required: student essays often start sentences in
    lower case.

    This replaces NLTK's punkt model, whose data cannot be installed offline.

    Parameters
    ----------
    text : str
        The essay.

    Returns
    -------
    sentences : list of str
        Stripped, non-empty sentences in order; ``[""]`` when ``text`` has no
        non-space character, so that every essay yields at least one input.

    Examples
    --------
    >>> from sklearn_fairaes.text import split_sentences
    >>> split_sentences("Dr. Smith came in. he sat down!  Then he left...")
    ['Dr. Smith came in.', 'he sat down!', 'Then he left...']
    >>> split_sentences("   ")
    ['']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    sentences = []
    for paragraph in _PARAGRAPH.split(text):
        start = 0
        for match in _BOUNDARY.finditer(paragraph):
            if match.group() == ".":
                parts = paragraph[start : match.start()].rsplit(None, 1)
                word = parts[-1].lstrip("\"'(\u201c\u2018[") if parts else ""
                # "I." ends many student sentences ("my friend and I.")
                initial = len(word) == 1 and word.isupper() and word != "I"
                if initial or word.lower() in _ABBREVIATIONS:
                    continue
            sentences.append(paragraph[start : match.end()].strip())
            start = match.end()
        sentences.append(paragraph[start:].strip())
    sentences = [s for s in sentences if s]
    return sentences or [""]


def _signature(path: str | os.PathLike[str]) -> _Signature:
    """(path, size, mtime) of a model file: changes whenever the file is rewritten."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ResourceNotFoundError(
            f"LASER model file {path} cannot be read ({exc.strerror}); it was found "
            f"when the encoder was fitted: restore it, or call fit again to look for "
            f"the model files anew"
        ) from None
    return (os.path.abspath(path), st.st_size, st.st_mtime_ns)


def _fingerprint(path: str | os.PathLike[str]) -> dict[str, str | int]:
    """Name, size and SHA-256 of a model file, hashed once per process and version."""
    sig = _signature(path)  # a missing file: ResourceNotFoundError, saying why
    # the package's one file hasher, shared with Sentence-BERT's fingerprint
    digest = file_sha256(path)
    return {"name": os.path.basename(path), "size": sig[1], "sha256": digest}


def load_laser(
    model_dir: str | os.PathLike[str] | None = None,
    *,
    max_tokens: int = 12000,
    device: str | None = None,
) -> Any:
    """Load ``laserembeddings.Laser`` once per process, on the CPU by default.

    Parameters
    ----------
    model_dir : str or path-like, default=None
        Folder with ``bilstm.93langs.2018-12-26.pt``, ``93langs.fcodes`` and
        ``93langs.fvocab``; see
        :func:`sklearn_fairaes.resources.resolve_laser_files` for where else
        they are looked for.
    max_tokens : int, default=12000
        Largest BiLSTM batch, in BPE tokens (laserembeddings' own batching).
    device : str, default=None
        ``None`` or ``"cpu"``: the CPU; ``"cuda"`` or ``"cuda:N"``: that GPU
        (a ValueError when CUDA is not available). laserembeddings sends
        each batch to torch's current GPU: for ``"cuda:N"`` call
        ``embed_sentences`` inside ``torch.cuda.device(N)``
        (:class:`LaserEncoder` does).

    Returns
    -------
    laser : laserembeddings.Laser
        Shared by every caller asking for the same files (same path, size and
        modification time) and ``max_tokens``.

    Raises
    ------
    ImportError
        If ``laserembeddings`` is not installed; the message names the extra.
    ResourceNotFoundError
        If a model file is missing; the message gives the download command.
    ValueError
        If ``device`` is not one this machine has.

    Examples
    --------
    >>> from sklearn_fairaes.text import load_laser
    >>> laser = load_laser("/folder/with/laser/files")  # doctest: +SKIP
    >>> laser.embed_sentences(["A sentence."], lang="en").shape  # doctest: +SKIP
    (1, 1024)
    """
    _check_laser_device(device)
    module = require("laserembeddings", purpose="LASER embeddings")
    return _load_files(module, resolve_laser_files(model_dir), max_tokens, device)


def _check_laser_device(device: str | None) -> None:
    check_device(device, purpose="LASER embeddings")
    if device is not None and not str(device).startswith(("cpu", "cuda")):
        # laserembeddings knows only its "cpu" flag and torch's .cuda()
        raise ValueError(
            f"device={device!r}: LASER runs on 'cpu' or 'cuda' ('cuda:N') only "
            "(laserembeddings has no other device)"
        )


def _cuda_index(device: str | None) -> int | None:
    if device is None or not str(device).startswith("cuda"):
        return None
    _, _, index = str(device).partition(":")
    return int(index) if index else None


def _load_files(
    module: Any, files: Mapping[str, str], max_tokens: int, device: str | None = None
) -> Any:
    key = (tuple(_signature(files[k]) for k in sorted(files)), max_tokens, device)
    on_gpu = device is not None and str(device).startswith("cuda")
    with _LOCK:
        if key not in _LASERS:
            with _gpu_context(device):
                # laserembeddings moves the BiLSTM with .cuda(): the current GPU
                _LASERS[key] = module.Laser(
                    bpe_codes=files["bpe_codes"],
                    bpe_vocab=files["bpe_vocab"],
                    encoder=files["encoder"],
                    embedding_options={"cpu": not on_gpu, "max_tokens": max_tokens},
                )
        return _LASERS[key]


def _gpu_context(device: str | None) -> Any:
    """A context in which torch's current GPU is ``device``'s (a no-op off CUDA).

    laserembeddings puts its model and each batch on the current GPU
    (``.cuda()``), so ``"cuda:1"`` needs the current device set while it loads
    and encodes.
    """
    import contextlib

    index = _cuda_index(device)
    if index is None:
        return contextlib.nullcontext()
    import torch

    return torch.cuda.device(index)


class LaserEncoder(_BaseEssayEncoder):
    """LASER embeddings of essays (the paper's §4.2.4).

    Calls ``laserembeddings.Laser.embed_sentences`` -- Moses tokenisation for
    ``lang``, lower-casing, LASER's BPE, then the BiLSTM encoder max-pooled
    over all tokens -- on the CPU. The vectors are the ones laserembeddings
    itself returns for the same texts. With a ``cache`` (opt-in), embeddings go
    through the package's embedding cache, so clones of this encoder (in a
    grid search, say) encode each distinct essay once.

    The model files (``bilstm.93langs.2018-12-26.pt``, ``93langs.fcodes``,
    ``93langs.fvocab``) are not on any package registry. On a machine with
    internet, ``python -m laserembeddings download-models FOLDER`` fetches
    them; then pass ``model_dir=FOLDER`` or set ``LASER_MODELS_DIR=FOLDER``.

    Parameters
    ----------
    lang : str, default="en"
        ISO 639-1 code of the essays' language, for the tokeniser (LASER's
        encoder itself is language-agnostic). ``"zh"`` and ``"ja"`` need
        laserembeddings' ``zh``/``ja`` extras.
    model_dir : str or path-like, default=None
        Folder holding the three model files. When None, or when a file is not
        there, ``$LASER_MODELS_DIR`` (or ``$FAIRAES_LASER_DIR``) and then
        laserembeddings' own ``data`` folder are searched; see
        :func:`sklearn_fairaes.resources.resolve_laser_files`.
    pooling : {"essay", "sentence_mean"}, default="essay"
        ``"essay"``: each essay is one input to the encoder, as laserembeddings
        does with a string; the BiLSTM reads the whole essay, however long (no
        truncation; LASER was trained on sentences). ``"sentence_mean"``: each
        essay is cut into sentences by :func:`split_sentences`, each sentence
        is embedded, and the essay vector is their mean (the "mean-pooled
        variant"). An empty essay gets the model's embedding of ``""`` in both
        cases.
    max_tokens : int, default=12000
        Largest batch given to the BiLSTM, in BPE tokens (laserembeddings'
        default); lower it to save memory. An essay longer than this is still
        embedded whole, in a batch of its own. It does not change the vectors
        beyond floating-point rounding, so it is not part of the cache key.
    device : str, default=None
        ``None`` or ``"cpu"``: the CPU (laserembeddings' ``cpu`` option);
        ``"cuda"`` or ``"cuda:N"``: that GPU. ``"cuda"`` on a machine without
        CUDA raises a ValueError at ``fit``, before the model loads
        (laserembeddings itself would fall back to the CPU without a word).
        Like ``max_tokens`` it changes only the rounding and is not part of
        the cache key.
    cache : bool, str, path or EmbeddingCache, default=None
        None or False: no cache, every call encodes (the estimator keeps no
        state outside itself); True: the process-wide in-memory cache, bounded
        to 256 MiB of vectors (least recently used dropped first), which
        clones share; a folder: that on-disk cache (shared by joblib worker
        processes and later runs); an
        :class:`~sklearn_fairaes.text.EmbeddingCache`: that one.

    Attributes
    ----------
    model_files_ : dict
        The files loaded: ``{"encoder": path, "bpe_codes": path, "bpe_vocab": path}``.
    embedding_dim_ : int
        Size of the vectors (1024 for the released model).

    See Also
    --------
    SentenceBertEncoder : Sentence-BERT essay embeddings (§4.2.3).
    split_sentences : The sentence splitter used by ``pooling="sentence_mean"``.

    Notes
    -----
    The cache key holds the SHA-256 of each model file (computed once per
    process and file version), ``lang`` and ``pooling``, so cached vectors are
    never served for other weights, and a disk cache is valid on any machine
    that has the same files. Fitting loads the model once per process; clones
    and unpickled copies share it, and the torch model is never pickled.

    Examples
    --------
    >>> from sklearn.base import clone
    >>> from sklearn_fairaes.text import LaserEncoder
    >>> enc = LaserEncoder(pooling="sentence_mean")
    >>> clone(enc).get_params()["pooling"]
    'sentence_mean'
    >>> enc = LaserEncoder(model_dir="/folder/with/laser/files")  # doctest: +SKIP
    >>> enc = enc.fit(["x"])  # doctest: +SKIP
    >>> enc.transform(["I waited patiently.", "I was patient."]).shape  # doctest: +SKIP
    (2, 1024)
    """

    def __init__(
        self,
        lang: str = "en",
        model_dir: str | os.PathLike[str] | None = None,
        *,
        pooling: str = "essay",
        max_tokens: int = 12000,
        device: str | None = None,
        cache: bool | str | os.PathLike[str] | EmbeddingCache | None = None,
    ) -> None:
        self.lang = lang
        self.model_dir = model_dir
        self.pooling = pooling
        self.max_tokens = max_tokens
        self.device = device
        self.cache = cache

    # the package's form of sklearn's _parameter_constraints, checked in fit
    # (sklearn_fairaes._param_validation.check_params); lang and model_dir below
    _param_rules: ClassVar[dict[str, list[Any]]] = {
        "pooling": [Options(_POOLINGS)],
        "max_tokens": [Interval(numbers.Integral, 1, None)],
    }

    def _validate_encoder_params(self) -> None:
        super()._validate_encoder_params()
        if not isinstance(self.lang, str) or not self.lang:
            raise ValueError(
                f"lang must be a language code such as 'en' (ISO 639-1), got {self.lang!r}"
            )
        check_params(self, self._param_rules)
        if self.model_dir is not None and not isinstance(
            self.model_dir, (str, os.PathLike)
        ):
            raise TypeError(
                f"model_dir must be None or a folder path, got "
                f"{type(self.model_dir).__name__}"
            )

    def _laser(self) -> Any:
        module = require("laserembeddings", purpose="LASER embeddings")
        return _load_files(module, self.model_files_, int(self.max_tokens), self.device)

    def _load(self) -> None:
        # first: a device this machine lacks is refused before anything loads
        _check_laser_device(self.device)
        require("laserembeddings", purpose="LASER embeddings")
        self.model_files_ = resolve_laser_files(self.model_dir)
        # embedding "" checks that the tokeniser for lang loads, and reads the size
        self.embedding_dim_ = int(self._embed([""]).shape[1])

    def _identity(self) -> dict[str, Any]:
        return {
            "encoder": "laserembeddings",
            "files": {
                key: _fingerprint(path) for key, path in sorted(self.model_files_.items())
            },
            "lang": self.lang,
            "pooling": self.pooling,
        }

    def _embed(self, texts: Iterable[str]) -> NDArray[Any]:
        torch = require("torch", extra="laser", purpose="LASER embeddings")
        laser = self._laser()
        # laserembeddings keeps the autograd graph of each batch; inference needs none
        with torch.no_grad(), _gpu_context(self.device):
            return laser.embed_sentences(list(texts), lang=self.lang)

    def _encode(self, texts: list[str]) -> NDArray[Any]:
        if self.pooling == "essay":
            return self._embed(texts)
        per_essay = [split_sentences(text) for text in texts]
        distinct = list(dict.fromkeys(s for sentences in per_essay for s in sentences))
        vectors = self._embed(distinct)
        row = {sentence: i for i, sentence in enumerate(distinct)}
        out = np.empty((len(texts), vectors.shape[1]), dtype=vectors.dtype)
        for i, sentences in enumerate(per_essay):
            out[i] = vectors[[row[s] for s in sentences]].mean(axis=0, dtype=np.float64)
        return out
