#!/usr/bin/env bash
# Proves that configuring horde with a GCC that has no shared libstdc++ fails at once,
# naming the compiler (cmake/libstdcxx.cmake), instead of building libraries that crash in
# hvd.init(). The compiler is g++ behind a wrapper that, like such a toolchain, finds no
# libstdc++.so.
# Usage: static_libstdcxx_test.sh SOURCE_DIR CMAKE   (ctest: cmake.static_libstdcxx)
set -euo pipefail
source_dir=$1 cmake=${2:-cmake}
work=$(mktemp -d /tmp/horde_static_libstdcxx.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/g++" <<'SH'
#!/bin/sh
[ "$1" = "-print-file-name=libstdc++.so" ] && { echo libstdc++.so; exit 0; }
exec g++ "$@"
SH
chmod +x "$work/g++"
if "$cmake" -S "$source_dir" -B "$work/build" -DCMAKE_CXX_COMPILER="$work/g++" \
     -DHORDE_BUILD_TORCH=OFF -DHORDE_BUILD_TESTS=OFF -DHORDE_WITH_CUDA=OFF >"$work/log" 2>&1; then
  echo "FAIL: configuring with a compiler without a shared libstdc++ succeeded"
  exit 1
fi
# CMake wraps the message: compare it with its lines joined.
if ! tr -s ' \n' '  ' <"$work/log" | grep -q "the C++ compiler $work/g++ has no shared libstdc++"; then
  echo "FAIL: configure failed, but not with the libstdc++ message:"
  cat "$work/log"
  exit 1
fi
echo "ok: a compiler without a shared libstdc++ is refused, named"
# The same build with the plain compiler configures.
"$cmake" -S "$source_dir" -B "$work/plain" -DHORDE_BUILD_TORCH=OFF -DHORDE_BUILD_TESTS=OFF \
  -DHORDE_WITH_CUDA=OFF >"$work/plain.log" 2>&1 || { cat "$work/plain.log"; exit 1; }
echo "ok: g++ itself configures"
