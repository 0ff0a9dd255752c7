"""
Is the demo scorer fair? Agreement, Lipschitz fraction and curves
=================================================================

The paper's measures, one at a time, on the demo corpus that ships with the
package (180 essays written for it, two raters, a resolved 0-12 score): train
two scorers out of fold, check their agreement with the raters, then ask
whether similar essays get similar scores under a fixed task representation,
with the human scores as the yardstick.
"""

# %%
# Out-of-fold scores of two models
# --------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.pipeline import make_pipeline

import sklearn_fairaes as sf

data = sf.load_demo_essays()
essays, human = data["essay"].tolist(), data["score"].to_numpy(dtype=float)
cv = KFold(5, shuffle=True, random_state=0)
scores = {"human scores": human}
for name, representation, alpha in [
    ("BOW + Ridge", sf.BowVectorizer(min_df=2), 50.0),
    ("TF-IDF + Ridge", sf.TfidfEssayVectorizer(min_df=2), 1.0),
]:
    model = make_pipeline(representation, Ridge(alpha=alpha))
    scores[name] = cross_val_predict(model, essays, human, cv=cv)

# %%
# Agreement with the raters
# -------------------------
# QWK on rounded predictions, the standardized mean difference and the
# degradation from the human-human QWK (Williamson et al., 2012).
for name in ["BOW + Ridge", "TF-IDF + Ridge"]:
    row = sf.agreement_report(human, scores[name]).iloc[0]
    print(
        f"{name:16s} QWK {row['qwk']:.3f}  SMD {row['smd']:+.3f}  acceptable {row['acceptable']}"
    )

# %%
# Individual fairness under a task representation
# -----------------------------------------------
# "Similar" is defined once, by a representation fitted on all essays, and
# every set of scores is judged under it.
task = sf.BowVectorizer(min_df=2).fit_transform(essays)
for name, y in scores.items():
    counts = sf.lipschitz_fraction(task, y, return_counts=True)
    print(
        f"{name:16s} Lipschitz fraction {counts['fraction']:.4f} "
        f"({counts['n_satisfied']:,} of {counts['n_pairs']:,} pairs)"
    )

# %%
# Where the violations are: score difference against distance
# -----------------------------------------------------------
fig, ax = plt.subplots(figsize=(7, 4))
for name, y in scores.items():
    curve = sf.score_distance_curve(task, y, n_bins=10)
    ax.errorbar(
        np.arange(1, 11),
        curve["mean_abs_diff"],
        yerr=curve["sem"],
        marker="o",
        capsize=2,
        label=f"{name} (Spearman {curve['spearman_rho']:.2f})",
    )
ax.set_xlabel("distance bin under BOW (1 = nearest 10% of pairs)")
ax.set_ylabel("mean |score difference|")
ax.legend()
fig.tight_layout()

# %%
# The nearest pairs and how differently they were scored
# ------------------------------------------------------
nearest = sf.extreme_pairs(task, k=3)["nearest"]
for i, j, distance in zip(nearest["i"], nearest["j"], nearest["distance"]):
    differences = {name: abs(y[i] - y[j]) for name, y in scores.items()}
    print(
        f"essays {i:3d} and {j:3d}, distance {distance:.3f}: |score difference| "
        + ", ".join(f"{name} {d:.2f}" for name, d in differences.items())
    )
