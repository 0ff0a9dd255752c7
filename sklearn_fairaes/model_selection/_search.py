"""Fairness-aware model selection on top of scikit-learn's own searches.

The paper (§5.4) chooses a representation and a model that balance agreement
with human raters against individual fairness. The choice is a *refit rule*:
:func:`fair_refit` builds one, and any sklearn search with a dict ``scoring``
takes it as its callable ``refit`` (sklearn's own mechanism for a custom
selection). ``FairGridSearchCV`` and ``FairRandomizedSearchCV`` are thin
conveniences over ``GridSearchCV`` / ``RandomizedSearchCV``: they build the
rule from their parameters, run sklearn's search with it, and add the
fairness columns. They never assign their own parameters during ``fit`` (a
search object may be fitted from several threads, and sklearn code that runs
later reads ``refit``). Everything else (cross-validation, parallelism through
joblib or Dask, ``cv_results_``, refitting, metadata routing) is sklearn's
code.

``HalvingGridSearchCV`` and ``HalvingRandomSearchCV`` take a single metric
only, and pick the best candidate of their last iteration whatever ``refit``
is, so a fairness rule cannot steer them; use a full search.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

from .._param_validation import Options, check_params

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FairGridSearchCV",
    "FairRandomizedSearchCV",
    "FairRefit",
    "FairnessConstraintWarning",
    "fair_refit",
    "pareto_front",
]

_SELECTIONS = ("constrained", "pareto", "weighted")

_Search = TypeVar("_Search", bound="_FairSearchMixin")


class FairnessConstraintWarning(UserWarning):
    """No candidate met the fairness constraints; the least violating one was chosen.

    Raised by :func:`fair_refit` rules (and so by :class:`FairGridSearchCV`
    and :class:`FairRandomizedSearchCV`) with ``selection="constrained"``; the
    message gives the total shortfall of the chosen candidate.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_fairaes.model_selection import FairnessConstraintWarning
    >>> issubclass(FairnessConstraintWarning, UserWarning)
    True
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("no candidate meets the constraints", FairnessConstraintWarning)
    >>> caught[0].category.__name__
    'FairnessConstraintWarning'
    """


def pareto_front(scores: ArrayLike) -> NDArray[np.int_]:
    """Return the indices of the rows of ``scores`` that no other row dominates.

    A row dominates another when it is at least as good on every column and
    better on one (higher is better everywhere). NaN rows are never on the front.

    Parameters
    ----------
    scores : array-like of shape (n_candidates, n_objectives)
        One row per candidate, one column per objective (higher is better).

    Returns
    -------
    front : ndarray of int
        Sorted indices.

    Examples
    --------
    >>> from sklearn_fairaes.model_selection import pareto_front
    >>> pareto_front([[0.7, 0.9], [0.8, 0.8], [0.6, 0.85], [0.8, 0.7]]).tolist()
    [0, 1]
    """
    S = np.asarray(scores, dtype=float)
    if S.ndim != 2:
        raise ValueError(
            f"scores must be 2-D (candidates x objectives), got shape {S.shape}"
        )
    valid = ~np.isnan(S).any(axis=1)
    front: list[np.intp] = []
    for i in np.flatnonzero(valid):
        others = S[valid]
        dominated = np.any(np.all(others >= S[i], axis=1) & np.any(others > S[i], axis=1))
        if not dominated:
            front.append(i)
    return np.asarray(front, dtype=int)


def _check_constraints(constraints: Mapping[str, Any] | None) -> dict[str, float]:
    if constraints is None:
        return {}
    if not isinstance(constraints, Mapping):
        raise TypeError(
            f"constraints must be a dict of scorer name -> smallest acceptable mean "
            f"score, e.g. {{'lipschitz_fraction': 0.95}}; got {type(constraints).__name__}"
        )
    checked = {}
    for name, bound in constraints.items():
        if (
            not isinstance(bound, numbers.Real)
            or isinstance(bound, bool)
            # numbers.Real declares no comparison with float; compare as is
            or not 0.0 <= cast(float, bound) <= 1.0
        ):
            raise ValueError(
                f"fairness constraint for {name!r} must be a number in [0, 1] (the "
                f"smallest acceptable mean score), got {bound!r}"
            )
        checked[str(name)] = float(bound)
    return checked


def _check_weights(weights: Mapping[str, Any] | None) -> dict[str, float] | None:
    if weights is None:
        return None
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"weights must be a dict of scorer name -> weight, got {type(weights).__name__}"
        )
    checked = {}
    for name, w in weights.items():
        if (
            not isinstance(w, numbers.Real)
            or isinstance(w, bool)
            or not np.isfinite(float(w))
        ):
            raise ValueError(f"weight of {name!r} must be a finite number, got {w!r}")
        checked[str(name)] = float(w)
    return checked


class FairRefit:
    """A fairness-aware refit rule: ``rule(cv_results) -> index of the chosen candidate``.

    Built by :func:`fair_refit` (see there for the parameters and the
    selection rules); pass it as ``refit=`` to ``GridSearchCV`` or
    ``RandomizedSearchCV`` with a dict ``scoring``. It keeps no state between
    calls, so one rule may serve several searches, in several threads, and
    it pickles.

    Parameters
    ----------
    agreement : str or None
        Name of the agreement scorer to maximise; None: the only scorer that
        is not a fairness scorer.
    fairness : list of str or None
        Names of the fairness scorers; None: every scorer named in
        ``constraints`` or ``weights``, or else every scorer but the
        agreement one.
    constraints : dict of str -> float
        Smallest acceptable mean score of each named fairness scorer.
    selection : {"constrained", "pareto", "weighted"}
        The selection rule.
    weights : dict of str -> float or None
        Weights of ``selection="weighted"``; None: equal weights.

    See Also
    --------
    fair_refit : Builds and validates the rule.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fairaes.model_selection import fair_refit
    >>> rule = fair_refit(agreement="qwk", constraints={"lf": 0.9})
    >>> rule
    fair_refit(agreement='qwk', constraints={'lf': 0.9})
    >>> rule({"mean_test_qwk": np.array([0.8, 0.7]), "mean_test_lf": np.array([0.85, 0.95]),
    ...       "params": [{}, {}]})
    1
    """

    def __init__(
        self,
        agreement: str | None,
        fairness: list[str] | None,
        constraints: dict[str, float],
        selection: str,
        weights: dict[str, float] | None,
    ) -> None:
        self.agreement = agreement
        self.fairness = fairness
        self.constraints = constraints
        self.selection = selection
        self.weights = weights

    def __repr__(self) -> str:
        parts = []
        if self.agreement is not None:
            parts.append(f"agreement={self.agreement!r}")
        if self.fairness is not None:
            parts.append(f"fairness={self.fairness!r}")
        if self.constraints:
            parts.append(f"constraints={self.constraints!r}")
        if self.selection != "constrained":
            parts.append(f"selection={self.selection!r}")
        if self.weights is not None:
            parts.append(f"weights={self.weights!r}")
        return f"fair_refit({', '.join(parts)})"

    def _names(self, results: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The agreement scorer and the fairness scorers, checked against ``results``."""
        scorers = sorted(
            k[len("mean_test_") :] for k in results if k.startswith("mean_test_")
        )
        if scorers == ["score"] or len(scorers) < 2:
            raise ValueError(
                f"fair_refit needs a search with a dict scoring of an agreement scorer "
                f"and fairness scorers (e.g. scoring={{'qwk': ..., "
                f"'lipschitz_fraction': ...}}); cv_results_ has the scores {scorers}"
            )
        named = set(self.constraints) | set(self.weights or {}) | set(self.fairness or [])
        for name in sorted(named | ({self.agreement} if self.agreement else set())):
            if name not in scorers:
                raise ValueError(
                    f"fair_refit names {name!r}, which is not a scorer of this search; "
                    f"the scorers are {scorers}"
                )
        agreement = self.agreement
        if agreement is None:
            others = [s for s in scorers if s not in named]
            if len(others) != 1:
                raise ValueError(
                    f"cannot tell which scorer measures agreement among {others}; pass "
                    f"fair_refit(agreement='<name of the agreement scorer>')"
                )
            agreement = others[0]
        if agreement in self.constraints or agreement in (self.fairness or []):
            raise ValueError(
                f"fair_refit names the agreement scorer {agreement!r} as a fairness "
                f"scorer; constrain fairness scorers only"
            )
        if self.fairness is not None:
            fairness = sorted(set(self.fairness) | set(self.constraints))
        elif self.constraints or self.weights:
            fairness = sorted(
                (set(self.constraints) | set(self.weights or {})) - {agreement}
            )
        else:
            fairness = [s for s in scorers if s != agreement]
        if not fairness:
            raise ValueError(
                "fair_refit found no fairness scorer; add one such as "
                "sf.make_fairness_scorer('lipschitz_fraction', representation=...) to "
                "scoring"
            )
        return agreement, fairness

    def explain(self, cv_results: Mapping[str, Any]) -> dict[str, Any]:
        """Apply the rule and return what it saw, without warning.

        Parameters
        ----------
        cv_results : dict
            A search's ``cv_results_``.

        Returns
        -------
        info : dict
            ``best_index`` (int), ``agreement`` (str), ``fairness`` (list of
            str), ``violation`` (total shortfall per candidate),
            ``feasible`` (bool per candidate), ``front`` (indices of the
            Pareto front), ``weighted_score`` (with ``selection="weighted"``)
            and ``warning`` (a message when no candidate meets the
            constraints).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_fairaes.model_selection import fair_refit
        >>> info = fair_refit(agreement="qwk", selection="pareto").explain(
        ...     {"mean_test_qwk": np.array([0.8, 0.7, 0.6]),
        ...      "mean_test_lf": np.array([0.85, 0.95, 0.9])})
        >>> info["agreement"], info["front"].tolist(), info["best_index"]
        ('qwk', [0, 1], 0)
        """
        agreement, fairness = self._names(cv_results)

        def means(name: str) -> NDArray[np.float64]:
            return np.asarray(cv_results[f"mean_test_{name}"], dtype=float)

        agree = means(agreement)
        n = agree.shape[0]
        violation = np.zeros(n)
        for name, bound in self.constraints.items():
            fair = means(name)
            violation += np.where(np.isnan(fair), np.inf, np.maximum(0.0, bound - fair))
        feasible = violation == 0
        front = pareto_front(np.column_stack([agree] + [means(f) for f in fairness]))
        info: dict[str, Any] = {
            "agreement": agreement,
            "fairness": fairness,
            "violation": violation,
            "feasible": feasible,
            "front": front,
        }
        # ties: the higher agreement, then the earlier candidate (sklearn's order)
        safe_agree = np.where(np.isnan(agree), -np.inf, agree)
        if self.selection == "constrained":
            if feasible.any():
                candidates = np.flatnonzero(feasible)
            else:
                least = violation.min()
                candidates = np.flatnonzero(violation == least)
                info["warning"] = (
                    f"no candidate meets the fairness constraints {self.constraints}; "
                    f"chose the one that violates them least (total shortfall "
                    f"{least:.4g}). Relax the constraints or widen the search."
                )
            best = candidates[np.argmax(safe_agree[candidates])]
        elif self.selection == "pareto":
            best = (
                np.argmax(safe_agree)
                if front.size == 0
                else front[np.argmax(safe_agree[front])]
            )
        else:
            names = [agreement, *fairness]
            weights = self.weights or {k: 1.0 / len(names) for k in names}
            total = np.zeros(n)
            for name in names:
                total += weights.get(name, 0.0) * np.nan_to_num(means(name), nan=-np.inf)
            info["weighted_score"] = total
            best = np.argmax(total)
        info["best_index"] = int(best)
        return info

    def __call__(self, cv_results: Mapping[str, Any]) -> int:
        """Return the index of the chosen candidate (what sklearn's ``refit`` calls).

        Parameters
        ----------
        cv_results : dict
            A search's ``cv_results_``.

        Returns
        -------
        best_index : int
            The chosen candidate; a :class:`FairnessConstraintWarning` when no
            candidate meets the constraints.
        """
        info = self.explain(cv_results)
        if "warning" in info:
            warnings.warn(info["warning"], FairnessConstraintWarning, stacklevel=2)
        return int(info["best_index"])


def fair_refit(
    *,
    constraints: Mapping[str, float] | None = None,
    selection: str = "constrained",
    weights: Mapping[str, float] | None = None,
    agreement: str | None = None,
    fairness: Sequence[str] | None = None,
) -> FairRefit:
    """Make a fairness-aware refit rule for any scikit-learn search.

    Pass the result as ``refit=`` of ``GridSearchCV`` or ``RandomizedSearchCV``
    with a dict ``scoring`` of an agreement scorer (e.g.
    ``sf.make_fairness_scorer("qwk")``) and fairness scorers (e.g.
    ``"lipschitz_fraction"``). The search then refits the candidate the rule
    picks. sklearn sets no ``best_score_`` for a callable ``refit``, and its
    ``score()`` needs ``refit`` to be a scorer name; :class:`FairGridSearchCV`
    gives both.

    Parameters
    ----------
    constraints : dict of str -> float, default=None
        Smallest acceptable mean (cross-validated) score of each named
        fairness scorer, in [0, 1].
    selection : {"constrained", "pareto", "weighted"}, default="constrained"
        How the candidate is chosen:

        - ``"constrained"``: the best agreement among candidates that meet every
          constraint; if none does, a :class:`FairnessConstraintWarning` and the
          candidate with the smallest total shortfall (ties: higher agreement).
        - ``"pareto"``: among the Pareto front over agreement and every
          fairness score, the one with the highest agreement.
        - ``"weighted"``: the largest ``sum(w_k * mean_score_k)`` over the
          agreement and fairness scorers, with ``weights`` (default: equal
          weights). Scores are used as they are, so mind their scales.
    weights : dict of str -> float, default=None
        Weights for ``selection="weighted"``.
    agreement : str, default=None
        Name (in ``scoring``) of the agreement scorer to maximise; None: the
        only scorer not named in ``constraints``, ``weights`` or ``fairness``.
    fairness : list of str, default=None
        Names of the fairness scorers; None: those named in ``constraints``
        or ``weights``, or else every scorer but the agreement one.

    Returns
    -------
    rule : FairRefit
        Callable as ``rule(cv_results) -> int``; stateless and picklable.
        Names are checked against the search's scorers when it is called.

    Raises
    ------
    ValueError
        On an unknown ``selection``, a constraint outside [0, 1],
        ``selection="constrained"`` without constraints, or weights given
        with another selection.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.model_selection import GridSearchCV
    >>> import sklearn_fairaes as sf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> y = np.clip(np.rint(X @ [1.0, 0.5, 0, 0] + 3), 0, 6)
    >>> search = GridSearchCV(
    ...     Ridge(), {"alpha": [0.1, 10.0, 1000.0]}, cv=3,
    ...     scoring={"qwk": sf.make_fairness_scorer("qwk"),
    ...              "lipschitz_fraction": sf.make_fairness_scorer("lipschitz_fraction")},
    ...     refit=sf.fair_refit(constraints={"lipschitz_fraction": 0.5}),
    ... ).fit(X, y)
    >>> search.best_params_
    {'alpha': 0.1}
    """
    if selection not in _SELECTIONS:
        raise ValueError(
            f"selection must be one of {sorted(_SELECTIONS)}, got {selection!r}"
        )
    checked = _check_constraints(constraints)
    if selection == "constrained" and not checked:
        raise ValueError(
            "selection='constrained' needs constraints, e.g. "
            "{'lipschitz_fraction': 0.95}; or use selection='pareto' or 'weighted'"
        )
    checked_weights = _check_weights(weights)
    if checked_weights is not None and selection != "weighted":
        raise ValueError(
            f"weights are used only by selection='weighted', got selection={selection!r}"
        )
    if agreement is not None and not isinstance(agreement, str):
        raise TypeError(
            f"agreement must be the name of a scorer (str), got {type(agreement).__name__}"
        )
    names = None
    if fairness is not None:
        if isinstance(fairness, str) or not all(isinstance(f, str) for f in fairness):
            raise TypeError("fairness must be a list of scorer names (str)")
        names = sorted(fairness)
    return FairRefit(agreement, names, checked, selection, checked_weights)


class _FairSearchMixin:
    """What both fair searches add to sklearn's: validation and the selection rule."""

    # the sklearn search this one runs (a fresh one per fit, never itself)
    _search_class: type
    _FAIR_PARAMS = ("fairness_constraints", "selection", "selection_weights")
    # set by the searches' __init__ (parameters) and by sklearn's fit
    scoring: Any
    refit: Any
    fairness_constraints: Mapping[str, float] | None
    selection: str
    selection_weights: Mapping[str, float] | None
    cv_results_: dict[str, Any]
    best_index_: int
    best_estimator_: Any
    scorer_: Any
    # set by fit below
    agreement_scorer_: str
    fairness_scorers_: list[str]
    best_score_: float
    pareto_front_: NDArray[np.int_]
    selection_rule_: FairRefit

    def _fair_rule(self) -> FairRefit:
        """The rule of this search's parameters, all checked before any work is done."""
        scoring = self.scoring
        if not isinstance(scoring, dict) or len(scoring) < 2:
            raise ValueError(
                "scoring must be a dict with at least one agreement scorer and one "
                "fairness scorer, e.g. {'qwk': sf.make_fairness_scorer('qwk'), "
                "'lipschitz_fraction': sf.make_fairness_scorer('lipschitz_fraction', "
                "representation=sf.TfidfEssayVectorizer())}"
            )
        kinds = {name: getattr(s, "kind", None) for name, s in scoring.items()}
        refit = self.refit
        if isinstance(refit, str):
            if refit not in scoring:
                raise ValueError(
                    f"refit={refit!r} must name the agreement scorer to maximise; the "
                    f"scorers are {sorted(scoring)}"
                )
            if kinds[refit] == "fairness":
                raise ValueError(
                    f"refit={refit!r} names a fairness scorer; it must name the "
                    f"agreement scorer to maximise (e.g. 'qwk')"
                )
            agreement = refit
        elif isinstance(refit, bool) or callable(refit):
            found = sorted(n for n, k in kinds.items() if k == "agreement")
            if len(found) != 1:
                raise ValueError(
                    f"cannot tell which scorer measures agreement (found {found}); pass "
                    f"refit='<name of the agreement scorer>'"
                )
            agreement = found[0]
        else:
            raise ValueError(
                f"refit must be True, False, a callable (as in sklearn) or the name of "
                f"the agreement scorer; got {refit!r} (the selection rule is the "
                f"'selection' parameter)"
            )
        constraints = _check_constraints(self.fairness_constraints)
        for name in constraints:
            if name not in scoring:
                raise ValueError(
                    f"fairness_constraints names {name!r}, which is not a scorer of this "
                    f"search; the scorers are {sorted(scoring)}"
                )
            if name == agreement:
                raise ValueError(
                    f"fairness_constraints names the agreement scorer {name!r}; constrain "
                    f"fairness scorers only"
                )
        fairness = sorted(
            n
            for n, k in kinds.items()
            if n != agreement and (k == "fairness" or n in constraints)
        )
        if not fairness:
            raise ValueError(
                "no fairness scorer in scoring; add one such as "
                "sf.make_fairness_scorer('lipschitz_fraction', representation=...)"
            )
        check_params(self, {"selection": [Options(_SELECTIONS)]})
        if self.selection == "constrained" and not constraints:
            raise ValueError(
                "selection='constrained' needs fairness_constraints, e.g. "
                "{'lipschitz_fraction': 0.95}; or use selection='pareto' or 'weighted'"
            )
        weights = self.selection_weights
        if weights is not None:
            unknown = sorted(set(weights) - {agreement, *fairness})
            if unknown:
                raise ValueError(
                    f"selection_weights names {unknown}, which are not agreement or "
                    f"fairness scorers of this search ({sorted([agreement, *fairness])})"
                )
            if self.selection != "weighted":
                # fair_refit refuses weights it would not use
                weights = None
        return fair_refit(
            constraints=constraints,
            selection=self.selection,
            weights=weights,
            agreement=agreement,
            fairness=fairness,
        )

    def _sklearn_search(self, rule: FairRefit) -> Any:
        """A new sklearn search with this one's parameters and sklearn's ``refit``.

        ``refit=True`` or a scorer name becomes the rule; False and a user's
        callable are passed on as they are, so sklearn treats them as it does.
        """
        params = cast(Any, self).get_params(deep=False)
        for name in self._FAIR_PARAMS:
            params.pop(name)
        refit = self.refit
        params["refit"] = rule if refit is True or isinstance(refit, str) else refit
        return self._search_class(**params)

    def fit(self: _Search, X: Any, y: ArrayLike | None = None, **params: Any) -> _Search:
        """Run the search and select a candidate with the fairness rule.

        Parameters
        ----------
        X : list of str, array-like or sparse matrix
            Essays (for pipelines that start with a representation) or features.
        y : array-like of shape (n_samples,), default=None
            Human scores.
        **params : dict
            Passed on as sklearn's search does (metadata routing).

        Returns
        -------
        self : object
            The fitted search.
        """
        rule = self._fair_rule()  # all checks run before any work is done
        # sklearn's search runs on its own object, so this one's parameters
        # (refit above all) are never reassigned, even for a moment
        search = self._sklearn_search(rule).fit(X, y, **params)
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)  # nothing stale from an earlier fit
        for name, value in vars(search).items():
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)
        info = rule.explain(self.cv_results_)
        self.selection_rule_ = rule
        self.agreement_scorer_ = info["agreement"]
        self.fairness_scorers_ = list(info["fairness"])
        if hasattr(self, "best_index_"):
            # sklearn sets no best_score_ for a callable refit; here it is the
            # chosen candidate's mean agreement
            self.best_score_ = float(
                self.cv_results_[f"mean_test_{self.agreement_scorer_}"][self.best_index_]
            )
        self.pareto_front_ = info["front"]
        self.cv_results_["constraint_violation"] = info["violation"]
        self.cv_results_["meets_constraints"] = info["feasible"]
        pareto = np.zeros(len(info["violation"]), dtype=bool)
        pareto[info["front"]] = True
        self.cv_results_["pareto_optimal"] = pareto
        if "weighted_score" in info:
            self.cv_results_["weighted_score"] = info["weighted_score"]
        return self

    def score(self, X: Any, y: ArrayLike | None = None, **params: Any) -> float:
        """Return the agreement score of the refitted candidate on the given data.

        sklearn's ``score`` of a multi-metric search uses the scorer named by
        ``refit``; here that is the agreement scorer whatever ``refit`` is
        (True, its name, or a callable).

        Parameters
        ----------
        X : list of str, array-like or sparse matrix
            Essays or features.
        y : array-like of shape (n_samples,), default=None
            Human scores.
        **params : dict
            Passed to the scorer; only with metadata routing enabled
            (``sklearn.set_config(enable_metadata_routing=True)``).

        Returns
        -------
        score : float
            The agreement scorer's value.
        """
        from sklearn import get_config
        from sklearn.utils.metadata_routing import process_routing
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "cv_results_")
        if not self.refit:
            raise AttributeError(
                f"This {type(self).__name__} instance was initialized with refit=False; "
                f"score is available only after refitting on the chosen parameters. "
                f"Refit an estimator on best_params_ yourself, or pass refit=True"
            )
        if get_config()["enable_metadata_routing"]:
            score_params = process_routing(self, "score", **params).scorer["score"]
        elif params:
            raise ValueError(
                f"score got {sorted(params)}, which are passed on only with metadata "
                f"routing: call sklearn.set_config(enable_metadata_routing=True) first"
            )
        else:
            score_params = {}
        scorer = self.scorer_[self.agreement_scorer_]
        return float(scorer(self.best_estimator_, X, y, **score_params))

    def get_metadata_routing(self) -> Any:
        """Get the metadata routing of this search: that of the sklearn search it runs.

        Returns
        -------
        routing : MetadataRouter
            What ``fit`` and ``score`` pass on to the estimator, the scorers
            and the splitter.
        """
        return self._sklearn_search(self._fair_rule()).get_metadata_routing()

    def summary_frame(self) -> pd.DataFrame:
        """Return one row per candidate: parameters, mean/std of every score, and flags.

        Returns
        -------
        frame : pandas.DataFrame
            Columns ``params``, ``mean_<scorer>``, ``std_<scorer>``,
            ``constraint_violation``, ``meets_constraints``, ``pareto_optimal``
            and ``selected``, sorted with the selected candidate first, then by
            agreement.
        """
        from sklearn.utils.validation import check_is_fitted

        from ..resources import require

        check_is_fitted(self, "cv_results_")
        pd = require("pandas", purpose="summary_frame")
        res = self.cv_results_
        data = {"params": [str(p) for p in res["params"]]}
        for name in [self.agreement_scorer_, *self.fairness_scorers_] + sorted(
            set(self.scoring) - {self.agreement_scorer_, *self.fairness_scorers_}
        ):
            data[f"mean_{name}"] = res[f"mean_test_{name}"]
            data[f"std_{name}"] = res[f"std_test_{name}"]
        for col in (
            "constraint_violation",
            "meets_constraints",
            "pareto_optimal",
            "weighted_score",
        ):
            if col in res:
                data[col] = res[col]
        frame = pd.DataFrame(data)
        frame["selected"] = False
        frame.loc[self.best_index_, "selected"] = True
        return frame.sort_values(
            ["selected", f"mean_{self.agreement_scorer_}"], ascending=False
        )


# The two searches' docstrings share these blocks; the order of the
# parameters follows each class's signature (numpydoc checks it).
_ESTIMATOR_DOC = """
    Parameters
    ----------
    estimator : estimator object
        Typically a Pipeline whose first step is an essay representation; it
        is cloned for every candidate.
"""
_PARAM_GRID_DOC = """\
    param_grid : dict or list of dicts
        Parameter names (str) mapped to the lists of settings to try, or a list
        of such dicts, whose grids are explored one after the other.
"""
_PARAM_DISTRIBUTIONS_DOC = """\
    param_distributions : dict or list of dicts
        Parameter names (str) mapped to distributions (with an ``rvs`` method,
        e.g. from ``scipy.stats``) or to lists of settings, which are sampled
        uniformly; with a list of dicts, a dict is drawn first.
"""
_FAIRNESS_DOC = """\
    scoring : dict of str -> scorer
        At least one agreement scorer (e.g. ``sf.make_fairness_scorer("qwk")``)
        and one or more fairness scorers (e.g.
        ``sf.make_fairness_scorer("lipschitz_fraction", representation=rep)``).
        A scorer's ``kind`` attribute tells which is which; any scorer named in
        ``fairness_constraints`` counts as a fairness scorer.
    fairness_constraints : dict of str -> float, default=None
        Smallest acceptable mean (cross-validated) score of each named
        fairness scorer, in [0, 1].
    selection : {"constrained", "pareto", "weighted"}, default="constrained"
        How the refitted candidate is chosen:

        - ``"constrained"``: the best agreement among candidates that meet every
          constraint; if none does, a :class:`FairnessConstraintWarning` and the
          candidate with the smallest total shortfall (ties: higher agreement).
        - ``"pareto"``: among the Pareto front over agreement and every
          fairness score (``pareto_front_``), the one with the highest agreement.
        - ``"weighted"``: the largest ``sum(w_k * mean_score_k)`` over the
          agreement and fairness scorers, with ``selection_weights`` (default:
          equal weights). Scores are used as they are, so mind their scales.
    selection_weights : dict of str -> float, default=None
        Weights for ``selection="weighted"``.
"""
_N_ITER_DOC = """\
    n_iter : int, default=10
        Number of parameter settings that are sampled; it trades off runtime
        against the quality of the solution.
"""
_REFIT_TO_PRE_DISPATCH_DOC = """\
    refit : bool, str or callable, default=True
        True: refit, on all the data, the candidate the ``selection`` rule
        picks, maximising the one scorer with ``kind == "agreement"``; a str:
        the same, maximising the agreement scorer of that name. False and a
        callable ``refit(cv_results) -> int`` behave as in sklearn (no
        refit and no ``best_index_``; the callable's choice). The fairness
        columns and ``pareto_front_`` are there in every case.
    cv : int, cross-validation generator or an iterable, default=None
        Determines the cross-validation splitting strategy: None for 5-fold, an
        int for that many folds (stratified for classifiers), or a splitter or
        an iterable of (train, test) index arrays.
    n_jobs : int, default=None
        Number of jobs to run in parallel; ``None`` means 1 unless in a
        :obj:`joblib.parallel_config` context, ``-1`` means all processors.
        Inside ``joblib.parallel_config(backend="dask")`` the candidates run on
        a Dask cluster.
    verbose : int, default=0
        Controls the verbosity: the higher, the more messages.
    pre_dispatch : int or str, default="2*n_jobs"
        Controls the number of jobs that get dispatched during parallel
        execution (a number, or an expression of ``n_jobs``).
"""
_RANDOM_STATE_DOC = """\
    random_state : int, RandomState instance or None, default=None
        Pseudo random number generator state used to sample the candidates;
        pass an int for reproducible output across multiple function calls.
"""
_ERROR_TO_END_DOC = """\
    error_score : "raise" or numeric, default=np.nan
        Value to assign to the score if an error occurs in estimator fitting;
        with ``"raise"``, the error is raised.
    return_train_score : bool, default=False
        If False, the ``cv_results_`` attribute does not include training
        scores.

    Attributes
    ----------
    cv_results_ : dict
        sklearn's columns plus ``constraint_violation``, ``meets_constraints``,
        ``pareto_optimal`` (and ``weighted_score``).
    best_index_, best_params_, best_estimator_ :
        The selected candidate (not with ``refit=False``, as in sklearn).
    best_score_ : float
        Its mean agreement score (not with ``refit=False``).
    selection_rule_ : FairRefit
        The rule built from the parameters (see :func:`fair_refit`);
        ``selection_rule_.explain(cv_results_)`` tells what it saw.
    pareto_front_ : ndarray of int
        Candidates on the Pareto front over agreement and fairness.
    agreement_scorer_ : str
        Name of the agreement scorer that was maximised.
    fairness_scorers_ : list of str
        Names of the fairness scorers, sorted.
"""


class FairGridSearchCV(_FairSearchMixin, GridSearchCV):
    _search_class = GridSearchCV
    __doc__ = (
        """Grid search that selects for agreement under individual-fairness constraints.
"""
        + _ESTIMATOR_DOC
        + _PARAM_GRID_DOC
        + _FAIRNESS_DOC
        + _REFIT_TO_PRE_DISPATCH_DOC
        + _ERROR_TO_END_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import Ridge
    >>> import sklearn_fairaes as sf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> y = np.clip(np.rint(X @ [1.0, 0.5, 0, 0] + 3), 0, 6)
    >>> search = sf.FairGridSearchCV(
    ...     Ridge(), {"alpha": [0.1, 10.0, 1000.0]},
    ...     scoring={"qwk": sf.make_fairness_scorer("qwk"),
    ...              "lipschitz_fraction": sf.make_fairness_scorer("lipschitz_fraction")},
    ...     fairness_constraints={"lipschitz_fraction": 0.5}, refit="qwk", cv=3,
    ... ).fit(X, y)
    >>> search.best_params_
    {'alpha': 0.1}
    >>> bool(search.cv_results_["meets_constraints"][search.best_index_])
    True
    """
    )

    def __init__(
        self,
        estimator: Any,
        param_grid: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        scoring: Mapping[str, Any],
        fairness_constraints: Mapping[str, float] | None = None,
        selection: str = "constrained",
        selection_weights: Mapping[str, float] | None = None,
        refit: bool | str | Callable[[dict[str, Any]], int] = True,
        cv: int | Any | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        error_score: float | str = np.nan,
        return_train_score: bool = False,
    ) -> None:
        super().__init__(
            estimator,
            param_grid,
            scoring=scoring,
            refit=refit,
            cv=cv,
            n_jobs=n_jobs,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.fairness_constraints = fairness_constraints
        self.selection = selection
        self.selection_weights = selection_weights


class FairRandomizedSearchCV(_FairSearchMixin, RandomizedSearchCV):
    _search_class = RandomizedSearchCV
    __doc__ = (
        """Randomized search that selects for agreement under fairness constraints.
"""
        + _ESTIMATOR_DOC
        + _PARAM_DISTRIBUTIONS_DOC
        + _FAIRNESS_DOC
        + _N_ITER_DOC
        + _REFIT_TO_PRE_DISPATCH_DOC
        + _RANDOM_STATE_DOC
        + _ERROR_TO_END_DOC
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import loguniform
    >>> from sklearn.linear_model import Ridge
    >>> import sklearn_fairaes as sf
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4))
    >>> y = np.clip(np.rint(X @ [1.0, 0.5, 0, 0] + 3), 0, 6)
    >>> search = sf.FairRandomizedSearchCV(
    ...     Ridge(), {"alpha": loguniform(1e-2, 1e3)}, n_iter=4, random_state=0,
    ...     scoring={"qwk": sf.make_fairness_scorer("qwk"),
    ...              "lipschitz_fraction": sf.make_fairness_scorer("lipschitz_fraction")},
    ...     selection="pareto", refit="qwk", cv=3,
    ... ).fit(X, y)
    >>> int(search.best_index_) in search.pareto_front_.tolist()
    True
    """
    )

    def __init__(
        self,
        estimator: Any,
        param_distributions: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        scoring: Mapping[str, Any],
        fairness_constraints: Mapping[str, float] | None = None,
        selection: str = "constrained",
        selection_weights: Mapping[str, float] | None = None,
        n_iter: int = 10,
        refit: bool | str | Callable[[dict[str, Any]], int] = True,
        cv: int | Any | None = None,
        n_jobs: int | None = None,
        verbose: int = 0,
        pre_dispatch: int | str = "2*n_jobs",
        random_state: int | np.random.RandomState | None = None,
        error_score: float | str = np.nan,
        return_train_score: bool = False,
    ) -> None:
        super().__init__(
            estimator,
            param_distributions,
            n_iter=n_iter,
            scoring=scoring,
            refit=refit,
            cv=cv,
            n_jobs=n_jobs,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            random_state=random_state,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.fairness_constraints = fairness_constraints
        self.selection = selection
        self.selection_weights = selection_weights
