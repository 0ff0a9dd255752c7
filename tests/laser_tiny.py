"""Build a tiny LASER model, in LASER's own file formats, with random weights.

The three files are named as the released model's
(``sklearn_fairaes.resources.LASER_FILES``) and load through the real
``laserembeddings.Laser`` code path:

- ``93langs.fcodes``: fastBPE merge codes, one ``left right count`` per line
  (laserembeddings drops the count and hands them to subword-nmt as version
  0.2 codes, where ``</w>`` marks a word-final unit);
- ``93langs.fvocab``: the BPE vocabulary, one ``unit count`` per line, with
  ``@@`` marking a unit that continues the word;
- ``bilstm.93langs.2018-12-26.pt``: ``torch.save`` of ``{"params": kwargs of
  laserembeddings.encoder.Encoder, "model": its state_dict, "dictionary":
  {unit: index}}``, the dictionary holding fairseq's four special symbols.

Weights are drawn with NumPy from a seed, so the same seed gives the same
files (bit for bit in the tensors) on every machine.
"""

from __future__ import annotations

import string
from pathlib import Path

import numpy as np

from sklearn_fairaes.resources import LASER_FILES

# merge operations, most frequent first (each one joins two existing units)
MERGES = (
    ("t", "h"),
    ("th", "e</w>"),
    ("a", "n"),
    ("an", "d</w>"),
    ("i", "n"),
    ("in", "g</w>"),
    ("e", "r"),
    ("o", "n"),
    ("e", "d</w>"),
    ("s", "t"),
)
MERGED_UNITS = ("th", "the", "an", "and", "in", "ing", "er", "on", "ed", "st")
SYMBOLS = string.ascii_lowercase + string.digits + ".,;:!?'\"-()"
SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's order: pad is 1, eos 2, unk 3


def tiny_params(n_units, *, embed_dim=8, hidden_size=6, num_layers=2):
    """Keyword arguments of ``laserembeddings.encoder.Encoder`` for the tiny model."""
    return {
        "num_embeddings": n_units,
        "padding_idx": SPECIALS.index("<pad>"),
        "embed_dim": embed_dim,
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "bidirectional": True,
        "left_pad": True,
        "padding_value": 0.0,
    }


def write_tiny_laser(folder, *, seed=0, hidden_size=6):
    """Write the three LASER files into ``folder`` and return their paths.

    Parameters
    ----------
    folder : path-like
        Created if missing.
    seed : int, default=0
        Seed of the random weights.
    hidden_size : int, default=6
        LSTM size per direction; the embeddings have ``2 * hidden_size`` dimensions.

    Returns
    -------
    files : dict
        ``{"encoder": path, "bpe_codes": path, "bpe_vocab": path}`` (str).
    """
    import torch
    from laserembeddings.encoder import Encoder

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {key: str(folder / name) for key, name in LASER_FILES.items()}

    codes = "".join(f"{a} {b} {1000 - 10 * i}\n" for i, (a, b) in enumerate(MERGES))
    Path(files["bpe_codes"]).write_text(codes, encoding="utf-8")

    units = []
    for unit in (*SYMBOLS, *MERGED_UNITS):
        units += [unit + "@@", unit]
    vocab = "".join(f"{unit} {100 + i}\n" for i, unit in enumerate(units))
    Path(files["bpe_vocab"]).write_text(vocab, encoding="utf-8")

    dictionary = {symbol: i for i, symbol in enumerate(SPECIALS)}
    for unit in units:
        dictionary.setdefault(unit, len(dictionary))
    params = tiny_params(len(dictionary), hidden_size=hidden_size)
    shapes = Encoder(**params).state_dict()
    rng = np.random.default_rng(seed)
    state = {
        name: torch.from_numpy(rng.normal(0.0, 0.5, size=tuple(t.shape)).astype(np.float32))
        for name, t in shapes.items()
    }
    torch.save(
        {"params": params, "model": state, "dictionary": dictionary}, files["encoder"]
    )
    return files
