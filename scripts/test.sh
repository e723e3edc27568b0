#!/usr/bin/env bash
# Set up a virtual environment (once) and run the whole check: lint, types, tests.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[dev]"
if [ -f sample_bots/js/package.json ] && command -v npm >/dev/null 2>&1; then
    (cd sample_bots/js && npm ci --silent --no-audit --no-fund)
fi
# Byte-compiled once here: where PYTHONDONTWRITEBYTECODE is set (CI machines set it), no .pyc is
# ever written, and each of the thousand-odd bot and CLI processes the tests start compiled every
# module it imports again (about a quarter of a bot's start).
.venv/bin/python -m compileall -q arena sample_bots >/dev/null
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/python -m pytest -n 2 "$@"
