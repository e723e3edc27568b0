#!/usr/bin/env bash
# Set up a virtual environment (once) and run the demo: a round robin of the sample bots.
# Usage: bash scripts/demo.sh [`arena demo` arguments, e.g. --boards 2]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
fi
# Install again only when the sources have changed since the last install (the package's
# metadata, and its modules: some are compiled with mypyc), so that a second demo needs neither
# the package index nor the minute of compiling.
STAMP=.venv/.arena-demo-install
WANTED="$(find pyproject.toml setup.py arena -name '*.py' -o -name '*.toml' | LC_ALL=C sort \
    | xargs cat | .venv/bin/python -c 'import hashlib, sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ ! -x .venv/bin/arena ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANTED" ]; then
    .venv/bin/python -m pip install --quiet -e .
    echo "$WANTED" > "$STAMP"
fi
exec .venv/bin/arena demo "$@"
