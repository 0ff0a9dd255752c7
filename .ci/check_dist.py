"""Check what `python -m build` produced before anyone installs it.

The wheel must hold the package and nothing else: no tests, no test data, no
benchmark or example scripts, and no third-party text. The only data files
allowed are the demo corpus we wrote, the report's templates and the typing
marker. When the ASAP
prompt-7 file is beside the repository (../shared/data), every essay's opening
is also searched for in the wheel's text files, so that a copied row fails the
build whatever file it hides in.

    python .ci/check_dist.py dist
"""

from __future__ import annotations

import ast
import sys
import tarfile
import zipfile
from pathlib import Path

ALLOWED_DATA = {
    "sklearn_fairaes/py.typed",
    "sklearn_fairaes/datasets/data/DEMO_README.md",
    "sklearn_fairaes/datasets/data/demo_essays.jsonl",
    "sklearn_fairaes/datasets/data/demo_prompt.txt",
    "sklearn_fairaes/datasets/data/demo_rubric.md",
    # fairaes check --policy williamson2012 (thresholds we wrote down as TOML)
    "sklearn_fairaes/report/policies/williamson2012.toml",
}
# The report's Jinja2 templates and style sheet (ours): any such file under this
# folder, so that a new analysis's template needs no entry here. Their text is
# searched for ASAP essays like every other text file.
TEMPLATES = ("sklearn_fairaes/report/templates/", (".html.j2", ".css"))
REQUIRED_TEMPLATES = {
    "sklearn_fairaes/report/templates/layout.html.j2",
    "sklearn_fairaes/report/templates/report.css",
}
ROOT = Path(__file__).resolve().parents[1]
ASAP7 = ROOT.parent / "shared/data/asap-aes/asap_aes_prompt7.tsv"


def fail(message: str) -> None:
    print(f"check_dist: {message}", file=sys.stderr)
    raise SystemExit(1)


def third_party_openings() -> list[str]:
    if not ASAP7.exists():
        print(
            f"check_dist: {ASAP7} not found; skipping the search for ASAP essays in the wheel"
        )
        return []
    import csv

    with ASAP7.open(encoding="utf-8", errors="replace", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t")
        openings = [
            " ".join(row["essay"].split())[:60] for row in rows if len(row["essay"]) > 80
        ]
    # the prompt-7 task statement, which the tests hold (the package may not)
    conftest = ast.parse((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"))
    for node in conftest.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PROMPT7" for t in node.targets
        ):
            openings.append(" ".join(ast.literal_eval(node.value).split())[:60])
    return openings


def check_wheel(path: Path) -> None:
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        package = [n for n in names if not n.split("/", 1)[0].endswith(".dist-info")]
        outside = [n for n in package if not n.startswith("sklearn_fairaes/")]
        if outside:
            fail(f"{path.name} holds files outside the package: {outside[:5]}")
        tests = [n for n in package if "/tests/" in n or Path(n).name.startswith("test_")]
        if tests:
            fail(f"{path.name} holds test files: {tests[:5]}")
        data = sorted(n for n in package if not n.endswith(".py"))
        templates = {
            n for n in data if n.startswith(TEMPLATES[0]) and n.endswith(TEMPLATES[1])
        }
        unexpected = [n for n in data if n not in ALLOWED_DATA and n not in templates]
        if unexpected:
            fail(
                f"{path.name} holds data files that are not ours: {unexpected}; "
                "package data must be written for the package (see CONTRIBUTING.md)"
            )
        missing = (ALLOWED_DATA | REQUIRED_TEMPLATES) - set(data)
        if missing:
            fail(
                f"{path.name} lacks {sorted(missing)}: check [tool.setuptools.package-data]"
            )
        licence = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        if not licence:
            fail(f"{path.name} carries no LICENSE file")
        text = "\n".join(
            " ".join(wheel.read(n).decode("utf-8", errors="replace").split())
            for n in package
            if n.endswith((".py", ".md", ".txt", ".jsonl", ".j2", ".css", ".toml"))
        )
    copied = [opening for opening in third_party_openings() if opening in text]
    if copied:
        fail(f"{path.name} contains {len(copied)} ASAP essay(s), e.g. {copied[0]!r}")
    print(
        f"check_dist: {path.name}: {len(package)} files, data only {sorted(ALLOWED_DATA)}"
    )


def check_sdist(path: Path) -> None:
    with tarfile.open(path) as sdist:
        names = sdist.getnames()
    root = names[0].split("/", 1)[0]
    for required in (
        "pyproject.toml",
        "LICENSE",
        "README.md",
        "CHANGELOG.md",
        "sklearn_fairaes/__init__.py",
        "tests/conftest.py",
        "docs/conf.py",
        "examples/GALLERY_HEADER.rst",
        ".ci/run",
    ):
        if f"{root}/{required}" not in names:
            fail(f"{path.name} lacks {required}")
    built = [n for n in names if "/docs/_build/" in n or "/docs/generated/" in n]
    if built:
        fail(f"{path.name} holds built documentation: {built[:3]}")
    print(f"check_dist: {path.name}: {len(names)} entries")


def main(folder: str) -> None:
    dist = Path(folder)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        fail(f"expected one wheel and one sdist in {dist}, found {wheels + sdists}")
    check_wheel(wheels[0])
    check_sdist(sdists[0])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "dist")
