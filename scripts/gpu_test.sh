#!/usr/bin/env bash
# Builds horde on the lent GPU machine (see /work/.library/device/README.md: torch with
# CUDA, nvcc, CMake, pytest; no MPI, no internet) and runs the GPU tests, in one command.
#
# Here, once (Debian 12, apt works): scripts/gpu_debs.sh   -> .gpu_debs/ (8 MiB of Open MPI
# and ccache debs, git-ignored). Then the device tool's run call, from the repository root:
#
#     run(command="bash scripts/gpu_test.sh", carry=[".gpu_debs", ".gpu_cache"], timeout_s=540)
#
# What it does, each step under `timeout`, within GPU_TEST_BUDGET seconds (480) in all:
#   1. unpacks .gpu_debs/*.deb with `dpkg -x` into $OMPI_DIR (/tmp/ompi, never /) and
#      points PATH, LD_LIBRARY_PATH, OPAL_PREFIX and PMIx's folder variables there; root
#      is allowed; one host without ssh: pml ob1, btl self,vader,tcp, no binding,
#      oversubscription on (OMPI_MCA_* variables); restores ccache's cache from
#      .gpu_cache/ccache.tar.* when an earlier call's parts were copied there;
#   2. MPI smoke test: mpirun -np 2 hostname; an MPI C++ program built with mpicxx;
#   3. builds horde into a venv ($GPU_TEST_VENV, /tmp/horde-gpu-venv, made with
#      --system-site-packages, plus a .pth naming python3's own site-packages, since the
#      device's python3 is itself a venv) the way docs/install.md says for a torch from
#      pip: `pip install --no-build-isolation .`, CMake options in HORDE_CMAKE_ARGS
#      (Release, HORDE_WITH_CUDA=ON, the relocated mpicxx, the NCCL that torch uses: the pip
#      package nvidia-nccl-*), build tree $HORDE_BUILD_DIR (/tmp/horde-gpu-build); then
#      `horderun --check-build` and hvd.nccl_built(), hvd.cuda_built();
#   4. np1: mpirun -np 1 pytest tests/gpu (NCCL);
#   5. training: bench/gpu_training.py, ResNet-50 on 1 rank;
#   6. bandwidth: bench/gpu_allreduce_bandwidth.py on 1 rank, and on 2 with host staging;
#   7. np2: HORDE_GPU_OPERATIONS=MPI mpirun -np 2 pytest tests/gpu (two ranks on GPU 0,
#      host staging).
# GPU_TEST_STEPS="np1 training" runs only the steps named (default: all four; 1-3 always).
# What comes back in $OUT (/tmp/horde-gpu-logs where OUT is unset): summary.txt, every
# step's log in logs.tar.gz, and ccache's cache as ccache.tar.aa, .ab, ... (15 MiB each;
# copy them to .gpu_cache/ to carry them into the next call). The exit status is nonzero
# if any step failed; the last lines say which passed.
#
# GPU_TEST_DRY_RUN=1 (no GPU, e.g. here with Debian's CPU torch:
# GPU_TEST_DRY_RUN=1 GPU_TEST_PYTHON=/usr/bin/python3 HORDE_BUILD_JOBS=1 scripts/gpu_test.sh)
# builds with HORDE_WITH_CUDA=AUTO, expects the GPU tests to skip and skips the benchmarks
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
DEADLINE=$((SECONDS + ${GPU_TEST_BUDGET:-480}))
mkdir -p "$LOGS"
rm -f "$LOGS"/*.log "$LOGS"/logs.tar.gz "$LOGS/summary.txt"

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

# ccache from the debs, its cache from an earlier call when carried (.gpu_cache/ccache.tar.*)
export CCACHE_DIR=${CCACHE_DIR:-/tmp/horde-ccache} CCACHE_BASEDIR=$ROOT CCACHE_MAXSIZE=2G
if ls "$ROOT"/.gpu_cache/ccache.tar.* >/dev/null 2>&1; then
  rm -rf "$CCACHE_DIR" && mkdir -p "$CCACHE_DIR"
  cat "$ROOT"/.gpu_cache/ccache.tar.* | tar -x -C "$CCACHE_DIR" && echo "gpu_test: ccache restored"
fi

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

# --- 2b. a compiler with a shared libstdc++ ----------------------------------------------
# The GPU image sets CXX to /opt/gcc's g++, which has no libstdc++.so: it copies libstdc++
# into horde's libraries, and hvd.init() crashed beside torch's libstdc++. CMake refuses
# such a compiler (cmake/libstdcxx.cmake); take the machine's g++ instead.
echo "== compiler"
has_shared_libstdcxx() {  # CXX: the same rule as cmake/libstdcxx.cmake
  local lib
  lib=$("$1" -print-file-name=libstdc++.so 2>/dev/null)
  echo "$1: libstdc++.so: $lib" | tee -a "$LOGS/env.log"
  [[ "$lib" == /* ]] && [ -e "$lib" ]
}
if ! has_shared_libstdcxx "${CXX:-g++}"; then
  for other in "$(command -v g++)" /usr/bin/g++ /usr/bin/g++-13 /usr/bin/g++-14; do
    if [ -x "$other" ] && has_shared_libstdcxx "$other"; then
      export CXX=$other CUDAHOSTCXX=$other
      break
    fi
  done
  echo "gpu_test: compiling with ${CXX:-none}" | tee -a "$LOGS/env.log"
fi

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
  local with_cuda=${HORDE_WITH_CUDA:-ON} args
  [ "$DRY" = 1 ] && with_cuda=${HORDE_WITH_CUDA:-AUTO}
  # Release: the objects ccache brings back are a fraction of RelWithDebInfo's.
  args="-DCMAKE_BUILD_TYPE=Release -DHORDE_WITH_CUDA=$with_cuda -DMPI_CXX_COMPILER=$U/bin/mpicxx"
  # The GPU found's architecture only: one nvcc pass instead of three.
  local arch
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d .)
  [ -n "$arch" ] && args="$args -DHORDE_CUDA_ARCHITECTURES=$arch"
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
    [ -n "$lib" ] && args="$args -DHORDE_NCCL_LIBRARY=$lib -DHORDE_NCCL_INCLUDE_DIR=$nccl_dir/include"
  fi
  # docs/install.md's path for a torch from pip: pip install --no-build-isolation . in the
  # environment that has torch, CMake options through HORDE_CMAKE_ARGS.
  echo "gpu_test: HORDE_CMAKE_ARGS=$args"
  rm -rf "$HORDE_BUILD_DIR"
  (cd "$ROOT" && HORDE_CMAKE_ARGS=$args "$VPY" -m pip install -v --no-build-isolation .) || return 1
  grep -E '^(MPI_CXX_COMPILER|MPI_mpi_LIBRARY|HORDE_NCCL_LIBRARY|HORDE_NCCL_INCLUDE_DIR|CMAKE_CUDA_COMPILER|CMAKE_BUILD_TYPE|CMAKE_CXX_COMPILER_LAUNCHER):' \
    "$HORDE_BUILD_DIR/CMakeCache.txt"
  command -v ccache >/dev/null && ccache -s
  cd /tmp || return 1
  "$(dirname "$VPY")/horderun" --check-build || return 1
  "$VPY" -c 'import horde.torch as hvd; print("nccl_built", bool(hvd.nccl_built()), "cuda_built", bool(hvd.cuda_built()))'
}
export -f build
STATE=$(mktemp)
export PY VENV DRY ROOT U STATE
# The build function runs in a child bash (timeout needs a program); it writes the venv's
# python to $STATE for the steps after it.
run_logged build.log "${GPU_TEST_BUILD_LIMIT:-240}" bash -c 'build && echo "$VPY" >"$STATE"'
rc=$?
VPY=$(cat "$STATE")
built=$(grep -E -o 'nccl_built (True|False) cuda_built (True|False)' "$LOGS/build.log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ "$DRY" != 1 ] && [ "$built" != "nccl_built True cuda_built True" ]; then
  echo "gpu_test: the build has no GPU path: $built" | tee -a "$LOGS/build.log"
  rc=1
fi
record "build + install (HORDE_WITH_CUDA, mpicxx from the debs)" "$rc" "$built"
# hvd.init() once before the suites: if it fails, they would all fail the same way.
if [ -n "$VPY" ] && ! run_logged build.log 60 mpirun -np 1 "$VPY" -c \
    'import horde.torch as hvd; hvd.init(); print("hvd.init() on", hvd.size(), "rank")'; then
  for lib in "$("$VPY" -c 'import horde, os; print(os.path.dirname(horde.__file__))')"/torch/libhorde_*.so; do
    echo "$lib: $(nm -D --defined-only "$lib" | grep -c ' _ZNS[to]') std symbols defined"
  done 2>&1 | tee -a "$LOGS/build.log"
  record "hvd.init() on 1 rank" 1
  VPY=
fi

# --- 4-8. the GPU tests and the benchmarks ------------------------------------------------
# wanted STEP: whether GPU_TEST_STEPS (default: all of them) names the step.
wanted() { [[ " ${GPU_TEST_STEPS:-np1 np2 bandwidth training} " == *" $1 "* ]]; }
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
  if wanted np1; then
    echo "== GPU tests, 1 rank, NCCL"
    run_logged gpu_np1.log 70 mpirun -np 1 "${PYTEST[@]}"
    check_pytest "tests/gpu, mpirun -np 1 (NCCL)" gpu_np1.log $?
  fi
  if [ "$DRY" = 1 ]; then
    RESULTS+=("SKIP  bench/gpu_allreduce_bandwidth.py, bench/gpu_training.py (dry run)")
  else
    if wanted training; then
      echo "== bench/gpu_training.py, ResNet-50, 1 rank"
      run_logged training.log 90 mpirun -np 1 "$VPY" bench/gpu_training.py --model resnet50 \
        --batch-size 16 --repetitions 5 --steps 5
      record "bench/gpu_training.py (ResNet-50, 1 rank)" $? \
        "$(grep -E -o 'overhead [0-9.-]+%' "$LOGS/training.log" | tail -n 1)"
    fi
    if wanted bandwidth; then
      echo "== bench/gpu_allreduce_bandwidth.py, 1 rank (NCCL) and 2 ranks (host staging)"
      run_logged bench_np1.log 45 mpirun -np 1 "$VPY" bench/gpu_allreduce_bandwidth.py
      record "bench/gpu_allreduce_bandwidth.py, mpirun -np 1" $?
      run_logged bench_np2_mpi.log 50 mpirun -np 2 env HORDE_GPU_OPERATIONS=MPI \
        "$VPY" bench/gpu_allreduce_bandwidth.py --max-mib 16
      record "bench/gpu_allreduce_bandwidth.py, HORDE_GPU_OPERATIONS=MPI mpirun -np 2" $?
    fi
  fi
  if wanted np2; then
    echo "== GPU tests, 2 ranks sharing GPU 0, HORDE_GPU_OPERATIONS=MPI"
    run_logged gpu_np2_mpi.log 90 mpirun -np 2 --tag-output \
      env HORDE_GPU_OPERATIONS=MPI "${PYTEST[@]}"
    check_pytest "tests/gpu, HORDE_GPU_OPERATIONS=MPI mpirun -np 2 (host staging)" gpu_np2_mpi.log $?
  fi
else
  RESULTS+=("SKIP  GPU tests and benchmarks: no build")
fi

# --- what comes back: the logs as one archive (the device tool brings back 8 files at
# most), the summary, and the compiler cache in parts of at most 15 MiB ---------------------
if [ -d "$CCACHE_DIR" ]; then
  rm -f "$LOGS"/ccache.tar.*
  tar -C "$CCACHE_DIR" -cf - . | split -b 15M - "$LOGS/ccache.tar."
  parts=$(ls "$LOGS"/ccache.tar.* | wc -l)
  if [ "$parts" -gt 4 ]; then
    echo "gpu_test: the compiler cache is $parts parts of 15 MiB: not brought back"
    rm -f "$LOGS"/ccache.tar.*
  fi
fi
{
  echo "== gpu_test summary ($SECONDS s; logs in $LOGS/logs.tar.gz)"
  printf '%s\n' "${RESULTS[@]}"
} | tee "$LOGS/summary.txt"
(cd "$LOGS" && tar -czf logs.tar.gz ./*.log && rm -f ./*.log)
exit "$FAILED"
