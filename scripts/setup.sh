#!/usr/bin/env bash
# Create .venv with the pinned requirements. Idempotent: reinstalls only when the pins change.
set -euo pipefail
if [ $# -gt 0 ]; then
    echo "usage: [PYTHON=/path/to/python3.11] $0   (no arguments: creates or updates .venv)" >&2
    [[ $1 == -h || $1 == --help ]] && exit 0 || exit 2
fi
cd "$(dirname "$0")/.."

python=${PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python=$candidate
      break
    fi
  done
fi
if [ -z "$python" ]; then
  echo "setup: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

[ -x .venv/bin/python ] || "$python" -m venv .venv
stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt -c constraints.txt
  echo "$wanted" > "$stamp"
fi
