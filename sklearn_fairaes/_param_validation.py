"""The one parameter validator of the package: declarative constraints.

Estimators declare what each parameter accepts (``_param_rules``: a dict of
parameter name -> list of constraints, in the manner of scikit-learn's
``_parameter_constraints``) and check it in ``fit`` with :func:`check_params`;
the audit's options (``report._config``) use the same constraints through
:func:`unmet_constraints`. Built on public API only: scikit-learn's own
``Interval``/``StrOptions`` live in a private module. Data (essays, scores,
embeddings) is checked by :mod:`._validation`.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np

from .resources import require

__all__ = [
    "check_device",
    "check_params",
    "unmet_constraints",
    "Interval",
    "Options",
    "InvalidParameterError",
    "PAIR_DEVICES",
]


class Interval(NamedTuple):
    """A closed range of numbers, a constraint of :func:`check_params`.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        The kind of number (bool is neither here).
    low, high : float or None
        The bounds, both included; None: no bound on that side.

    Examples
    --------
    >>> import numbers
    >>> from sklearn_fairaes._param_validation import Interval
    >>> Interval(numbers.Real, 0, 1).describe()
    'a float in the range [0, 1]'
    """

    type: type
    low: float | None
    high: float | None

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is a number of this kind within the bounds."""
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.type):
            return False
        number = cast(float, value)
        return (self.low is None or number >= self.low) and (
            self.high is None or number <= self.high
        )

    def describe(self) -> str:
        """How the constraint reads in a message: ``'an int in the range [1, inf)'``."""
        kind = "an int" if self.type is numbers.Integral else "a float"
        low = "(-inf" if self.low is None else f"[{self.low}"
        high = "inf)" if self.high is None else f"{self.high}]"
        return f"{kind} in the range {low}, {high}"


class Options(NamedTuple):
    """A set of allowed strings, a constraint of :func:`check_params`.

    Examples
    --------
    >>> from sklearn_fairaes._param_validation import Options
    >>> Options(("unicode", "ascii")).describe()
    "a str among ['ascii', 'unicode']"
    """

    values: tuple[str, ...]

    def accepts(self, value: object) -> bool:
        """Whether ``value`` is one of the strings."""
        return isinstance(value, str) and value in self.values

    def describe(self) -> str:
        """How the constraint reads in a message (the options sorted)."""
        return f"a str among {sorted(self.values)}"


class InvalidParameterError(ValueError, TypeError):
    """A parameter of an estimator has the wrong type or value.

    Both a ``ValueError`` and a ``TypeError``, as scikit-learn's is, so that
    code catching either keeps working.

    Examples
    --------
    >>> from sklearn_fairaes._param_validation import InvalidParameterError
    >>> issubclass(InvalidParameterError, ValueError)
    True
    """


_MAX_SEED = 2**32 - 1


def _constraint_accepts(constraint: Any, value: object) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, (Interval, Options)):
        return constraint.accepts(value)
    if constraint is callable:
        return callable(value)
    if constraint == "boolean":
        return isinstance(value, (bool, np.bool_))
    if constraint == "random_state":
        return (
            value is None
            or isinstance(value, np.random.RandomState)
            or Interval(numbers.Integral, 0, _MAX_SEED).accepts(value)
        )
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    raise TypeError(f"unknown parameter constraint {constraint!r}")  # our own bug


def _constraint_text(constraint: Any) -> str:
    if constraint is None:
        return "None"
    if isinstance(constraint, (Interval, Options)):
        return constraint.describe()
    if constraint is callable:
        return "a callable"
    if constraint == "boolean":
        return "True or False"
    if constraint == "random_state":
        return (
            f"an int in the range [0, {_MAX_SEED}], a numpy.random.RandomState "
            f"instance or None"
        )
    return f"an instance of {constraint.__name__!r}"


def check_params(estimator: object, constraints: dict[str, list[Any]]) -> None:
    """Check an estimator's parameters against declarative constraints.

    The package's own form of scikit-learn's ``_parameter_constraints`` (whose
    constraint classes are private to sklearn): each parameter maps to a list
    of constraints, and its value must satisfy one of them. A constraint is
    None, a type, the builtin ``callable``, ``"boolean"``, ``"random_state"``
    (what :func:`sklearn.utils.check_random_state` takes), an
    :class:`Interval` or an :class:`Options`. Parameters not named are not
    checked.

    Parameters
    ----------
    estimator : object
        The estimator; its attributes of the constrained names are checked.
    constraints : dict of str to list
        Parameter name -> the constraints it may satisfy.

    Raises
    ------
    InvalidParameterError
        Naming the parameter, the estimator's class, what it must be and the
        value it has (sklearn's wording).

    Examples
    --------
    >>> import numbers
    >>> from sklearn.base import BaseEstimator
    >>> from sklearn_fairaes._param_validation import Interval, check_params
    >>> class Noise(BaseEstimator):
    ...     def __init__(self, rate=0.1):
    ...         self.rate = rate
    >>> rules = {"rate": [Interval(numbers.Real, 0, 1)]}
    >>> check_params(Noise(), rules)
    >>> check_params(Noise(rate=2), rules)
    Traceback (most recent call last):
    ...
    sklearn_fairaes._param_validation.InvalidParameterError: The 'rate' parameter of Noise must be a float in the range [0, 1]. Got 2 instead.
    """  # noqa: E501
    for name, allowed in constraints.items():
        value = getattr(estimator, name)
        must = unmet_constraints(value, allowed)
        if must is not None:
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} must be {must}. "
                f"Got {value!r} instead."
            )


def unmet_constraints(value: object, allowed: Sequence[Any]) -> str | None:
    """What ``value`` must be when it satisfies none of ``allowed``, else None.

    The one test behind :func:`check_params` and the audit's options
    (``report._config``), so that both accept the same values and word the
    constraint the same way.

    Parameters
    ----------
    value : object
        The value to check.
    allowed : sequence
        Constraints as in :func:`check_params`; the value must satisfy one.

    Returns
    -------
    must : str or None
        ``"an int in the range [1, inf) or None"`` when no constraint holds;
        None when one does.

    Examples
    --------
    >>> import numbers
    >>> from sklearn_fairaes._param_validation import Interval, unmet_constraints
    >>> unmet_constraints(3, [Interval(numbers.Integral, 1, None), None]) is None
    True
    >>> unmet_constraints(0, [Interval(numbers.Integral, 1, None), None])
    'an int in the range [1, inf) or None'
    """
    if any(_constraint_accepts(c, value) for c in allowed):
        return None
    texts = [_constraint_text(c) for c in allowed]
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"


#: The devices of the pair engine's torch backend (``"cuda:N"`` picks one GPU).
PAIR_DEVICES = ("cpu", "cuda", "cuda:N")


def check_device(
    device: object,
    *,
    purpose: str,
    name: str = "device",
    pair_engine: bool = False,
) -> str | None:
    """The package's one check of a torch ``device`` option.

    Two families of options take a device. The neural encoders (Sentence-BERT,
    LASER, the audit's ``device``) take None (each library's default) or any
    device torch knows, and a CUDA one must be there: ``device="cuda"`` on a
    machine without CUDA is refused before any model loads, not as torch's
    AssertionError deep inside a model's ``.to()`` after minutes of work. The
    pair engine (:func:`~sklearn_fairaes.set_config`) takes ``"cpu"``,
    ``"cuda"`` or ``"cuda:N"`` and only their spelling is checked here;
    whether the machine has the device is checked when an engine is built.

    ``None`` and ``"cpu"`` are accepted without importing torch (a run whose
    essays are all cached never needs it).

    Parameters
    ----------
    device : object
        The option as given.
    purpose : str
        What the device is for, for the messages (``"Sentence-BERT embeddings"``).
    name : str, default="device"
        The option's name, for the messages.
    pair_engine : bool, default=False
        Check it as a device of the pair engine (see above).

    Returns
    -------
    device : str or None
        ``device``, accepted.

    Raises
    ------
    TypeError
        If an encoder's ``device`` is neither None nor a str.
    ValueError
        If the pair engine's device is not spelled ``cpu``, ``cuda`` or
        ``cuda:N``; if torch does not know an encoder's device, or it is a
        CUDA device and CUDA is not available here (or has fewer GPUs than
        its index asks for).

    Examples
    --------
    >>> from sklearn_fairaes._param_validation import check_device
    >>> check_device(None, purpose="Sentence-BERT embeddings")
    >>> check_device("cpu", purpose="Sentence-BERT embeddings")
    'cpu'
    >>> check_device("gpu", purpose="the pair engine", pair_engine=True)
    Traceback (most recent call last):
    ...
    ValueError: device must be one of 'cpu', 'cuda', 'cuda:N' (N a GPU index), got 'gpu'
    """
    if pair_engine:
        if not isinstance(device, str) or not re.fullmatch(r"cpu|cuda(:\d+)?", device):
            raise ValueError(
                f"{name} must be one of {', '.join(map(repr, PAIR_DEVICES))} (N a GPU "
                f"index), got {device!r}"
            )
        return device
    if device is None or device == "cpu":
        return device
    if not isinstance(device, str):
        raise TypeError(
            f"{name} must be None or a torch device name such as 'cpu' or 'cuda', "
            f"got {type(device).__name__}"
        )

    torch = require("torch", purpose=purpose)
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as exc:
        raise ValueError(
            f"{name}={device!r} is not a torch device ({exc}); use 'cpu', 'cuda' or "
            f"'cuda:N'"
        ) from None
    if parsed.type != "cuda":
        return device
    if not torch.cuda.is_available():
        raise ValueError(
            f"{name}={device!r} was asked for {purpose}, but CUDA is not available "
            f"here (torch {torch.__version__}, torch.cuda.is_available() is False); "
            f"pass {name}='cpu' or {name}=None, or install a CUDA build of torch"
        )
    count = torch.cuda.device_count()
    if parsed.index is not None and parsed.index >= count:
        raise ValueError(
            f"{name}={device!r} was asked for {purpose}, but this machine has "
            f"{count} CUDA device(s) (cuda:0 to cuda:{count - 1})"
        )
    return device
