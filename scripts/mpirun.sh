#!/usr/bin/env bash
# mpirun with what this machine needs: root is allowed (containers, CI) and more
# ranks than cores is fine. Usage: scripts/mpirun.sh -np N command...
set -euo pipefail
exec mpirun --allow-run-as-root --oversubscribe "$@"
