# Two test "hosts" on one machine, for the multi-host tests (sourced by
# multihost_netns_test.sh and elastic_netns_test.sh after `cd` to the checkout).
#
# Two Linux network namespaces joined by a veth pair are the hosts hostA (10.211.0.1)
# and hostB (10.211.0.2), each with its own hostname (a UTS namespace), its own
# /dev/shm ($T/shm-hostA, $T/shm-hostB, so the tests can look at each host's tmpfs) and
# an sshd on port 2222 with a throwaway key. hostC (10.211.0.3) has a name but no
# machine. Defines skip, fail, on_host, horderun_on_hostA and processes_on; cleans up
# (processes, namespaces, files) on any exit. What it shares with the N-host bed of
# scripts/link_testbed.sh (ssh, on_host, cleanup) is in scripts/netns_common.sh.
#
# Needs root, iproute2, unshare and OpenSSH's client and server; skips, saying why,
# where namespaces cannot be made.
# shellcheck shell=bash
ROOT=$PWD
HORDERUN=${HORDERUN:-$ROOT/.venv/bin/horderun}
# shellcheck disable=SC2034  # for the tests that source this
PYTHON=$ROOT/.venv/bin/python

# HORDE_NETNS_REQUIRED=1 (a lane where the bed must work) turns a skip into a failure.
skip() {
  [ "${HORDE_NETNS_REQUIRED:-0}" != 1 ] || fail "cannot set up the test hosts: $*"
  echo "SKIP multi-host test: $*"
  exit 0
}
fail() { echo "FAIL multi-host test: $*" >&2; exit 1; }

NS_A=horde-a-$$
NS_B=horde-b-$$
declare -A ADDRESS=([hostA]=10.211.0.1 [hostB]=10.211.0.2)
declare -A NS=([hostA]=$NS_A [hostB]=$NS_B)
# shellcheck source-path=SCRIPTDIR source=../../scripts/netns_common.sh
. "$ROOT/scripts/netns_common.sh"   # on_host, sshd, cleanup (see there)
netns_check_tools
T=$(mktemp -d /tmp/horde-netns.XXXXXX)

cleanup() {
  set +e
  trap '' TERM INT   # a second signal must not cut the cleanup short
  netns_kill_processes
  netns_remove
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- the network: hostA = hnet0 in NS_A, hostB = hnet0 in NS_B, one veth between them,
# made in the namespaces themselves: nothing appears in the machine's own network
# namespace, where a bed of another lane (another PID namespace, the same $$) may run
ip netns add "$NS_A" 2>"$T/err" || skip "cannot create a network namespace: $(cat "$T/err")"
ip netns add "$NS_B"
ip -n "$NS_A" link add hnet0 type veth peer name hnet0 netns "$NS_B"
for host in hostA hostB; do
  ip -n "${NS[$host]}" addr add "${ADDRESS[$host]}/24" dev hnet0
  ip -n "${NS[$host]}" link set hnet0 up
  ip -n "${NS[$host]}" link set lo up
done

# --- names, keys and ssh configuration, seen by the hosts in place of the system's
printf '127.0.0.1 localhost\n10.211.0.1 hostA\n10.211.0.2 hostB\n10.211.0.3 hostC\n' >"$T/hosts"
netns_prepare_hosts hostA hostB
netns_start_sshd hostA hostB

# horderun, started on hostA, reaching hostB through its sshd; each run ends within
# JOB_LIMIT_S seconds (set by the test).
horderun_on_hostA() {
  on_host hostA timeout "$JOB_LIMIT_S" "$HORDERUN" -p 2222 -i "$T/client_key" \
    --network-interface hnet0 "$@"
}

# "PID ARGS" of every process on a host but its sshd listener and the sessions it runs.
processes_on() {
  local pids
  pids=$(ip netns pids "${NS[$1]}" | paste -sd,)
  [ -z "$pids" ] || ps -o pid=,args= -p "$pids" | grep -v sshd || true
}
