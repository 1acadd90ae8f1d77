#!/usr/bin/env bash
# mpirun with what this machine needs: root is allowed (containers, CI) and more ranks
# than cores is fine, in the words of the MPI on PATH:
#   Open MPI 4 (ORTE):   --allow-run-as-root --oversubscribe
#   Open MPI 5 (PRRTE):  --allow-run-as-root --map-by :OVERSUBSCRIBE (--oversubscribe is
#                        deprecated there)
#   MPICH/Hydra:         nothing (it runs as root and oversubscribes as it is)
# Usage: scripts/mpirun.sh -np N command...
set -euo pipefail
version=$(mpirun --version 2>&1 || true)
case "$version" in
  *"(Open MPI) "[0-4].*) exec mpirun --allow-run-as-root --oversubscribe "$@" ;;
  *"(Open MPI) "*) exec mpirun --allow-run-as-root --map-by :OVERSUBSCRIBE "$@" ;;
  *"HYDRA build details"* | *"Intel(R) MPI"*) exec mpirun "$@" ;;
  *) echo "scripts/mpirun.sh: cannot tell which MPI mpirun is: $version" >&2; exit 2 ;;
esac
