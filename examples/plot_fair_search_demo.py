"""
Choosing a model for agreement and individual fairness
======================================================

:class:`sklearn_fairaes.FairGridSearchCV` is scikit-learn's grid search with a
second kind of score: each candidate is cross-validated for agreement (QWK)
and for individual fairness (the Lipschitz fraction of its out-of-fold
predictions under a fixed task representation), and the model is chosen as
the best-agreeing candidate that meets a fairness constraint. This example
runs it on the demo corpus and draws every candidate in the (QWK, Lipschitz
fraction) plane with the Pareto front.
"""

# %%
# The search
# ----------
import matplotlib.pyplot as plt
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline

import sklearn_fairaes as sf

data = sf.load_demo_essays()
essays, human = data["essay"].tolist(), data["score"].to_numpy(dtype=float)

# the similarity metric belongs to the task, not to the model: bag of words,
# fitted on the essays each fold is scored on
task = sf.BowVectorizer(min_df=2)
pipeline = Pipeline([("representation", sf.TfidfEssayVectorizer()), ("ridge", Ridge())])
grid = {
    "representation": [sf.TfidfEssayVectorizer(min_df=2), sf.BowVectorizer(min_df=2)],
    "ridge__alpha": [0.3, 1.0, 3.0, 10.0, 30.0, 100.0],
}
search = sf.FairGridSearchCV(
    pipeline,
    grid,
    scoring={
        "qwk": sf.make_fairness_scorer("qwk"),
        "lipschitz_fraction": sf.make_fairness_scorer(
            "lipschitz_fraction", representation=task
        ),
    },
    fairness_constraints={"lipschitz_fraction": 0.835},
    refit="qwk",
    cv=5,
)
search.fit(essays, human)

# %%
# The fractions are lower than over the whole corpus: each is computed on the
# 36 essays of one test fold, under a representation fitted on them.

summary = search.summary_frame()
print(
    summary[
        ["params", "mean_qwk", "mean_lipschitz_fraction", "meets_constraints", "selected"]
    ]
    .round(4)
    .to_string(index=False)
)

# %%
# Agreement against fairness
# --------------------------
# Each point is a candidate (mean over the folds). Candidates on the Pareto
# front cannot gain agreement without losing fairness; the chosen one is the
# best-agreeing candidate above the dotted constraint line.
results = search.cv_results_
qwk, fairness = results["mean_test_qwk"], results["mean_test_lipschitz_fraction"]
kind = [
    "TF-IDF" if "Tfidf" in repr(p["representation"]) else "BOW" for p in results["params"]
]

fig, ax = plt.subplots(figsize=(6.4, 4))
for label, marker in [("TF-IDF", "o"), ("BOW", "s")]:
    idx = [i for i, k in enumerate(kind) if k == label]
    ax.scatter(qwk[idx], fairness[idx], marker=marker, label=f"{label} + Ridge")
front = sorted(search.pareto_front_, key=lambda i: qwk[i])
ax.plot(qwk[front], fairness[front], color="k", lw=1, label="Pareto front")
ax.scatter(
    qwk[search.best_index_],
    fairness[search.best_index_],
    s=160,
    facecolors="none",
    edgecolors="C3",
    linewidths=2,
    label="chosen",
)
ax.axhline(0.835, color="grey", ls=":", label="constraint")
for i, params in enumerate(results["params"]):
    ax.annotate(
        f"{params['ridge__alpha']:g}",
        (qwk[i], fairness[i]),
        fontsize=7,
        xytext=(3, 3),
        textcoords="offset points",
    )
ax.set_xlabel("mean QWK (out of fold)")
ax.set_ylabel("mean Lipschitz fraction under BOW")
ax.legend(fontsize=8)
fig.tight_layout()

print(f"chosen: {search.best_params_}")
