#!/usr/bin/env bash
# Install the built wheel into a fresh venv (core dependencies only, no source
# tree on the path) and smoke-test it. Usage: .ci/wheel-smoke.sh [PYTHON]
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${1:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/fairaes-wheel-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT
wheels=("$repo"/dist/*.whl)
[ "${#wheels[@]}" = 1 ] || { echo "wheel-smoke: expected one wheel in dist/, found ${#wheels[@]}" >&2; exit 1; }
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheels[0]}"
cd "$work"
"$work/venv/bin/python" "$repo/.ci/wheel_smoke.py"
"$work/venv/bin/fairaes" --help >/dev/null
echo "wheel-smoke: ok ($(basename "${wheels[0]}"))"
