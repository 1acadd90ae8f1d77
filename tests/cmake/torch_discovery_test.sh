#!/usr/bin/env bash
# Proves that horde's build takes torch from the Python interpreter it is built for
# (cmake/torch.cmake), never from another Torch CMake package found first: configures
# horde (configure only, nothing is compiled) against fake torches, Python packages with
# a minimal TorchConfig.cmake laid out as pip's torch is (site-packages/torch/share/
# cmake/Torch), each of which records in the build tree that it was used and sets a C++
# ABI flag of its own.
# Usage: torch_discovery_test.sh SOURCE_DIR PYTHON CMAKE   (ctest: cmake.torch_discovery)
set -euo pipefail
source_dir=$1 python=$2 cmake=${3:-cmake}
work=$(mktemp -d /tmp/horde_torch_discovery.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0

# fake_torch DIR NAME VERSION ABI(0|1) [no-cmake]: a Python package `torch` under DIR
# (to go on PYTHONPATH), with its CMake package unless no-cmake (as Debian's has none).
fake_torch() {
  local site=$1 name=$2 version=$3 abi=$4 cmake_package=${5:-yes}
  local torch=$site/torch
  mkdir -p "$torch/utils" "$torch/lib" "$torch/include/pybind11"
  cat >"$torch/__init__.py" <<PY
__version__ = "$version"
class _C:
    _GLIBCXX_USE_CXX11_ABI = bool($abi)
from . import utils
PY
  cat >"$torch/utils/__init__.py" <<'PY'
import os
cmake_prefix_path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "share", "cmake")
PY
  : >"$torch/lib/libtorch_python.so"
  : >"$torch/include/pybind11/pybind11.h"
  [ "$cmake_package" = yes ] || return 0
  mkdir -p "$torch/share/cmake/Torch"
  cat >"$torch/share/cmake/Torch/TorchConfigVersion.cmake" <<CM
set(PACKAGE_VERSION "${version%%+*}")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
CM
  cat >"$torch/share/cmake/Torch/TorchConfig.cmake" <<CM
file(APPEND "\${CMAKE_BINARY_DIR}/fake_torch_used.txt" "$name\n")
get_filename_component(TORCH_INSTALL_PREFIX "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(TORCH_INCLUDE_DIRS "\${TORCH_INSTALL_PREFIX}/include")
if(NOT TARGET torch)
  add_library(torch INTERFACE IMPORTED)
endif()
set(TORCH_LIBRARIES torch)
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=$abi")
CM
}

# configure BUILD_DIR SITE ARGS...: horde configured with $python seeing SITE's torch.
configure() {
  local build=$1 site=$2; shift 2
  PYTHONPATH=$site "$cmake" -S "$source_dir" -B "$build" -DHORDE_BUILD_TESTS=OFF \
    -DHORDE_WITH_CUDA=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DPython3_EXECUTABLE="$python" \
    -DHORDE_REQUIRE_PYTHON_TORCH=ON "$@" >"$build.log" 2>&1
}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# used BUILD_DIR: the fake torches whose TorchConfig.cmake ran, in order, on one line
# (horde's find_package(Torch) runs it twice per configure: counted once).
used() { uniq "$1/fake_torch_used.txt" 2>/dev/null | tr '\n' ' ' | sed 's/ $//'; }

# said LOG TEXT: whether CMake's message in LOG, its lines joined, contains TEXT.
said() { tr -s ' \n' '  ' <"$1" | grep -q -- "$2"; }

# abi_flags BUILD_DIR: the distinct ABI flags horde's sources compile with.
abi_flags() {
  grep -o -- '-D_GLIBCXX_USE_CXX11_ABI=[01]' "$1/compile_commands.json" | sort -u | tr '\n' ' ' \
    | sed 's/ $//'
}

fake_torch "$work/pip" pip "2.99.0+fake" 0
fake_torch "$work/pip_new" pip_new "2.98.0" 1
fake_torch "$work/decoy" decoy "1.11.0" 1
fake_torch "$work/debian_like" debian_like "1.11.0a0" 1 no-cmake
fake_torch "$work/other_version" other_version "3.0.0" 1 no-cmake
mkdir -p "$work/broken/torch"
echo 'raise ImportError("this torch is broken")' >"$work/broken/torch/__init__.py"

# 1. The interpreter's torch wins over a Torch on CMAKE_PREFIX_PATH and a Torch_DIR given
#    on the command line (and over the system's, which find_package would find too), and
#    its ABI flag is what horde compiles with.
if configure "$work/b1" "$work/pip" -DCMAKE_PREFIX_PATH="$work/decoy/torch/share/cmake" \
     -DTorch_DIR="$work/decoy/torch/share/cmake/Torch"; then
  [ "$(used "$work/b1")" = pip ] && pass "the interpreter's torch is used, not the decoy" \
    || fail "torch used: '$(used "$work/b1")', expected 'pip'"
  [ "$(abi_flags "$work/b1")" = "-D_GLIBCXX_USE_CXX11_ABI=0" ] \
    && pass "horde compiles with the interpreter's torch's ABI flag (0)" \
    || fail "ABI flags in compile_commands.json: '$(abi_flags "$work/b1")'"
else
  fail "configure with the pip-like torch failed:"; tail -20 "$work/b1.log"
fi

# 2. Another interpreter's torch, configured in the same tree: Torch is found again.
if configure "$work/b1" "$work/pip_new"; then
  [ "$(used "$work/b1")" = "pip pip_new" ] \
    && pass "a reconfigure for another interpreter's torch finds that one" \
    || fail "torch used across the two configures: '$(used "$work/b1")'"
  [ "$(abi_flags "$work/b1")" = "-D_GLIBCXX_USE_CXX11_ABI=1" ] \
    && pass "and compiles with its ABI flag (1)" \
    || fail "ABI flags after the reconfigure: '$(abi_flags "$work/b1")'"
else
  fail "reconfigure with another torch failed:"; tail -20 "$work/b1.log"
fi

# 3. A torch without a CMake package of its own (as Debian's): the one found must be
#    the same torch (version), else the configure fails saying which is which.
if configure "$work/b3" "$work/debian_like" -DCMAKE_PREFIX_PATH="$work/decoy/torch/share/cmake"; then
  [ "$(used "$work/b3")" = decoy ] && pass "a torch without a CMake package uses the matching one found" \
    || fail "torch used: '$(used "$work/b3")'"
else
  fail "configure with a Debian-like torch and its matching package failed:"; tail -20 "$work/b3.log"
fi
if configure "$work/b4" "$work/other_version" -DCMAKE_PREFIX_PATH="$work/decoy/torch/share/cmake"; then
  fail "a Torch package of another version (1.11 for the interpreter's 3.0) was accepted"
else
  said "$work/b4.log" "is not the torch of .*version 1.11.0 (the interpreter's: 3.0.0)" \
    && pass "a Torch package of another version than the interpreter's is refused" \
    || { fail "the version mismatch was not explained:"; tail -20 "$work/b4.log"; }
fi

# 4. An interpreter that cannot import torch: a clear error, not some other torch.
if configure "$work/b5" "$work/broken"; then
  fail "an interpreter whose torch does not import was accepted"
else
  said "$work/b5.log" "cannot import torch, which the Python extension is built for" \
    && pass "an interpreter that cannot import torch is refused" \
    || { fail "the import failure was not explained:"; tail -20 "$work/b5.log"; }
fi

[ "$failures" -eq 0 ] && echo "torch discovery: all passed" || { echo "torch discovery: $failures failed"; exit 1; }
