#!/usr/bin/env bash
# Downloads into .gpu_debs/ (git-ignored) the Debian 12 packages that run and build
# against Open MPI on a machine that has none: the lent GPU machine (Ubuntu 24.04-like,
# CUDA, torch, no MPI, no internet, no apt). scripts/gpu_test.sh unpacks them there into a
# private prefix with `dpkg -x` (never into /). Run it here, on the Debian 12 machine:
#
#     scripts/gpu_debs.sh          # then carry .gpu_debs in the device `run` call
#
# The list is Open MPI (openmpi-bin, libopenmpi3, openmpi-common, libopenmpi-dev for
# mpi.h and the mpicxx wrapper) plus the recursive closure of the runtime packages'
# dependencies (apt-cache depends --recurse), minus what any such image already has or
# what is optional:
#   - base system libraries (libc6, libstdc++6, libgcc-s1, zlib1g, libssl3, ...) and
#     Debian tooling (dpkg, debconf, adduser, passwd, PAM, SELinux, ...);
#   - openssh-client and its libraries (Kerberos, FIDO): only remote launches use it;
#   - libhwloc-plugins and what it pulls in (X11, libxnvctrl0, libxml2, OpenCL,
#     libpciaccess): hwloc runs without its plugins;
#   - libopenmpi-dev's own dependencies (gfortran, the -dev packages of hwloc, libevent,
#     PMIx, verbs, zlib, jquery): mpi.h needs none of them.
# Generic libraries an image may or may not have (libnuma1, libudev1, libatomic1) are
# kept: gpu_test.sh uses them only where the machine lacks the library.
set -euo pipefail
cd "$(dirname "$0")/.."

DEST=.gpu_debs
ROOTS=(openmpi-bin libopenmpi3 openmpi-common)
NO_DEPS=(libopenmpi-dev)
# ccache (and its one library an image may lack): gpu_test.sh brings its cache back, so a
# second call on a fresh machine rebuilds in seconds.
BUILD_TOOLS=(ccache libhiredis0.14)
# Whole-name patterns (grep -E -x) of packages left out of the closure, see above.
EXCLUDE=(
  'libc6' 'libgcc-s1' 'gcc-[0-9]+-base' 'libstdc\+\+6' 'zlib1g' 'libssl3' 'libcrypt1'
  'libuuid1' 'libselinux1' 'libpcre2-.*' 'liblzma5' 'libbz2-1\.0' 'libmd0' 'libbsd0'
  'libtinfo6' 'libreadline8' 'readline-common' 'libedit2' 'libicu[0-9]+'
  'libaudit.*' 'libcap-ng0' 'libpam.*' 'passwd' 'adduser' 'c?debconf' 'dpkg' 'tar'
  'install-info' 'libdebian-installer4' 'libnewt0\.52' 'libslang2' 'libtextwrap1'
  'libsemanage.*' 'libsepol2'
  'openssh-client' 'libfido2-1' 'libcbor0\.8' 'libgssapi-krb5-2' 'libk5crypto3'
  'libkrb5-3' 'libkrb5support0' 'libkeyutils1' 'libcom-err2'
  'libhwloc-plugins' 'libxnvctrl0' 'libx11-.*' 'libxau6' 'libxcb1' 'libxdmcp6' 'libxext6'
  'libxml2' 'ocl-icd-libopencl1' 'libpciaccess0'
)

if ! apt-cache show openmpi-bin >/dev/null 2>&1; then
  apt-get update -qq
fi

closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
            --no-breaks --no-replaces --no-enhances --no-pre-depends "${ROOTS[@]}" \
          | grep -E '^[a-z0-9]' | sort -u)
pattern=$(IFS='|'; echo "${EXCLUDE[*]}")
mapfile -t packages < <(echo "$closure" | grep -E -v -x "$pattern")
packages+=("${NO_DEPS[@]}" "${BUILD_TOOLS[@]}")
excluded=$(echo "$closure" | grep -E -x "$pattern" | tr '\n' ' ')

rm -rf "$DEST"
mkdir -p "$DEST"
# apt-get download writes into the current folder; _apt cannot write to a root-owned one.
(cd "$DEST" && apt-get download -q "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
count=$(ls "$DEST"/*.deb | wc -l)
if [ "$count" -ne "${#packages[@]}" ]; then
  echo "gpu_debs: expected ${#packages[@]} packages, got $count" >&2
  exit 1
fi
echo "gpu_debs: left out (base system or optional): $excluded"
echo "gpu_debs: $count packages in $DEST/:"
ls "$DEST"
du -ch "$DEST"/*.deb | tail -1
