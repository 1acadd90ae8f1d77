# Debian roots for the test lanes of other stacks (scripts/test_debian13.sh,
# scripts/test_mpich.sh); sourced by them, from the checkout's top folder.
#
#   lane_setup NAME                        build/lanes/NAME holds the lane: root/, ccache/
#   lane_root_ensure SUITE PACKAGES...     makes root/ (debootstrap --variant=minbase, then
#                                          the packages), or reuses it when it was made
#                                          from the same suite, mirror and package list
#   lane_sync_checkout                     copies the checkout's files (git ls-files) to
#                                          root/horde, keeping modification times, and
#                                          deletes there what git no longer has
#   lane_run COMMAND                       runs COMMAND (bash) in root/, in /horde
#
# Everything runs in namespaces of its own (unshare --mount --pid): /proc, /sys
# (read-only), fresh tmpfs on /dev/shm and /tmp (PIDs start again at 1 in every run, and
# Open MPI 5's session folders in /tmp are named by PID: a stale one of an earlier run
# makes prterun fail) and the ccache folder are mounted in a mount
# namespace that only the lane's processes see, so the mounts disappear with them, on
# success, failure, Ctrl-C or kill alike, and no other process on the machine ever sees
# them (a `rm -rf build` elsewhere cannot reach the host's /proc or /dev through them).
# The lane's processes live in a PID namespace: when its first process ends, or when
# this script exits for any reason (the EXIT trap kills that process, and unshare's
# --kill-child takes the rest), the kernel ends every process in it. /dev is the root's
# own, made by debootstrap (null, zero, random, urandom, tty, ptmx...); no device of the
# host is bound into it.
#
# Needs root (debootstrap, chroot, namespaces) and installs debootstrap when missing.

LANE_MIRROR=${HORDE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
LANE_PID=""

lane_log() { echo "[$LANE_NAME $(date +%T)] $*"; }

lane_cleanup() {
  local status=$?
  if [ -n "$LANE_PID" ] && kill -0 "$LANE_PID" 2>/dev/null; then
    lane_log "stopping the lane's processes"
    kill -KILL "$LANE_PID" 2>/dev/null || true
    wait "$LANE_PID" 2>/dev/null || true
  fi
  LANE_PID=""
  lane_unmount_leftovers
  return "$status"
}

# Mounts under the lane's folder in this (the host's) mount namespace: none are ever
# made there by these scripts, but a debootstrap or chroot run by hand may have left
# some; they are unmounted, so nothing below can delete through them.
lane_unmount_leftovers() {
  [ -n "${LANE_DIR:-}" ] && [ -d "$LANE_DIR" ] || return 0
  local dir target
  dir=$(cd "$LANE_DIR" && pwd -P)
  findmnt -rn -o TARGET | { grep -F "$dir/" || true; } | sort -r | while read -r target; do
    echo "[$LANE_NAME] unmounting a leftover mount: $target"
    umount -l "$target" || true
  done
}

lane_setup() {
  LANE_NAME=$1
  LANE_DIR=build/lanes/$1
  LANE_ROOT=$LANE_DIR/root
  if [ "$(id -u)" -ne 0 ]; then
    echo "$LANE_NAME: needs root (debootstrap, chroot, namespaces): run it as root or with sudo" >&2
    exit 2
  fi
  set -m  # the lane runs as a job of its own: Ctrl-C reaches this script's trap, which
          # ends the lane; without it, background processes would ignore SIGINT for life
  trap lane_cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  mkdir -p "$LANE_DIR/ccache"
  # One lane at a time (lanes may be prepared at once): apt's lists are not shared.
  (
    flock 9
    if ! command -v debootstrap >/dev/null; then
      lane_log "installing debootstrap"
      apt-get -o DPkg::Lock::Timeout=900 update -qq
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
        debootstrap >/dev/null
    fi
  ) 9>/run/lock/horde-lane-debootstrap.lock
}

# lane_in ROOT COMMAND: COMMAND (bash) inside ROOT, in the lane's namespaces, as a job
# of this script that the EXIT trap can end.
lane_in() {
  local root=$1 command=$2
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  mkdir -p "$root/ccache"
  unshare --mount --propagation private --pid --fork --kill-child -- /bin/bash -c '
    set -e
    root=$1 ccache=$2 command=$3 jobs=$4
    # The root a mount point of its own: `ip netns exec` (the two-host tests) remounts
    # "/" as a slave, which fails on a directory that is not one.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys"
    mount -t tmpfs -o mode=1777 shm "$root/dev/shm"
    mount -t tmpfs -o mode=1777 tmp "$root/tmp"
    mount --bind "$ccache" "$root/ccache"
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      CCACHE_DIR=/ccache HORDE_BUILD_JOBS="$jobs" DEBIAN_FRONTEND=noninteractive \
      /bin/bash -c "$command"
  ' lane "$root" "$(cd "$LANE_DIR/ccache" && pwd -P)" "$command" "${HORDE_BUILD_JOBS:-2}" &
  LANE_PID=$!
  local status=0
  wait "$LANE_PID" || status=$?
  LANE_PID=""
  return "$status"
}

lane_run() { lane_in "$LANE_ROOT" "cd /horde && $1"; }

lane_root_ensure() {
  local suite=$1; shift
  local key
  key=$( { echo "$suite $LANE_MIRROR"; printf '%s\n' "$@" | sort -u; } | sha256sum | cut -c1-16)
  if [ "$(cat "$LANE_ROOT/.horde-root-key" 2>/dev/null)" = "$key" ]; then
    lane_log "reusing the Debian $suite root $LANE_ROOT (package list $key)"
    return 0
  fi
  lane_unmount_leftovers
  local new=$LANE_DIR/root.new start=$SECONDS
  rm -rf "$new" "$LANE_ROOT"
  lane_log "making a Debian $suite root in $LANE_ROOT (package list $key): debootstrap"
  # In a mount namespace of its own: the /proc and /sys it mounts in the root go with it.
  if ! unshare --mount --propagation private -- \
      debootstrap --variant=minbase "$suite" "$new" "$LANE_MIRROR" >"$LANE_DIR/debootstrap.log" 2>&1; then
    tail -n 30 "$LANE_DIR/debootstrap.log"
    lane_log "debootstrap failed (log: $LANE_DIR/debootstrap.log)"
    return 1
  fi
  lane_log "debootstrap took $((SECONDS - start)) s; installing $# packages"
  # No recommended packages: the lane proves that the listed ones are enough.
  # No fsync per file (--force-unsafe-io): a root cut short is made again anyway.
  if ! lane_in "$new" "apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        -o Dpkg::Options::=--force-unsafe-io $* && apt-get clean" >"$LANE_DIR/apt.log" 2>&1; then
    tail -n 30 "$LANE_DIR/apt.log"
    lane_log "installing the packages failed (log: $LANE_DIR/apt.log)"
    return 1
  fi
  echo "$key" >"$new/.horde-root-key"
  mv "$new" "$LANE_ROOT"
  lane_log "root ready in $((SECONDS - start)) s"
}

lane_sync_checkout() {
  local dest=$LANE_ROOT/horde
  local manifest=$dest/.horde-files files=$LANE_DIR/files
  mkdir -p "$dest"
  # What git has, committed or not, minus what is deleted in the working tree.
  git ls-files -z --cached --others --exclude-standard | sort -z -u >"$files.all"
  git ls-files -z --deleted | sort -z -u >"$files.deleted"
  comm -z -23 "$files.all" "$files.deleted" >"$files"
  if [ -f "$manifest" ]; then
    comm -z -23 "$manifest" "$files" | (cd "$dest" && xargs -0 -r rm -f --)
  fi
  tar -c --null -T "$files" | tar -x -C "$dest"  # keeps modification times
  mv "$files" "$manifest"
  rm -f "$files.all" "$files.deleted"
  lane_log "copied the checkout to $dest ($(tr -cd '\0' <"$manifest" | wc -c) files)"
}
