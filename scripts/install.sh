#!/usr/bin/env bash
# Sets horde up on a Debian 12 (bookworm) or Debian 13 (trixie) machine: the Debian
# packages it builds on, then the build and install of the `horde` package into the
# virtual environment .venv/ in the checkout. Safe to run again: it installs only what is
# missing and rebuilds incrementally (build/python, ccache).
#   scripts/install.sh --print-packages [CODENAME]   lists the packages for that release
#                                                    (default: this machine's), installs nothing
set -euo pipefail
cd "$(dirname "$0")/.."

# packages_for CODENAME: the Debian packages horde builds and is tested on, in that
# release's names. Debian 12 gives PyTorch 1.13, Open MPI 4.1, Python 3.11; Debian 13
# PyTorch 2.6, Open MPI 5.0, Python 3.13 (README: Tested stacks).
packages_for() {
  local packages=(
    build-essential cmake ccache git
    libopenmpi-dev openmpi-bin
    libtorch-dev python3-torch python3-dev python3-venv python3-setuptools python3-wheel
    pybind11-dev python3-pybind11 python3-numpy
    python3-pytest python3-pytest-timeout libgtest-dev python3-sklearn
    python3-torchvision
    python3-matplotlib  # the timeline summary's --png chart
    openssh-client openssh-server iproute2  # horderun's ssh; its two-host test
    clang-format flake8 cppcheck  # scripts/lint.sh
    clang  # scripts/hardening.sh: the wire codec fuzzer (libFuzzer), with...
  )
  case "$1" in
    bookworm) packages+=(libclang-rt-14-dev) ;;  # ...clang 14's libFuzzer
    trixie) packages+=(libclang-rt-19-dev) ;;    # ...clang 19's
    *)
      echo "horde install: Debian '$1' is not one horde is tested on (bookworm, trixie);" \
        "trying the default clang's runtime package" >&2
      packages+=(libclang-rt-dev) ;;
  esac
  printf '%s\n' "${packages[@]}"
}

this_release() { (. /etc/os-release && echo "${VERSION_CODENAME:-unknown}"); }

if [ "${1:-}" = "--print-packages" ]; then
  packages_for "${2:-$(this_release)}"
  exit 0
fi

mapfile -t PACKAGES < <(packages_for "$(this_release)")

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "horde install: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Debian's torch lives in the system site-packages; the venv must see it.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi

echo "horde install: building and installing into .venv (first build takes a few minutes)"
HORDE_BUILD_JOBS="${HORDE_BUILD_JOBS:-$(nproc)}" \
  .venv/bin/pip install --no-build-isolation --no-deps -q .
.venv/bin/python -c "import horde.torch" && echo "horde install: done (.venv/bin/python -c 'import horde.torch' works)"
