"""The one check of a torch ``device`` option, shared by every neural encoder.

Each encoder (Sentence-BERT, LASER), the audit and ``fairaes audit`` call it
before any model loads or any essay is read, so that ``device="cuda"`` on a
machine without CUDA is a clear ValueError up front rather than torch's
AssertionError ("Torch not compiled with CUDA enabled") deep inside a model's
``.to()`` after minutes of other work.
"""

from __future__ import annotations

from typing import Any

from ..resources import require

__all__ = ["check_device"]


def check_device(device: Any, *, purpose: str) -> None:
    """Refuse a device this machine does not have, before any model loads.

    ``None`` and ``"cpu"`` are accepted without importing torch (a run whose
    essays are all cached never needs it); anything else is parsed by
    ``torch.device``.

    Parameters
    ----------
    device : str or None
        The option as given (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...).
    purpose : str
        What the device is for, for the messages (``"Sentence-BERT embeddings"``).

    Raises
    ------
    TypeError
        If ``device`` is neither None nor a str.
    ValueError
        If torch does not know the device, or it is a CUDA device and CUDA is
        not available here (or has fewer GPUs than its index asks for).

    Examples
    --------
    >>> from sklearn_fairaes.text._device import check_device
    >>> check_device(None, purpose="Sentence-BERT embeddings")
    >>> check_device("cpu", purpose="Sentence-BERT embeddings")
    """
    if device is None or device == "cpu":
        return
    if not isinstance(device, str):
        raise TypeError(
            f"device must be None or a torch device name such as 'cpu' or 'cuda', "
            f"got {type(device).__name__}"
        )
    torch = require("torch", purpose=purpose)
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(
            f"device={device!r} is not a torch device ({exc}); use 'cpu', 'cuda' or "
            f"'cuda:N'"
        ) from None
    if parsed.type != "cuda":
        return
    if not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r} was asked for {purpose}, but CUDA is not available here "
            f"(torch {torch.__version__}, torch.cuda.is_available() is False); "
            "pass device='cpu' or device=None, or install a CUDA build of torch"
        )
    count = torch.cuda.device_count()
    if parsed.index is not None and parsed.index >= count:
        raise ValueError(
            f"device={device!r} was asked for {purpose}, but this machine has "
            f"{count} CUDA device(s) (cuda:0 to cuda:{count - 1})"
        )
