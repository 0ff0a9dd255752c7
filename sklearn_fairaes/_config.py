"""Package-wide settings, in the manner of :func:`sklearn.set_config`.

One setting chooses how the pairwise engine of the individual-fairness metrics
runs its float32-screened passes (NumPy on the CPU, or torch on a CPU or CUDA
device); the counts are exact either way. The settings are per thread, like
scikit-learn's: :func:`set_config` changes them for the calling thread,
:func:`config_context` for a ``with`` block, and new threads start from the
defaults. :func:`_delayed` carries the caller's settings into joblib workers
(threads or processes), as :class:`sklearn.utils.parallel.Parallel` does for
scikit-learn's configuration. Tasks that scikit-learn itself sends to workers
(``cross_validate``, ``GridSearchCV``) carry only scikit-learn's settings, so
the package's scorers take ours with them: a scorer keeps the settings in
force when it was made and uses them where the calling thread has set none
(see :func:`_settings_for`).
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from ._param_validation import PAIR_DEVICES, check_device

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["config_context", "get_config", "set_config"]

#: Backends of the pairwise engine's float32-screened passes.
PAIR_BACKENDS = ("numpy", "torch")

#: Devices the torch pair backend accepts (``"cuda:N"`` picks one GPU).
DEVICES = PAIR_DEVICES

_DEFAULTS: dict[str, Any] = {"pair_backend": "numpy", "device": "cpu", "bf16_range": True}
_local = threading.local()


def _settings_set() -> bool:
    """Whether the calling thread runs under settings it set itself.

    True after :func:`set_config` in this thread, and inside
    :func:`config_context` (also the one a carried task runs under); False in
    a thread or worker process that runs under the defaults it started with.
    """
    return bool(getattr(_local, "explicit", False))


def _settings_for(captured: dict[str, Any]) -> dict[str, Any]:
    """The settings an object made under ``captured`` runs under here.

    The calling thread's settings where it set any, else ``captured``: a
    joblib worker of scikit-learn's (``cross_validate(n_jobs=2)``) starts from
    the defaults, and sklearn's ``delayed`` carries only sklearn's own
    configuration, so a scorer made inside ``config_context(...)`` brings that
    context's settings with it.
    """
    return get_config() if _settings_set() else dict(captured)


def _thread_config() -> dict[str, Any]:
    config: dict[str, Any] | None = getattr(_local, "config", None)
    if config is None:
        config = _local.config = dict(_DEFAULTS)
    return config


def check_pair_backend(backend: object, name: str = "pair_backend") -> str:
    """``backend`` if it is one of :data:`PAIR_BACKENDS`, else a ValueError."""
    if not isinstance(backend, str) or backend not in PAIR_BACKENDS:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, PAIR_BACKENDS))}, got {backend!r}"
        )
    return backend


def check_device_name(device: object, name: str = "device") -> str:
    """``device`` if it names a CPU or CUDA device, else a ValueError.

    The pair engine's form of the package's one device check
    (:func:`sklearn_fairaes._param_validation.check_device`): only the spelling is
    checked here; whether this machine has the device is checked when an
    engine is built (see ``metrics._torch_pairs``).
    """
    return cast(
        str, check_device(device, purpose="the pair engine", name=name, pair_engine=True)
    )


def get_config() -> dict[str, Any]:
    """Return the current settings of sklearn_fairaes (a copy).

    Returns
    -------
    config : dict
        Keys are the parameters of :func:`set_config`.

    See Also
    --------
    set_config : Change the settings.
    config_context : Change the settings within a ``with`` block.

    Examples
    --------
    >>> import sklearn_fairaes
    >>> config = sklearn_fairaes.get_config()
    >>> config["pair_backend"], config["device"]
    ('numpy', 'cpu')
    """
    return dict(_thread_config())


def set_config(
    pair_backend: str | None = None,
    device: str | None = None,
    bf16_range: bool | None = None,
) -> None:
    """Change the settings of sklearn_fairaes for the calling thread.

    The pairwise engine of the individual-fairness metrics reads them when it
    is built (each call of :func:`~sklearn_fairaes.lipschitz_fraction` builds
    one); its ``backend`` and ``device`` parameters override them.

    Parameters
    ----------
    pair_backend : {"numpy", "torch"}, default=None
        How the float32-screened passes over the pairs of essays run: matrix
        products and the elementwise screen in NumPy on the CPU, or in torch
        on ``device`` (only counts, per-block extremes and the few pairs the
        screen cannot decide come back to the host, where they are settled in
        float64 as with NumPy). The counts are identical either way. torch
        comes with the ``sbert`` extra. None leaves the setting unchanged
        (default ``"numpy"``).
    device : {"cpu", "cuda", "cuda:N"}, default=None
        Device of the torch pair backend; ``"cuda"`` needs a CUDA build of
        torch and a GPU, checked when an engine is built. Encoders take their
        own ``device`` parameter. None leaves the setting unchanged (default
        ``"cpu"``).
    bf16_range : bool, default=None
        Whether the NumPy backend's distance-range pass over many essays
        (20,000 or more; 40,000 when torch is not imported yet) may take the
        candidates for the nearest and the farthest pair from bfloat16 matrix
        products in torch, on CPUs with AMX bfloat16 units (Intel Xeon 4th
        generation and later), where they are about five times as fast as
        float32 products; on CPUs without AMX but with int8 dot products
        (AVX-512 VNNI or AVX-VNNI: AMD Zen 4, Intel Ice Lake and later) from
        exact int8 products instead (``torch._int_mm``, about twice as fast).
        The window around the extremes holds every candidate of the float32
        pass, and the candidates' exact distances give the range, so the
        range, and every count normalised by it, is exactly the same. Nothing
        changes without torch or without either unit. None leaves the setting
        unchanged (default True).

    Raises
    ------
    ValueError
        If ``pair_backend`` or ``device`` is not one of the choices.
    TypeError
        If ``bf16_range`` is not a bool.

    See Also
    --------
    get_config : The current settings.
    config_context : Change the settings within a ``with`` block.

    Examples
    --------
    >>> import sklearn_fairaes
    >>> sklearn_fairaes.set_config(pair_backend="numpy")
    >>> sklearn_fairaes.get_config()["pair_backend"]
    'numpy'
    """
    config = _thread_config()
    # validate all before changing any, so a bad call changes nothing
    new: dict[str, Any] = {}
    if pair_backend is not None:
        new["pair_backend"] = check_pair_backend(pair_backend)
    if device is not None:
        new["device"] = check_device_name(device)
    if bf16_range is not None:
        if not isinstance(bf16_range, bool):
            raise TypeError(f"bf16_range must be True or False, got {bf16_range!r}")
        new["bf16_range"] = bf16_range
    config.update(new)
    _local.explicit = True


@contextmanager
def config_context(
    *,
    pair_backend: str | None = None,
    device: str | None = None,
    bf16_range: bool | None = None,
) -> Iterator[None]:
    """Change the settings of sklearn_fairaes within a ``with`` block.

    The previous settings come back when the block ends, also on an error.

    Parameters
    ----------
    pair_backend : {"numpy", "torch"}, default=None
        As in :func:`set_config`; None keeps the current setting.
    device : {"cpu", "cuda", "cuda:N"}, default=None
        As in :func:`set_config`; None keeps the current setting.
    bf16_range : bool, default=None
        As in :func:`set_config`; None keeps the current setting.

    Yields
    ------
    None

    Raises
    ------
    ValueError
        If ``pair_backend`` or ``device`` is not one of the choices (before the
        block runs).

    See Also
    --------
    set_config : Change the settings for the calling thread.
    get_config : The current settings.

    Examples
    --------
    >>> import numpy as np
    >>> import sklearn_fairaes
    >>> X = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 1.0]])
    >>> with sklearn_fairaes.config_context(pair_backend="torch", device="cpu"):
    ...     sklearn_fairaes.lipschitz_fraction(X, [2, 2, 5, 5])
    0.5
    >>> sklearn_fairaes.get_config()["pair_backend"]
    'numpy'
    """
    old = get_config()
    old_explicit = _settings_set()
    set_config(pair_backend=pair_backend, device=device, bf16_range=bf16_range)
    try:
        yield
    finally:
        _thread_config().update(old)
        _local.explicit = old_explicit


class _Configured:
    """``function`` called under the settings captured when the task was made."""

    def __init__(self, function: Callable[..., Any], config: dict[str, Any]) -> None:
        self.function = function
        self.config = config
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with config_context(**self.config):
            return self.function(*args, **kwargs)


def _delayed(
    function: Callable[..., Any], config: dict[str, Any] | None = None
) -> Callable[..., tuple[Any, ...]]:
    """:func:`joblib.delayed` that carries settings into the worker.

    ``config`` (default: the settings when ``_delayed`` is called) is set
    around each call in the worker, whatever its backend (threads, processes,
    Dask). Call it in the caller's thread before building the generator of
    tasks, as scikit-learn's ``Parallel.__call__`` captures its configuration:
    joblib may consume that generator from another thread (its dispatch
    callbacks), whose settings are the defaults.
    """
    captured = get_config() if config is None else dict(config)

    @functools.wraps(function)
    def make_task(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        return _Configured(function, captured), args, kwargs

    return make_task
