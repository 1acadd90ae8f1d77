#!/usr/bin/env bash
# The MPICH lane: horde built against MPICH 4.0 (Debian 12's libmpich-dev) with Debian
# 12's PyTorch 1.13, in a Debian 12 root of its own under build/lanes/mpich/ (made with
# debootstrap, reused while its package list is unchanged), so that the machine's
# default MPI stays Open MPI: the root has no Open MPI at all. In it, with the
# checkout's files copied to /horde: the build with MPICH's compiler wrappers named
# explicitly, a check that the libraries link MPICH, then the Python suite on 2 ranks
# launched by horderun (its Hydra path) and the launcher's tests (horderun on Hydra).
# Needs root; scripts/test.sh runs it.
#   scripts/test_mpich.sh            the lane
#   scripts/test_mpich.sh --prepare  makes (or checks) the root and builds there, tests nothing
#   scripts/test_mpich.sh --inside   the suite itself (what runs in the root; with
#                                    --build-only, its build alone)
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ccache
  libmpich-dev mpich
  libtorch-dev python3-torch python3-dev python3-venv python3-setuptools python3-wheel
  pybind11-dev python3-pybind11 python3-numpy python3-pytest python3-pytest-timeout
  openssh-client  # horderun checks other hosts with ssh, as Hydra reaches them
)

# Inside the root: builds horde with MPICH's compiler wrappers and installs it into .venv.
build_with_mpich() {
  ccache --zero-stats >/dev/null 2>&1 || true
  [ -x .venv/bin/python ] || python3 -m venv --system-site-packages .venv
  HORDE_CMAKE_ARGS="-DMPI_C_COMPILER=/usr/bin/mpicc.mpich -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich" \
    HORDE_BUILD_JOBS="${HORDE_BUILD_JOBS:-2}" \
    .venv/bin/pip install --no-build-isolation --no-deps -q .
  ccache --print-stats 2>/dev/null | awk '$1 ~ /cache_hit$/ {hits += $2} $1 == "cache_miss" {misses = $2}
    END {print "ccache: " hits + 0 " hits, " misses + 0 " misses"}' || true
}

if [ "${1:-}" = "--inside" ]; then
  if [ "${2:-}" = "--build-only" ]; then
    build_with_mpich
    exit 0
  fi
  start=$SECONDS
  step() { echo "== mpich: $* ($((SECONDS - start)) s)"; }
  step "$(. /etc/os-release && echo "$PRETTY_NAME"), $(python3 -c 'import sys, torch, pybind11; print(f"Python {sys.version.split()[0]}, PyTorch {torch.__version__}, pybind11 {pybind11.__version__}")'), MPICH $(mpichversion | sed -n 's/^MPICH Version:[[:space:]]*//p')"
  if command -v ompi_info >/dev/null; then
    echo "FAIL: Open MPI is installed in the MPICH root" >&2
    exit 1
  fi
  step "build and install into .venv, with MPICH's compiler wrappers"
  build_with_mpich
  libs=$(.venv/bin/python -c 'import horde.torch, os; print(os.path.dirname(horde.torch.__file__))')
  linked=$(ldd "$libs"/libhorde_mpi_ops.so | awk '/libmpi/ {print $1}' | paste -sd ' ')
  echo "libhorde_mpi_ops.so links: $linked"
  [[ "$linked" == *libmpich* ]] || { echo "FAIL: horde is not linked against MPICH" >&2; exit 1; }

  step "horderun finds Hydra"
  .venv/bin/horderun --check-build
  .venv/bin/horderun --check-build | grep -q "^MPI: *MPICH 4\.[0-9.]* (Hydra)" \
    || { echo "FAIL: horderun --check-build does not report MPICH's Hydra" >&2; exit 1; }
  .venv/bin/horderun --dry-run -np 2 .venv/bin/python -m pytest tests/python | tail -1

  step "Python tests on 2 ranks, launched by horderun (Hydra)"
  timeout 900 .venv/bin/horderun -np 2 \
    .venv/bin/python -m pytest tests/python -q -p no:cacheprovider --color=no
  step "launcher: horderun with Hydra"
  timeout 900 .venv/bin/python -m pytest tests/launcher -q -p no:cacheprovider --color=no
  step "passed"
  exit 0
fi

# shellcheck source=scripts/lane_root.sh
. scripts/lane_root.sh
lane_setup mpich
start=$SECONDS
lane_root_ensure bookworm "${PACKAGES[@]}"
lane_sync_checkout
if [ "${1:-}" = "--prepare" ]; then
  lane_run "scripts/test_mpich.sh --inside --build-only"
  lane_log "MPICH lane prepared in $((SECONDS - start)) s"
  exit 0
fi
lane_run "scripts/test_mpich.sh --inside"
lane_log "MPICH lane passed in $((SECONDS - start)) s"
