#!/usr/bin/env bash
# A test bed of N "hosts" on one machine with a chosen rate on every link, for running
# real multi-host jobs over uneven networks (topology-aware collectives, their tests
# and bench/topology.sh).
#
# Usage: scripts/link_testbed.sh [-q] MATRIX_FILE -- COMMAND [ARGS...]
#   Builds hosts host0..host{N-1} (N = the matrix's rows), runs COMMAND on host0, tears
#   everything down and exits with COMMAND's exit code. -q: no summary of the links.
#   COMMAND `bash` gives a shell on host0, e.g. to try `horderun` by hand.
#
# MATRIX_FILE (the form HORDE_TOPOLOGY=FILE reads too; bench/topologies/ has examples):
#   # comments start with '#'; blank lines are ignored
#   latency_us 40        optional; ignored here (this bed adds no latency)
#   nic 10 10 10 10      optional: each host's total egress limit in Gbit/s, 0 = none
#   -    2    0.25 0.25  one row per host: Gbit/s from this host (row) to each (column);
#   2    -    0.25 0.25  '-' (or 0) on the diagonal; 0 off it = no link (an unreachable
#   ...                  route: that traffic fails at once)
#
# Each host is a network namespace with interface hnet0, address 10.212.0.(i+1)/24,
# joined to the others by a veth on one bridge (hbr<pid>) in the root namespace; its own
# hostname, /dev/shm, /etc/hosts naming every host, and an sshd on port 2222 (see
# scripts/netns_common.sh). Each host's hnet0 egress is shaped by HTB: one class per
# destination at the matrix rate (u32 filters on the destination address) under a class
# at the host's nic rate; other traffic (ARP) has a class of its own, unshaped in effect.
# The rates are on the wire: TCP's payload gets about 95% of them (1500-byte frames).
#
# COMMAND runs on host0 (its namespaces, hostname and mounts), in the caller's directory,
# with these set:
#   TESTBED_HOSTS   host0,host1,...            TESTBED_SLOTS  host0:1,host1:1,...
#   TESTBED_SSH     -p 2222 -i KEYFILE (horderun's and ssh's options to reach the hosts)
#   TESTBED_IFACE   hnet0                      TESTBED_MATRIX the matrix, absolute path
#   TESTBED_DIR     a scratch directory every host sees (removed afterwards)
# e.g.  scripts/link_testbed.sh bench/topologies/islands4.txt -- sh -c \
#         '.venv/bin/horderun -np 4 -H $TESTBED_SLOTS $TESTBED_SSH \
#            --network-interface $TESTBED_IFACE .venv/bin/python train.py'
#
# Namespaces, links, processes and files are removed on any exit, SIGTERM and SIGINT
# included. Needs root, iproute2 (ip, tc with HTB), unshare and OpenSSH's client and
# server; prints "SKIP link test bed: REASON" and exits 0 where they are missing or
# namespaces cannot be made. Exit code 2: a bad command line or matrix.
set -euo pipefail

usage() {
  echo "usage: scripts/link_testbed.sh [-q] MATRIX_FILE -- COMMAND [ARGS...]" >&2
  exit 2
}
bad_matrix() { echo "link_testbed.sh: $MATRIX: $*" >&2; exit 2; }
skip() { echo "SKIP link test bed: $*"; exit 0; }
# shellcheck disable=SC2317  # called by netns_common.sh
fail() { echo "link_testbed.sh: $*" >&2; exit 1; }

quiet=0
if [ "${1:-}" = -q ]; then quiet=1; shift; fi
if [ $# -lt 3 ] || [ "$2" != -- ]; then usage; fi
[ -f "$1" ] || { echo "link_testbed.sh: no matrix file '$1'" >&2; exit 2; }
MATRIX=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift 2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

MTU=1500
SUBNET=10.212.0
MAX_HOSTS=64

# --- the matrix: RATE[i,j] and NIC[i] in Gbit/s, as written ("0": none)
declare -A RATE=()
declare -a NIC=()
N=0
nic_line=()
number='^([0-9]+\.?[0-9]*|\.[0-9]+)$'
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%%#*}
  read -ra words <<<"$line"
  [ ${#words[@]} -eq 0 ] && continue
  case ${words[0]} in
    latency_us)
      if [ ${#words[@]} -ne 2 ] || ! [[ ${words[1]} =~ $number ]]; then
        bad_matrix "expected 'latency_us MICROSECONDS', got '$line'"
      fi
      continue ;;
    nic)
      nic_line=("${words[@]:1}")
      continue ;;
  esac
  [ "$N" -eq 0 ] || [ ${#words[@]} -eq "$N" ] ||
    bad_matrix "row $((N + 1)) has ${#words[@]} entries, the first had $N"
  [ "$N" -ne 0 ] || [ ${#words[@]} -le "$MAX_HOSTS" ] ||
    bad_matrix "${#words[@]} hosts: at most $MAX_HOSTS"
  row=$(( ${#RATE[@]} / ${#words[@]} ))
  [ "$row" -lt ${#words[@]} ] || bad_matrix "more rows than columns (${#words[@]})"
  for col in "${!words[@]}"; do
    value=${words[$col]}
    if [ "$col" -eq "$row" ]; then
      [ "$value" = - ] || [[ $value =~ ^0*\.?0*$ ]] ||
        bad_matrix "row $((row + 1)): expected '-' or 0 on the diagonal, got '$value'"
      value=0
    else
      [[ $value =~ $number ]] ||
        bad_matrix "row $((row + 1)), column $((col + 1)): '$value' is not a rate in Gbit/s"
    fi
    RATE[$row,$col]=$value
  done
  N=${#words[@]}
done <"$MATRIX"
[ "$N" -ge 2 ] || bad_matrix "expected a matrix of at least 2 hosts"
[ ${#RATE[@]} -eq $((N * N)) ] || bad_matrix "$(( ${#RATE[@]} / N )) rows for $N columns"
for ((i = 0; i < N; i++)); do NIC[i]=0; done
if [ ${#nic_line[@]} -gt 0 ]; then
  [ ${#nic_line[@]} -eq "$N" ] || bad_matrix "'nic' needs $N rates, got ${#nic_line[@]}"
  for i in "${!nic_line[@]}"; do
    [[ ${nic_line[$i]} =~ $number ]] || bad_matrix "nic: '${nic_line[$i]}' is not a rate"
    NIC[i]=${nic_line[$i]}
  done
fi

# Gbit/s to kbit/s, the unit tc is given (0 for none)
kbit() { awk -v r="$1" 'BEGIN { printf "%d", r * 1000000 }'; }

# --- the hosts
declare -A NS=() ADDRESS=()
HOSTS=()
for ((i = 0; i < N; i++)); do
  HOSTS+=("host$i")
  NS[host$i]=horde-tb$$-$i
  ADDRESS[host$i]=$SUBNET.$((i + 1))
done
BRIDGE=hbr$$
# shellcheck source-path=SCRIPTDIR source=netns_common.sh
. "$HERE/netns_common.sh"   # on_host, sshd, cleanup (see there)
netns_check_tools
for tool in tc awk; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done
T=$(mktemp -d /tmp/horde-testbed.XXXXXX)

# shellcheck disable=SC2317  # run by the trap
cleanup() {
  set +e
  trap '' TERM INT   # a second signal must not cut the cleanup short
  netns_kill_processes
  for ((i = 0; i < N; i++)); do ip link del "hb$$-$i" 2>/dev/null; done
  ip link del "$BRIDGE" 2>/dev/null
  netns_remove
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

netns_bridge "$BRIDGE"
for ((i = 0; i < N; i++)); do
  host=host$i
  ns=${NS[$host]}
  ip netns add "$ns" 2>"$T/err" || skip "cannot create a network namespace: $(cat "$T/err")"
  ip link add "hb$$-$i" mtu "$MTU" type veth peer name hnet0 mtu "$MTU" netns "$ns"
  ip link set "hb$$-$i" master "$BRIDGE" up
  ip -n "$ns" addr add "${ADDRESS[$host]}/24" dev hnet0
  ip -n "$ns" link set hnet0 up
  ip -n "$ns" link set lo up
done

# --- the links: HTB on each host's hnet0. Classes (minor ids in hex): 1:1 the nic, 1:2
# other traffic, 1:1xx the destination xx (host index in hex) under 1:1. A destination
# class's guaranteed rate is its share of the nic (so that the nic's limit holds) and
# its ceiling the link's rate (netns_htb_class says how its bursts and queues are sized).
UNLIMITED_KBIT=$(kbit 100)   # for "no nic limit", and for the other traffic
for ((i = 0; i < N; i++)); do
  ns=${NS[host$i]}
  nic=$(kbit "${NIC[i]}")
  [ "$nic" -gt 0 ] || nic=$UNLIMITED_KBIT
  tc -n "$ns" qdisc add dev hnet0 root handle 1: htb default 2
  netns_htb_class "$ns" hnet0 1: 1:1 "$nic" "$nic"
  netns_htb_class "$ns" hnet0 1: 1:2 "$UNLIMITED_KBIT" "$UNLIMITED_KBIT"
  for ((j = 0; j < N; j++)); do
    [ "$j" -ne "$i" ] || continue
    rate=$(kbit "${RATE[$i,$j]}")
    if [ "$rate" -eq 0 ]; then
      ip -n "$ns" route add unreachable "${ADDRESS[host$j]}/32"
      continue
    fi
    share=$((nic / (N - 1)))
    [ "$share" -lt "$rate" ] || share=$rate
    class=1:$(printf '%x' $((0x100 + j)))
    netns_htb_class "$ns" hnet0 1:1 "$class" "$share" "$rate"
    tc -n "$ns" filter add dev hnet0 parent 1: protocol ip prio 1 u32 \
      match ip dst "${ADDRESS[host$j]}/32" flowid "$class"
  done
done

# --- names, ssh, sshd
{
  echo "127.0.0.1 localhost"
  for host in "${HOSTS[@]}"; do echo "${ADDRESS[$host]} $host"; done
} >"$T/hosts"
netns_prepare_hosts "${HOSTS[@]}"
netns_start_sshd "${HOSTS[@]}"
mkdir "$T/shared"

if [ "$quiet" -eq 0 ]; then
  echo "link test bed: $N hosts on bridge $BRIDGE; link rates in Gbit/s (0: no link)"
  for ((i = 0; i < N; i++)); do
    links=""
    for ((j = 0; j < N; j++)); do
      [ "$j" -eq "$i" ] || links+=$(printf ' host%s:%s' "$j" "${RATE[$i,$j]}")
    done
    nic=${NIC[i]}
    [ "$(kbit "$nic")" -gt 0 ] || nic=-
    printf '  host%-2s %-11s nic %s, to%s\n' "$i" "${ADDRESS[host$i]}" "$nic" "$links"
  done
fi

# --- the command, on host0; in the background so that a signal reaches the traps at
# once (the cleanup ends it with every other process on the hosts), with this stdin.
TESTBED_HOSTS=$(IFS=,; echo "${HOSTS[*]}")
TESTBED_SLOTS=${TESTBED_HOSTS//,/:1,}:1
export TESTBED_HOSTS TESTBED_SLOTS TESTBED_SSH="-p 2222 -i $T/client_key" \
  TESTBED_IFACE=hnet0 TESTBED_MATRIX=$MATRIX TESTBED_DIR=$T/shared
exec 3<&0
on_host host0 "$@" <&3 3<&- &
code=0
wait $! || code=$?
exit "$code"
