"""Issue 32's check: the audit's outputs are byte-identical across a refactor, and its time.

Runs a fixed set of audits (fresh ``fairaes`` processes, one shared embedding
cache folder so that only the first run of a commit encodes) and writes, per
configuration, the SHA-256 of ``results.json`` (with the run's creation time,
duration, package version and cache statistics removed: they differ on every
run) and of every
``tables/*.csv``, plus the wall time of each run, to ``MANIFEST`` (JSON).

With ``--compare OTHER.json`` it prints every file whose hash differs from
the other manifest (a run of another commit) and the two times, and exits 1
when any output differs.

The configurations cover every section the report has: the demo with the
counterfactual audit; ASAP prompt 7 with both raters, a given system (the
human score plus seeded noise, computed here), a group column (essay length
terciles), trained Ridge baselines on BOW / TF-IDF / MiniLM, WordNet
paraphrases and the counterfactual audit; ASAP prompts 7 and 8 as two
prompts with pooled rows; and SAF short answers with a given grader.

Usage::

    python benchmarks/bench_audit_identity.py MANIFEST.json [--compare OTHER.json]
        [--work DIR] [--only NAME[,NAME]]

To compare two commits, run it once in a worktree of each (``PYTHONPATH``
pointing at the worktree, so its package is the one imported).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

# ``$FAIRAES_SHARED`` when run from a worktree that has no ``../shared`` beside it
SHARED = (
    Path(os.environ.get("FAIRAES_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    / "data"
)
ASAP7 = SHARED / "asap-aes" / "asap_aes_prompt7.tsv"
ASAP8 = SHARED / "asap-aes" / "asap_aes_prompt8.tsv"
SAF = SHARED / "saf" / "saf_communication_networks_english_v2.tsv"
# what differs between two runs of the same code: when, how long, where the
# cache folder is and how warm it was
VOLATILE = ("created", "version")
VOLATILE_META = (
    "started",
    "seconds",
    "embedding_cache",
    "result_cache",
    "analysis_cache",
)


def _inputs(work: Path) -> dict[str, list[str]]:
    """The input files (written under ``work``) and each configuration's arguments."""
    rng = np.random.default_rng(32)
    p7 = pd.read_csv(ASAP7, sep="\t", usecols=lambda c: c != "nea_fold")
    p7 = p7[["essay_id", "essay", "rater1_domain1", "rater2_domain1", "domain1_score"]]
    noise = rng.integers(-2, 3, size=len(p7))
    p7["engine"] = np.clip(p7["domain1_score"] + noise, 0, 24)
    words = p7["essay"].str.split().str.len()
    p7["length"] = pd.qcut(words, 3, labels=["short", "middle", "long"]).astype(str)
    p7.to_csv(work / "p7.tsv", sep="\t", index=False)

    p8 = pd.read_csv(ASAP8, sep="\t", usecols=["essay_id", "essay", "domain1_score"])
    both = pd.concat(
        [
            p7[["essay_id", "essay", "domain1_score"]].assign(prompt="7"),
            p8.assign(prompt="8"),
        ],
        ignore_index=True,
    )
    both["engine"] = both["domain1_score"] + rng.integers(-2, 3, size=len(both))
    both.to_csv(work / "p78.tsv", sep="\t", index=False)
    (work / "scales.csv").write_text("prompt,low,high\n7,-2,26\n8,8,62\n")
    return {
        "demo": ["demo", "--perturbations", "default", "--models", "ridge"],
        "asap7": [
            "audit",
            str(work / "p7.tsv"),
            *"--text-col essay --score-col domain1_score"
            " --id-col essay_id --rater-cols rater1_domain1,rater2_domain1"
            " --system-cols engine --models ridge --group-col length"
            " --score-range 0,24 --representations bow,tfidf,sbert"
            " --sbert-model all-MiniLM-L6-v2 --perturbations default"
            " --n-perturbation-essays 60".split(),
        ],
        "asap78": [
            "audit",
            str(work / "p78.tsv"),
            "--score-range",
            str(work / "scales.csv"),
            *"--text-col essay --score-col domain1_score --id-col essay_id"
            " --prompt-col prompt --system-cols engine --representations tfidf".split(),
        ],
    }


def _saf_args(work: Path) -> list[str]:
    """SAF's grades are in eighths of a point: whole eighths keep the scale integer."""
    saf = pd.read_csv(SAF, sep="\t")
    saf = saf[["answer_id", "question_id", "student_answer", "reference_answer", "score"]]
    saf["eighths"] = (saf["score"] * 8).round().astype(int)
    noise = np.random.default_rng(7).integers(-2, 3, size=len(saf))
    saf["grader"] = np.clip(saf["eighths"] + noise, 0, 28)
    saf.to_csv(work / "saf.tsv", sep="\t", index=False)
    return [
        "audit", str(work / "saf.tsv"), "--text-col", "student_answer",
        "--score-col", "eighths", "--prompt-col", "question_id",
        "--reference-col", "reference_answer", "--system-cols", "grader",
        "--representations", "tfidf", "--score-range", "0,28",
    ]  # fmt: skip


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _digest(out: Path) -> dict[str, str]:
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for key in VOLATILE:
        results.pop(key, None)
    for key in VOLATILE_META:
        results.get("meta", {}).pop(key, None)
    text = json.dumps(results, sort_keys=True).encode()
    files = {"results.json": hashlib.sha256(text).hexdigest()}
    for csv in sorted((out / "tables").glob("*.csv")):
        files[f"tables/{csv.name}"] = _hash(csv)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifest", type=Path)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--only", default=None)
    args = parser.parse_args(argv)
    if not ASAP7.exists():
        raise SystemExit(f"{ASAP7} not found: this benchmark needs ../shared/data")
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-identity-"))
    work.mkdir(parents=True, exist_ok=True)
    configs = _inputs(work)
    configs["saf"] = _saf_args(work)
    if args.only:
        configs = {k: v for k, v in configs.items() if k in args.only.split(",")}
    cache = work / "cache"
    manifest: dict[str, dict] = {"load_before": os.getloadavg()[0], "runs": {}}
    for name, cli in configs.items():
        out = work / f"out-{name}"
        cmd = [sys.executable, "-m", "sklearn_fairaes.cli", *cli, "--out", str(out)]
        cmd += ["--force", "--quiet", "--cache", str(cache), "--random-state", "0"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stdout[-3000:], proc.stderr[-3000:], sep="\n", file=sys.stderr)
            raise SystemExit(f"{name}: fairaes exited {proc.returncode}")
        manifest["runs"][name] = {"wall_s": round(wall, 2), "files": _digest(out)}
        print(f"{name}: {wall:.1f} s, {len(manifest['runs'][name]['files'])} files")
    manifest["load_after"] = os.getloadavg()[0]
    args.manifest.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    if args.compare is None:
        return 0
    other = json.loads(args.compare.read_text(encoding="utf-8"))["runs"]
    differ = 0
    for name, run in manifest["runs"].items():
        if name not in other:
            print(f"{name}: not in {args.compare}")
            continue
        theirs = other[name]
        print(f"{name}: {run['wall_s']} s here, {theirs['wall_s']} s there")
        for file in sorted(set(run["files"]) | set(theirs["files"])):
            if run["files"].get(file) != theirs["files"].get(file):
                differ += 1
                print(f"  differs: {file}")
    print("identical" if not differ else f"{differ} files differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
