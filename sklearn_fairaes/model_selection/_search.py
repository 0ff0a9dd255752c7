"""Fairness-aware model selection on top of scikit-learn's own searches.

The paper (§5.4) chooses a representation and a model that balance agreement
with human raters against individual fairness. ``FairGridSearchCV`` and
``FairRandomizedSearchCV`` are ``GridSearchCV`` / ``RandomizedSearchCV`` with
multi-metric scoring; the only addition is the rule that picks the candidate,
which is handed to sklearn as its callable ``refit``. Everything else (cross-
validation, parallelism through joblib or Dask, ``cv_results_``, refitting,
metadata routing) is sklearn's code.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FairGridSearchCV",
    "FairRandomizedSearchCV",
    "FairnessConstraintWarning",
    "pareto_front",
]

_SELECTIONS = ("constrained", "pareto", "weighted")

_Search = TypeVar("_Search", bound="_FairSearchMixin")


class FairnessConstraintWarning(UserWarning):
    """No candidate met the fairness constraints; the least violating one was chosen.

    Raised by :class:`FairGridSearchCV` and :class:`FairRandomizedSearchCV`
    with ``selection="constrained"``; the message gives the total shortfall of
    the chosen candidate.

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


class _SelectionRule:
    """The callable ``refit`` handed to sklearn: cv_results_ -> best index.

    It also records what it saw (feasible set, violations, front), so the
    search can expose them after ``fit``.
    """

    def __init__(
        self,
        agreement: str,
        fairness: list[str],
        constraints: dict[str, float],
        selection: str,
        weights: dict[str, float],
    ) -> None:
        self.agreement = agreement
        self.fairness = fairness
        self.constraints = constraints
        self.selection = selection
        self.weights = weights
        self.info: dict[str, Any] = {}

    def _means(self, results: Mapping[str, Any], name: str) -> NDArray[np.float64]:
        return np.asarray(results[f"mean_test_{name}"], dtype=float)

    def __call__(self, results: Mapping[str, Any]) -> int:
        agree = self._means(results, self.agreement)
        n = agree.shape[0]
        violation = np.zeros(n)
        for name, bound in self.constraints.items():
            fair = self._means(results, name)
            violation += np.where(np.isnan(fair), np.inf, np.maximum(0.0, bound - fair))
        feasible = violation == 0
        objectives = np.column_stack(
            [agree] + [self._means(results, f) for f in self.fairness]
        )
        front = pareto_front(objectives)
        self.info = {"violation": violation, "feasible": feasible, "front": front}
        # ties: the higher agreement, then the earlier candidate (sklearn's order)
        safe_agree = np.where(np.isnan(agree), -np.inf, agree)
        if self.selection == "constrained":
            if feasible.any():
                candidates = np.flatnonzero(feasible)
            else:
                least = violation.min()
                candidates = np.flatnonzero(violation == least)
                self.info["warning"] = (
                    f"no candidate meets the fairness constraints {self.constraints}; "
                    f"chose the one that violates them least (total shortfall "
                    f"{least:.4g}). Relax the constraints or widen the search."
                )
            return int(candidates[np.argmax(safe_agree[candidates])])
        if self.selection == "pareto":
            if front.size == 0:
                return int(np.argmax(safe_agree))
            return int(front[np.argmax(safe_agree[front])])
        names = [self.agreement, *self.fairness]
        total = np.zeros(n)
        for name in names:
            total += self.weights.get(name, 0.0) * np.nan_to_num(
                self._means(results, name), nan=-np.inf
            )
        self.info["weighted_score"] = total
        return int(np.argmax(total))


class _FairSearchMixin:
    """What both fair searches add to sklearn's: validation and the selection rule."""

    # set by the searches' __init__ (parameters) and by sklearn's fit
    scoring: Any
    refit: Any
    fairness_constraints: Mapping[str, float] | None
    selection: str
    selection_weights: Mapping[str, float] | None
    cv_results_: dict[str, Any]
    best_index_: int
    # set by fit below
    agreement_scorer_: str
    fairness_scorers_: list[str]
    best_score_: float
    pareto_front_: NDArray[np.int_]

    def _fair_scorers(self) -> _SelectionRule:
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
        elif refit is True:
            found = sorted(n for n, k in kinds.items() if k == "agreement")
            if len(found) != 1:
                raise ValueError(
                    f"cannot tell which scorer measures agreement (found {found}); pass "
                    f"refit='<name of the agreement scorer>'"
                )
            agreement = found[0]
        else:
            raise ValueError(
                f"refit must be True or the name of the agreement scorer; got {refit!r} "
                f"(the selection rule is the 'selection' parameter)"
            )
        constraints: dict[str, Any] = dict(self.fairness_constraints or {})
        for name, bound in constraints.items():
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
        if self.selection not in _SELECTIONS:
            raise ValueError(
                f"selection must be one of {sorted(_SELECTIONS)}, got {self.selection!r}"
            )
        if self.selection == "constrained" and not constraints:
            raise ValueError(
                "selection='constrained' needs fairness_constraints, e.g. "
                "{'lipschitz_fraction': 0.95}; or use selection='pareto' or 'weighted'"
            )
        given = self.selection_weights
        if given is None:
            names = [agreement, *fairness]
            weights = {n: 1.0 / len(names) for n in names}
        else:
            unknown = sorted(set(given) - {agreement, *fairness})
            if unknown:
                raise ValueError(
                    f"selection_weights names {unknown}, which are not agreement or "
                    f"fairness scorers of this search ({sorted([agreement, *fairness])})"
                )
            weights = {k: float(v) for k, v in given.items()}
        return _SelectionRule(agreement, fairness, constraints, self.selection, weights)

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
        rule = self._fair_scorers()  # all checks run before any work is done
        user_refit = self.refit
        # sklearn takes the selection rule through ``refit``; the user's value
        # (the agreement scorer's name) is restored straight after, so
        # get_params, clone and score() see what the user passed.
        self.refit = rule
        try:
            # sklearn is untyped here, so mypy cannot see the search's own fit
            cast(Any, super()).fit(X, y, **params)
        finally:
            self.refit = user_refit
        info = rule.info
        if "warning" in info:
            warnings.warn(info["warning"], FairnessConstraintWarning, stacklevel=2)
        self.agreement_scorer_ = rule.agreement
        self.fairness_scorers_ = list(rule.fairness)
        self.best_score_ = float(
            self.cv_results_[f"mean_test_{rule.agreement}"][self.best_index_]
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
    refit : True or str, default=True
        The agreement scorer to maximise (its name in ``scoring``); True when
        exactly one scorer has ``kind == "agreement"``. The best candidate is
        refitted on all the data, as sklearn does.
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
        The selected candidate.
    best_score_ : float
        Its mean agreement score.
    pareto_front_ : ndarray of int
        Candidates on the Pareto front over agreement and fairness.
    agreement_scorer_ : str
        Name of the agreement scorer that was maximised.
    fairness_scorers_ : list of str
        Names of the fairness scorers, sorted.
"""


class FairGridSearchCV(_FairSearchMixin, GridSearchCV):
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
        refit: bool | str = True,
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
        refit: bool | str = True,
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
