#!/usr/bin/env bash
# Installs horde (scripts/install.sh) and trains the digits example on 2 ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
exec timeout 300 .venv/bin/horderun -np 2 .venv/bin/python examples/pytorch_digits.py
