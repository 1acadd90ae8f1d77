#!/usr/bin/env bash
# Builds horde on the lent GPU machine (see /work/.library/device/README.md: torch with
# CUDA, nvcc, CMake, pytest; no MPI, no internet) and runs the GPU tests, in one command.
#
# Here, once (Debian 12, apt works): scripts/gpu_debs.sh   -> .gpu_debs/ (7 MiB of Open MPI
# debs, git-ignored). Then the device tool's run call, from the repository root:
#
#     run(command="bash scripts/gpu_test.sh", carry=[".gpu_debs"], timeout_s=600)
#
# What it does, each step under `timeout`, within GPU_TEST_BUDGET seconds (570) in all:
#   1. unpacks .gpu_debs/*.deb with `dpkg -x` into $OMPI_DIR (/tmp/ompi, never /) and
#      points PATH, LD_LIBRARY_PATH, OPAL_PREFIX and PMIx's folder variables there; root
#      is allowed; one host without ssh: pml ob1, btl self,vader,tcp, no binding,
#      oversubscription on (OMPI_MCA_* variables);
#   2. MPI smoke test: mpirun -np 2 hostname; an MPI C++ program built with mpicxx;
#   3. builds horde into a venv ($GPU_TEST_VENV, /tmp/horde-gpu-venv, made with
#      --system-site-packages, plus a .pth naming python3's own site-packages, since the
#      device's python3 is itself a venv) with `pip install --no-build-isolation
#      --no-deps .`, in $HORDE_BUILD_DIR (/tmp/horde-gpu-build), configured first with
#      HORDE_WITH_CUDA=ON, the relocated mpicxx and the NCCL that torch uses (the pip
#      package nvidia-nccl-*) when there is one; prints hvd.nccl_built(), hvd.cuda_built();
#   4. mpirun -np 1 pytest tests/gpu (NCCL);
#   5. HORDE_GPU_OPERATIONS=MPI mpirun -np 2 pytest tests/gpu (two ranks on GPU 0, host
#      staging);
#   6. mpirun -np 1 bench/gpu_allreduce_bandwidth.py.
# Logs go to $OUT (the files the tool brings back; /tmp/horde-gpu-logs where OUT is unset):
# env.log mpi.log build.log gpu_np1.log gpu_np2_mpi.log bench.log summary.txt. The exit
# status is nonzero if any step failed; the last lines say which passed.
#
# GPU_TEST_DRY_RUN=1 (no GPU, e.g. here with Debian's CPU torch:
# GPU_TEST_DRY_RUN=1 GPU_TEST_PYTHON=/usr/bin/python3 HORDE_BUILD_JOBS=1 scripts/gpu_test.sh)
# builds with HORDE_WITH_CUDA=AUTO, expects the GPU tests to skip and skips the benchmark
# (a slow build there also wants GPU_TEST_BUDGET=7200 GPU_TEST_BUILD_LIMIT=7000).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD

DEBS=${GPU_DEBS:-$ROOT/.gpu_debs}
OMPI_DIR=${OMPI_DIR:-/tmp/ompi}
LOGS=${OUT:-/tmp/horde-gpu-logs}
PY=${GPU_TEST_PYTHON:-python3}
VENV=${GPU_TEST_VENV:-/tmp/horde-gpu-venv}
DRY=${GPU_TEST_DRY_RUN:-0}
export HORDE_BUILD_DIR=${HORDE_BUILD_DIR:-/tmp/horde-gpu-build}
export HORDE_BUILD_JOBS=${HORDE_BUILD_JOBS:-$(nproc)}
export PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INDEX=1
DEADLINE=$((SECONDS + ${GPU_TEST_BUDGET:-570}))
mkdir -p "$LOGS"
rm -f "$LOGS"/{env,mpi,build,gpu_np1,gpu_np2_mpi,bench}.log "$LOGS/summary.txt"

RESULTS=()
FAILED=0
# run_logged LOG SECONDS command...: runs the command under timeout (capped by what is
# left of the budget), appending its output to $LOGS/LOG and showing it.
run_logged() {
  local log=$LOGS/$1 cap=$2 left
  shift 2
  left=$((DEADLINE - SECONDS))
  [ "$left" -lt "$cap" ] && cap=$left
  if [ "$cap" -lt 10 ]; then
    echo "gpu_test: no time left for: $*" | tee -a "$log"
    return 124
  fi
  echo "+ [limit ${cap}s] $*" | tee -a "$log"
  timeout -k 10 "$cap" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && echo "gpu_test: TIMED OUT after ${cap}s" | tee -a "$log"
  return "$rc"
}
# record NAME RC [DETAIL]
record() {
  if [ "$2" -eq 0 ]; then RESULTS+=("PASS  $1${3:+  ($3)}")
  else RESULTS+=("FAIL  $1 (exit $2)${3:+  ($3)}"); FAILED=1; fi
}
# The pytest result line of a log ("12 passed, 3 skipped in 4.5s"), for the summary.
pytest_line() {
  grep -E -o '[0-9]+ (passed|failed|skipped|errors?|xfailed)[^=]*' "$LOGS/$1" | tail -n 1
}

# --- 1. Open MPI from the debs, in a private prefix -------------------------------------
echo "== Open MPI into $OMPI_DIR"
if ! ls "$DEBS"/*.deb >/dev/null 2>&1; then
  echo "gpu_test: no debs in $DEBS: run scripts/gpu_debs.sh here and carry .gpu_debs" >&2
  exit 2
fi
rm -rf "$OMPI_DIR" && mkdir -p "$OMPI_DIR"
for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$OMPI_DIR" || exit 2; done
A=x86_64-linux-gnu
U=$OMPI_DIR/usr
# Generic libraries: the machine's own where it has them.
ld_cache=$(ldconfig -p 2>/dev/null)
for lib in libnuma.so.1 libudev.so.1 libatomic.so.1; do
  if grep -q "^[[:space:]]*$lib " <<<"$ld_cache"; then
    rm -f "$U/lib/$A/$lib"* "$OMPI_DIR/lib/$A/$lib"*
  else
    echo "gpu_test: the machine lacks $lib: using the one from the debs"
  fi
done
# What Debian's postinst scripts and alternatives would have made.
ln -sf "$(ls "$U"/lib/libpsm1/libpsm_infinipath.so.1.* | head -n 1)" "$U/lib/$A/libpsm_infinipath.so.1"
for name in mpirun mpiexec; do ln -sf orterun "$U/bin/$name"; done
for name in mpicc mpicxx mpic++ mpiCC; do ln -sf opal_wrapper "$U/bin/$name"; done

export OPAL_PREFIX=$U
# Debian's PMIx has absolute install folders: each one is relocated by its own variable.
PM=$U/lib/$A/pmix2
export PMIX_PREFIX=$PM PMIX_EXEC_PREFIX=$PM PMIX_LIBDIR=$PM/lib PMIX_PKGLIBDIR=$PM/lib/pmix
export PMIX_DATAROOTDIR=$PM/share PMIX_DATADIR=$PM/share PMIX_PKGDATADIR=$PM/share/pmix
export PMIX_SYSCONFDIR=$PM/share PMIX_MCA_mca_base_component_path=$PM/lib/pmix
export PATH=$U/bin:$PATH
export LD_LIBRARY_PATH=$U/lib/$A/openmpi/lib:$U/lib/$A:$U/lib/$A/pmix2/lib:$OMPI_DIR/lib/$A${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Debian's /etc/openmpi/openmpi-mca-params.conf is not read from the prefix: its settings,
# and what one host without ssh, InfiniBand or ptrace between processes needs.
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_mtl='^ofi' OMPI_MCA_osc='^ucx,pt2pt'
export OMPI_MCA_btl_base_warn_component_unused=0 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_plm_rsh_agent=false  # no ssh needed for local ranks; never called

if [ "$DRY" != 1 ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=$PATH:/usr/local/cuda/bin
fi

{
  echo "date: $(date -u)  host: $(hostname)  dry run: $DRY"
  echo "mpirun: $(command -v mpirun)  mpicxx: $(command -v mpicxx)"
  ompi_info 2>&1 | grep -E 'Open MPI:|  Prefix:'
  mpicxx --showme 2>&1
  echo "nvcc: $(command -v nvcc)"; nvcc --version 2>&1 | tail -n 2
  command -v nvidia-smi >/dev/null && nvidia-smi 2>&1 | head -n 15
  cmake --version | head -n 1
  echo "python3: $(command -v "$PY")"
  "$PY" -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1
} 2>&1 | tee "$LOGS/env.log"

# --- 2. MPI smoke test ---------------------------------------------------------------------
echo "== MPI smoke test"
HELLO=$(mktemp -d)
cat >"$HELLO/hello.cc" <<'EOF'
#include <mpi.h>
#include <cstdio>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0, sum = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int one = 1;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  std::printf("rank %d of %d: allreduce sum %d\n", rank, size, sum);
  MPI_Finalize();
  return sum == size ? 0 : 1;
}
EOF
run_logged mpi.log 30 mpirun -np 2 hostname \
  && run_logged mpi.log 60 mpicxx -o "$HELLO/hello" "$HELLO/hello.cc" \
  && run_logged mpi.log 30 mpirun -np 2 "$HELLO/hello"
record "MPI smoke test (mpirun, mpicxx)" $?

# --- 3. build and install horde into a venv ------------------------------------------------
echo "== build"
build() {
  rm -rf "$VENV"
  if "$PY" -m venv --system-site-packages "$VENV" && "$VENV/bin/python" -m pip --version >/dev/null; then
    VPY=$VENV/bin/python
    # A venv made from a venv's python sees the base interpreter's site-packages, not
    # torch's: add python3's own site-packages (after the venv's, their .pth files too).
    "$PY" -c 'import site; print("".join("import site; site.addsitedir(%r)\n" % d for d in site.getsitepackages()))' \
      >"$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/gpu_test_parent.pth"
  else
    echo "gpu_test: no venv with pip from $PY; installing into its own environment"
    VPY=$(command -v "$PY")
  fi
  "$VPY" -c 'import torch, setuptools; print("venv python sees torch", torch.__version__)' || return 1
  local with_cuda=${HORDE_WITH_CUDA:-ON} nccl=()
  [ "$DRY" = 1 ] && with_cuda=${HORDE_WITH_CUDA:-AUTO}
  # Build against the NCCL torch loads (pip's nvidia-nccl-*), not another one.
  local nccl_dir
  nccl_dir=$("$VPY" -c '
import os
try:
    import nvidia.nccl as m
except ImportError:
    raise SystemExit
for d in m.__path__:
    if os.path.exists(os.path.join(d, "include", "nccl.h")):
        print(d)
        break' 2>/dev/null)
  if [ "$DRY" != 1 ] && [ -n "$nccl_dir" ]; then
    local lib
    lib=$(ls "$nccl_dir"/lib/libnccl.so "$nccl_dir"/lib/libnccl.so.[0-9]* 2>/dev/null | head -n 1)
    [ -n "$lib" ] && nccl=(-DHORDE_NCCL_LIBRARY="$lib" -DHORDE_NCCL_INCLUDE_DIR="$nccl_dir/include")
  fi
  echo "gpu_test: HORDE_WITH_CUDA=$with_cuda NCCL: ${nccl[*]:-found by CMake}"
  # setup.py passes no CMake options beyond its own: configure the build tree first, with
  # the same arguments setup.py gives, and these cache entries stay for its run.
  rm -rf "$HORDE_BUILD_DIR"
  cmake -S "$ROOT" -B "$HORDE_BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHORDE_BUILD_TESTS=OFF -DPython3_EXECUTABLE="$VPY" \
    -DCMAKE_PREFIX_PATH="$("$VPY" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')" \
    -DHORDE_WITH_CUDA="$with_cuda" -DMPI_CXX_COMPILER="$U/bin/mpicxx" "${nccl[@]}" || return 1
  grep -E '^(MPI_CXX_COMPILER|MPI_CXX_HEADER_DIR|MPI_mpi_LIBRARY|HORDE_NCCL_LIBRARY|HORDE_NCCL_INCLUDE_DIR|CMAKE_CUDA_COMPILER):' \
    "$HORDE_BUILD_DIR/CMakeCache.txt"
  (cd "$ROOT" && "$VPY" -m pip install -v --no-build-isolation --no-deps .) || return 1
  cd /tmp && "$VPY" -c 'import horde.torch as hvd; print("nccl_built", hvd.nccl_built(), "cuda_built", hvd.cuda_built())'
}
export -f build
STATE=$(mktemp)
export PY VENV DRY ROOT U STATE
# The build function runs in a child bash (timeout needs a program); it writes the venv's
# python to $STATE for the steps after it.
run_logged build.log "${GPU_TEST_BUILD_LIMIT:-360}" bash -c 'build && echo "$VPY" >"$STATE"'
rc=$?
VPY=$(cat "$STATE")
built=$(grep -E -o 'nccl_built (True|False) cuda_built (True|False)' "$LOGS/build.log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ "$DRY" != 1 ] && [ "$built" != "nccl_built True cuda_built True" ]; then
  echo "gpu_test: the build has no GPU path: $built" | tee -a "$LOGS/build.log"
  rc=1
fi
record "build + install (HORDE_WITH_CUDA, mpicxx from the debs)" "$rc" "$built"

# --- 4-6. the GPU tests and the benchmark ------------------------------------------------
if [ -n "$VPY" ]; then
  PYTEST=("$VPY" -m pytest tests/gpu -q -p no:cacheprovider -rfEs --color=no)
  "$VPY" -c 'import pytest_timeout' 2>/dev/null && PYTEST+=(--timeout=120)
  # check_pytest NAME LOG RC: a run in which no GPU was seen is no pass, except dry.
  check_pytest() {
    local rc=$3
    if [ "$DRY" != 1 ] && grep -q 'no GPU visible' "$LOGS/$2"; then
      echo "gpu_test: the tests saw no GPU" | tee -a "$LOGS/$2"
      [ "$rc" -eq 0 ] && rc=1
    fi
    record "$1" "$rc" "$(pytest_line "$2")"
  }
  echo "== GPU tests, 1 rank, NCCL"
  run_logged gpu_np1.log 150 mpirun -np 1 "${PYTEST[@]}"
  check_pytest "tests/gpu, mpirun -np 1 (NCCL)" gpu_np1.log $?

  echo "== GPU tests, 2 ranks sharing GPU 0, HORDE_GPU_OPERATIONS=MPI"
  run_logged gpu_np2_mpi.log 180 mpirun -np 2 --tag-output \
    env HORDE_GPU_OPERATIONS=MPI "${PYTEST[@]}"
  check_pytest "tests/gpu, HORDE_GPU_OPERATIONS=MPI mpirun -np 2 (host staging)" gpu_np2_mpi.log $?

  if [ "$DRY" = 1 ]; then
    RESULTS+=("SKIP  bench/gpu_allreduce_bandwidth.py (dry run)")
  else
    echo "== bench/gpu_allreduce_bandwidth.py, 1 rank"
    run_logged bench.log 90 mpirun -np 1 "$VPY" bench/gpu_allreduce_bandwidth.py
    record "bench/gpu_allreduce_bandwidth.py, mpirun -np 1" $? \
      "$(grep -E -o '"allreduce_algbw_gbs": [0-9.]+' "$LOGS/bench.log" | tail -n 1)"
  fi
else
  RESULTS+=("SKIP  GPU tests and benchmark: no build")
fi

{
  echo "== gpu_test summary ($SECONDS s; logs in $LOGS)"
  printf '%s\n' "${RESULTS[@]}"
} | tee "$LOGS/summary.txt"
exit "$FAILED"
