"""The acceptance runs of issue 16: ``fairaes audit`` on many prompts and on short answers.

1. **All eight ASAP prompts** (every essay of the five NEA test folds in
   ``../shared/data/asap-aes/raw_nea_folds/``), TF-IDF, one given scoring
   system, a declared scale per prompt, through the command line as a user runs
   it; target under 5 minutes on 2 cores. The human score is the first rater's
   ``rater1_domain1``; the given system ``rater2`` is the second rater's
   ``rater2_domain1``, so that the system's agreement is the human-human
   agreement of each prompt, which has an independent reference: sklearn's
   ``cohen_kappa_score`` on the two columns with the prompt's scale as labels.
   (The resolved ``domain1_score`` of prompts 1, 7 and 8 is the sum of the two
   raters' scores, twice a rater's scale, so a rater's score cannot stand in
   for a system on that scale.)
2. **SAF and Stita short answers** (``../shared/data/saf``, ``../shared/data/stita``):
   ``--prompt-col`` the question, ``--reference-col`` its reference answer, the
   trained baselines ``ridge`` and ``reference_similarity`` on TF-IDF.

Each run prints the command, its wall and CPU time, the child's peak memory and
the load average before and after, then checks the report's numbers against
independent computations (scipy's ``pdist``, sklearn's ``cohen_kappa_score``, the
Fisher-z mean of ``mean_qwk``).

Usage::

    python benchmarks/bench_audit_prompts.py [--runs asap,saf,stita] [--n-jobs 2]
        [--max-per-prompt N] [--keep DIR]

``--max-per-prompt`` keeps N random rows of each prompt (a quick check of the
script, not the recorded run). The inputs the CLI reads (the eight
prompts as one file, the per-prompt scales) are written to a temporary folder,
never into the repository; ``--keep DIR`` writes them and the reports there.

**Reading the fold files.** Each fold file has one record per line: every one of
their 12,983 lines (5 headers, 12,978 essays) has exactly the 28 tab-separated
fields of the header, no field spans lines (the line ends are CRLF, a bare LF
after each header and after one essay). A field that begins *and* ends with
``"`` is quoted: the outer quotes go, ``""`` inside is one ``"``; any other
``"`` is part of the text. CSV quoting across lines (pandas, and our own
``read_table``) misreads two places: essay 10534 of ``fold_1_test.tsv`` begins
with a quotation mark it never closes, so pandas runs it on into the next line
and reads essay 10540 (prompt 4) as part of it (12,977 essays, the count in
``SOURCE.md``; ``read_table`` refuses the file, naming that line); and 54
quoted essays hold a ``"`` that was not doubled, which pandas drops. This
script reads the files line by line with the rule above (12,978 essays, unique
ids; it checks that every other field equals pandas' reading) and writes the
union with pandas' quoting, which ``read_table`` then reads back unchanged.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
FOLDS = DATA / "asap-aes" / "raw_nea_folds"
SAF = DATA / "saf" / "saf_communication_networks_english_v2.tsv"
STITA = DATA / "stita" / "stita_gradeaid.tsv"

#: Each rater's ``domain1`` scale per ASAP prompt (essay_set). Prompts 1 and 2:
#: a 1-6 rubric; 3 and 4: 0-3; 5 and 6: 0-4; 7: four traits scored 0-3, summed
#: (SOURCE.md: rater1_domain1 is the sum of rater1_trait1..4 in every row), so
#: 0-12; 8: half the resolved 0-60, which is the sum of the two raters' scores
#: when no third rater resolved it (the 0-30 every rater's score lies in). The
#: resolved score's range is twice these for prompts 1, 7 and 8 (2-12, 0-24,
#: 0-60) and these for 2-6.
RATER_SCALE = {
    "1": (1, 6),
    "2": (1, 6),
    "3": (0, 3),
    "4": (0, 3),
    "5": (0, 4),
    "6": (0, 4),
    "7": (0, 12),
    "8": (0, 30),
}
N_FIELDS = 28


def _unquote(field: str) -> str:
    if len(field) >= 2 and field[0] == '"' and field[-1] == '"':
        return field[1:-1].replace('""', '"')
    return field


def read_fold(path: Path) -> pd.DataFrame:
    """One fold file, one record per line (see the module's docstring)."""
    text = path.read_text(encoding="utf-8-sig")
    lines = re.split(r"\r\n|\n|\r", text)
    if lines and lines[-1] == "":
        lines.pop()
    header = lines[0].split("\t")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise SystemExit(
                f"{path}: line {number} has {len(fields)} tab-separated fields, the "
                f"header {len(header)}; the one-record-per-line rule does not hold"
            )
        rows.append([_unquote(f) for f in fields])
    return pd.DataFrame(rows, columns=header)


def read_asap(folder: Path) -> pd.DataFrame:
    """The five test folds together (every essay once), checked against pandas."""
    frames = []
    n_differ = 0
    for k in range(5):
        path = folder / f"fold_{k}_test.tsv"
        ours = read_fold(path)
        theirs = pd.read_csv(
            path, sep="\t", encoding="utf-8-sig", dtype=str, keep_default_na=False
        )
        if list(theirs.columns) != list(ours.columns):
            raise SystemExit(f"{path}: pandas reads other columns than the header")
        a, b = ours.set_index("essay_id"), theirs.set_index("essay_id")
        common = a.index.intersection(b.index)
        # a row pandas ran on into the next line(s) holds a line break in its essay
        merged = common[b.loc[common, "essay"].str.contains("\r|\n", regex=True)]
        kept = common.difference(merged)
        others = [c for c in a.columns if c != "essay"]
        if not (a.loc[kept, others] == b.loc[kept, others]).all(axis=None):
            raise SystemExit(f"{path}: pandas reads a non-essay field differently")
        differ = int((a.loc[kept, "essay"] != b.loc[kept, "essay"]).sum())
        n_differ += differ
        swallowed = a.index.difference(b.index)
        note = ""
        if len(merged):
            note = (
                f" (it reads essay {', '.join(merged)} and the line(s) after it, "
                f"essay {', '.join(swallowed)}, as one row)"
            )
        print(
            f"  {path.name}: {len(ours):,} essays; pandas {len(theirs):,}{note}; "
            f"another essay text in {differ} more"
        )
        frames.append(ours)
    data = pd.concat(frames, ignore_index=True)
    if data["essay_id"].duplicated().any():
        raise SystemExit("the folds share essay ids: they are not a partition")
    print(
        f"  union: {len(data):,} essays, {data['essay_id'].nunique():,} unique ids; "
        f"pandas' CSV quoting reads {n_differ} other essays with another text (an "
        f"undoubled quote dropped)"
    )
    return data


def _sample(frame: pd.DataFrame, by: str, n: int) -> pd.DataFrame:
    """At most ``n`` random rows of each ``by`` group (seed 0), in their file order."""
    shuffled = frame.sample(frac=1.0, random_state=0)
    return shuffled.groupby(by, sort=False).head(n).sort_index()


# Runs the CLI in a process of its own and reports that process's peak RSS: the
# getrusage of this script's children is the largest child so far, not this run's.
_ENTRY = "import sys; from sklearn_fairaes.cli import main; sys.exit(main())"
_WRAPPER = (
    "import resource, subprocess, sys; "
    f"rc = subprocess.call([sys.executable, '-c', {_ENTRY!r}, *sys.argv[1:]]); "
    "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(f'\\nbench-resources {r.ru_utime + r.ru_stime} {r.ru_maxrss}'); "
    "sys.exit(rc)"
)


def run_cli(args: list[str], log: Path) -> float:
    """Run ``fairaes ARGS`` in a fresh process; print and return its wall time.

    CPU time and peak RSS are those of the CLI's process and its worker
    processes (the largest one for the RSS).
    """
    shown = " ".join(a if re.fullmatch(r"[\w./,=:+-]+", a) else repr(a) for a in args)
    print(f"  command: fairaes {shown}")
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, *args],
            stdout=fh,
            stderr=subprocess.STDOUT,
            text=True,
        )
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()
    text = log.read_text(encoding="utf-8")
    if proc.returncode != 0:
        print(text[-3000:])
        raise SystemExit(f"fairaes exited {proc.returncode} (its output is above)")
    cpu, peak_kb = re.findall(r"bench-resources (\S+) (\S+)", text)[-1]
    print(
        f"  time: {wall:.1f} s wall, {float(cpu):.0f} CPU-s, peak RSS "
        f"{int(peak_kb) / 1024:.0f} MB; load average {load0[0]:.2f} before, "
        f"{load1[0]:.2f} after (1/5/15 min after: {load1[0]:.2f}/{load1[1]:.2f}/"
        f"{load1[2]:.2f}) on {os.cpu_count()} CPUs"
    )
    return wall


def _tables(out: Path) -> dict[str, pd.DataFrame]:
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return {name: pd.DataFrame(rows) for name, rows in data["tables"].items()}


def _lipschitz_reference(X: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """The paper's recipe with scipy: cosine pdist, |dy|, both min-max normalised."""
    from scipy.spatial.distance import pdist

    d = pdist(X, "cosine")
    o = pdist(y[:, None], "cityblock")
    d = (d - d.min()) / (d.max() - d.min())
    o = (o - o.min()) / (o.max() - o.min())
    return float(np.mean(o <= d)), len(d)


def check_asap(data: pd.DataFrame, out: Path) -> None:
    from sklearn.metrics import cohen_kappa_score

    from sklearn_fairaes import TfidfEssayVectorizer
    from sklearn_fairaes.metrics._agreement import mean_qwk

    t = _tables(out)
    agree = t["agreement"]
    rows = agree[agree["system"] == "rater2"].set_index("prompt")
    lip = t["lipschitz"]
    human_lip = lip[(lip["system"] == "human") & (lip["representation"] == "tfidf")]
    human_lip = human_lip.set_index("prompt")
    print("  prompt  essays  scale   QWK(audit)  QWK(sklearn)  pairs(audit)  n(n-1)/2")
    kappas = []
    for p in sorted(RATER_SCALE, key=int):
        sub = data[data["essay_set"] == p]
        lo, hi = RATER_SCALE[p]
        r1 = sub["rater1_domain1"].astype(int).to_numpy()
        r2 = sub["rater2_domain1"].astype(int).to_numpy()
        ref = cohen_kappa_score(r1, r2, labels=np.arange(lo, hi + 1), weights="quadratic")
        kappas.append(ref)
        got = float(rows.loc[p, "qwk"])
        n = len(sub)
        pairs = int(human_lip.loc[p, "n_pairs"])
        print(
            f"  {p:>6}  {n:>6,}  {lo}-{hi:<4}  {got:10.6f}  {ref:12.6f}  {pairs:12,}  "
            f"{n * (n - 1) // 2:9,}"
        )
        if abs(got - ref) > 1e-12 or pairs != n * (n - 1) // 2:
            raise SystemExit(f"prompt {p}: the audit's numbers differ from the reference")
    pooled = float(rows.loc["pooled", "qwk"])
    print(
        f"  pooled QWK (Fisher z, equal weights): audit {pooled:.6f}, mean_qwk {mean_qwk(kappas):.6f}"
    )
    if abs(pooled - mean_qwk(kappas)) > 1e-12:
        raise SystemExit("the pooled QWK is not the Fisher-z mean of the prompts' QWKs")
    n_all = len(data)
    within = int(human_lip.loc["pooled", "n_pairs"])
    print(
        f"  pairs within prompts {within:,} of the {n_all * (n_all - 1) // 2:,} pairs of all "
        f"{n_all:,} essays (no pair across prompts)"
    )
    # one prompt recomputed from scratch: its own TF-IDF, scipy's pdist
    p = "8"
    sub = data[data["essay_set"] == p]
    X = TfidfEssayVectorizer().fit_transform(list(sub["essay"])).toarray()
    ref, n_pairs = _lipschitz_reference(X, sub["rater1_domain1"].astype(float).to_numpy())
    got = float(human_lip.loc[p, "lipschitz_minmax"])
    print(
        f"  prompt {p} human-score Lipschitz fraction (TF-IDF): audit {got:.6f}, pdist {ref:.6f}"
    )
    if abs(got - ref) > 1e-9 or n_pairs != int(human_lip.loc[p, "n_pairs"]):
        raise SystemExit(f"prompt {p}: the Lipschitz fraction differs from scipy's")


def run_asap(work: Path, n_jobs: int, max_per_prompt: int | None) -> float:
    print(f"\n== ASAP-AES, eight prompts ({FOLDS})")
    data = read_asap(FOLDS)
    if max_per_prompt is not None:
        data = _sample(data, "essay_set", max_per_prompt)
        print(f"  --max-per-prompt {max_per_prompt}: {len(data):,} essays (a quick check)")
    counts = data["essay_set"].value_counts()
    print(
        "  essays per prompt: "
        + ", ".join(f"{p}: {counts[p]:,}" for p in sorted(counts.index, key=int))
    )
    columns = ["essay_id", "essay_set", "essay", "rater1_domain1", "rater2_domain1"]
    path = work / "asap_8_prompts.tsv"
    data[columns].to_csv(path, sep="\t", index=False)
    from sklearn_fairaes.cli import read_table

    back = read_table(path)
    if not back.equals(data[columns].reset_index(drop=True)):
        raise SystemExit(f"{path}: read_table does not read back what was written")
    scales = work / "asap_rater_scales.csv"
    pd.DataFrame(
        [(p, lo, hi) for p, (lo, hi) in RATER_SCALE.items()],
        columns=["prompt", "low", "high"],
    ).to_csv(scales, index=False)
    out = work / "asap-report"
    wall = run_cli(
        [
            "audit", str(path),
            "--text-col", "essay",
            "--score-col", "rater1_domain1",
            "--system-cols", "rater2=rater2_domain1",
            "--rater-cols", "rater1_domain1,rater2_domain1",
            "--prompt-col", "essay_set",
            "--id-col", "essay_id",
            "--score-range", str(scales),
            "--representations", "tfidf",
            "--n-jobs", str(n_jobs),
            "--out", str(out),
        ],
        work / "asap.log",
    )  # fmt: skip
    target = "met" if wall < 300 else "NOT met"
    print(f"  target < 5 min on 2 cores: {target} ({wall / 60:.1f} min)")
    check_asap(data, out)
    return wall


def check_short(out: Path, name: str) -> None:
    t = _tables(out)
    grading = t["grading"]
    pooled = grading[grading["prompt"] == "pooled"]
    print(f"  {name} pooled grading rows:")
    print(
        "    "
        + pooled.drop(columns=["prompt"]).to_string(index=False).replace("\n", "\n    ")
    )
    lip = t["lipschitz"]
    lp = lip[lip["prompt"] == "pooled"]
    print("  pooled Lipschitz fractions (pairs within a question only):")
    print(
        "    "
        + lp[["representation", "system", "lipschitz_minmax", "n_pairs"]]
        .to_string(index=False)
        .replace("\n", "\n    ")
    )
    print(f"  reference_coverage rows: {len(t.get('reference_coverage', []))}")


def run_short(work: Path, which: str, n_jobs: int, max_per_prompt: int | None) -> float:
    from sklearn_fairaes.cli import read_table

    if which == "saf":
        src, text, score, question, ref = (
            SAF,
            "student_answer",
            "score",
            "question_id",
            "reference_answer",
        )
        frame = read_table(src)
        # each question's points scale: 0 to its largest observed score (SOURCE.md:
        # 24 questions are 0-1, 4.3 and 5.11 0-0.5, five others larger)
        maxima = frame.groupby(question)["question_max_observed_score"].first()
        scale_rows = [(q, 0, float(m)) for q, m in maxima.items()]
        id_col = "row_id"
    else:
        src, text, score, question, ref = (
            STITA,
            "answer",
            "score",
            "question_id",
            "real_answer",
        )
        frame = read_table(src)
        scale_rows = [(q, 0, 1) for q in sorted(frame[question].unique())]
        id_col = "id"
    print(f"\n== {which.upper()} short answers ({src})")
    if max_per_prompt is not None:
        frame = _sample(frame, question, max_per_prompt)
        print(
            f"  --max-per-prompt {max_per_prompt}: {len(frame):,} answers (a quick check)"
        )
    path = work / f"{which}.tsv"
    frame.to_csv(path, sep="\t", index=False)
    scales = work / f"{which}_scales.csv"
    pd.DataFrame(scale_rows, columns=["prompt", "low", "high"]).to_csv(scales, index=False)
    print(f"  {len(frame):,} answers to {frame[question].nunique()} questions")
    out = work / f"{which}-report"
    wall = run_cli(
        [
            "audit", str(path),
            "--text-col", text,
            "--score-col", score,
            "--prompt-col", question,
            "--reference-col", ref,
            "--id-col", id_col,
            "--score-range", str(scales),
            "--representations", "tfidf",
            "--models", "ridge,reference_similarity",
            "--n-jobs", str(n_jobs),
            "--out", str(out),
        ],
        work / f"{which}.log",
    )  # fmt: skip
    check_short(out, which)
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", default="asap,saf,stita")
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--max-per-prompt", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    unknown = set(runs) - {"asap", "saf", "stita"}
    if unknown:
        parser.error(f"--runs: unknown {sorted(unknown)}; choose from asap, saf, stita")
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        work = args.keep
    else:
        work = Path(tempfile.mkdtemp(prefix="bench-audit-prompts-"))
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; work folder {work}"
    )
    times = {}
    try:
        for r in runs:
            if r == "asap":
                times[r] = run_asap(work, args.n_jobs, args.max_per_prompt)
            else:
                times[r] = run_short(work, r, args.n_jobs, args.max_per_prompt)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print("\n" + "; ".join(f"{r}: {s:.1f} s" for r, s in times.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
