#!/usr/bin/env bash
# Set up a virtual environment (once) and run the demo: a round robin of the sample bots.
# Usage: bash scripts/demo.sh [extra `arena run` arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/arena demo "$@"
