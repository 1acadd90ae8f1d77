#!/usr/bin/env bash
# A test bed of hosts behind switches, on one machine: each host has one NIC, shaped in
# both directions, and racks of hosts reach each other through a spine over uplinks
# shaped in both directions. All of a host's flows share its NIC and all flows between
# racks share the uplinks, as on an Ethernet or InfiniBand cluster (scripts/link_testbed.sh
# gives every pair of hosts a wire of its own instead: direct-wire meshes).
#
# Usage: scripts/fabric_testbed.sh [-q] FABRIC_FILE -- COMMAND [ARGS...]
#   Builds the hosts, runs COMMAND on the first host of the job's order, tears everything
#   down and exits with COMMAND's exit code. -q: no summary. COMMAND `bash`: a shell.
#
# FABRIC_FILE (bench/fabrics/ has examples):
#   # comments start with '#'; blank lines are ignored
#   nic 1              each host's NIC in Gbit/s, in each direction
#   racks 2 2          hosts per rack (one number: all hosts on one switch)
#   uplink 0.5         each rack's uplink to the spine in Gbit/s, in each direction
#                      (needed with several racks)
#   ranks_per_host 2   optional, default 1
#   order crossed      optional: the job's host order, `rack` (default: rack by rack)
#                      or `crossed` (one host of each rack in turn)
#
# Hosts are host0..host{H-1}, rack by rack; each is a network namespace with interface
# hnet0 (address 10.213.0.(i+1)/24), its own hostname, /dev/shm (the ranks of a host
# share memory, as on a real host), /etc/hosts naming every host, and an sshd on port
# 2222 (scripts/netns_common.sh). A host's veth peer is a port of its rack's bridge;
# each rack's bridge is joined to a spine bridge by a veth pair, the uplink. HTB shapes
# what leaves the host (its hnet0: the NIC's egress), what its switch port sends to it
# (the NIC's ingress), and both ends of each uplink. The rates are on the wire: TCP's
# payload gets about 95% of them.
#
# COMMAND runs on the job order's first host, in the caller's directory, with these set:
#   TESTBED_HOSTS   the hosts in the job's order     TESTBED_SLOTS  host0:2,host1:2,...
#   TESTBED_SSH     -p 2222 -i KEYFILE               TESTBED_IFACE  hnet0
#   TESTBED_MATRIX  the fabric as a link matrix (a `hosts` line, every pair at the NIC
#                   rate, the `nic` line, and with several racks `racks` and `uplink`
#                   lines): what HORDE_TOPOLOGY=FILE reads
#   TESTBED_DIR     a scratch directory every host sees (removed afterwards)
#
# Namespaces, links, processes and files are removed on any exit, SIGTERM and SIGINT
# included. Needs root, iproute2 (ip, tc with HTB), unshare and OpenSSH; prints
# "SKIP fabric test bed: REASON" and exits 0 where they are missing. Exit code 2: a bad
# command line or fabric file.
set -euo pipefail

usage() {
  echo "usage: scripts/fabric_testbed.sh [-q] FABRIC_FILE -- COMMAND [ARGS...]" >&2
  exit 2
}
bad_fabric() { echo "fabric_testbed.sh: $FABRIC: $*" >&2; exit 2; }
skip() { echo "SKIP fabric test bed: $*"; exit 0; }
# shellcheck disable=SC2317  # called by netns_common.sh
fail() { echo "fabric_testbed.sh: $*" >&2; exit 1; }

quiet=0
if [ "${1:-}" = -q ]; then quiet=1; shift; fi
if [ $# -lt 3 ] || [ "$2" != -- ]; then usage; fi
[ -f "$1" ] || { echo "fabric_testbed.sh: no fabric file '$1'" >&2; exit 2; }
FABRIC=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift 2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

MTU=1500
SUBNET=10.213.0
MAX_HOSTS=32

# --- the fabric file
NIC="" UPLINK="" RANKS_PER_HOST=1 ORDER=rack
RACK_SIZES=()
rate='^([0-9]+\.?[0-9]*|\.[0-9]+)$'
count='^[1-9][0-9]*$'
while IFS= read -r line || [ -n "$line" ]; do
  line=${line%%#*}
  read -ra words <<<"$line"
  [ ${#words[@]} -eq 0 ] && continue
  value=${words[1]:-}
  case ${words[0]} in
    nic) [ ${#words[@]} -eq 2 ] && [[ $value =~ $rate ]] ||
           bad_fabric "expected 'nic GBIT_PER_S', got '$line'"
         NIC=$value ;;
    uplink) [ ${#words[@]} -eq 2 ] && [[ $value =~ $rate ]] ||
              bad_fabric "expected 'uplink GBIT_PER_S', got '$line'"
            UPLINK=$value ;;
    racks) [ ${#words[@]} -ge 2 ] || bad_fabric "expected 'racks HOSTS...', got '$line'"
           for hosts in "${words[@]:1}"; do
             [[ $hosts =~ $count ]] || bad_fabric "racks: '$hosts' is not a number of hosts"
           done
           RACK_SIZES=("${words[@]:1}") ;;
    ranks_per_host) [ ${#words[@]} -eq 2 ] && [[ $value =~ $count ]] ||
                      bad_fabric "expected 'ranks_per_host COUNT', got '$line'"
                    RANKS_PER_HOST=$value ;;
    order) [ ${#words[@]} -eq 2 ] && { [ "$value" = rack ] || [ "$value" = crossed ]; } ||
             bad_fabric "expected 'order rack' or 'order crossed', got '$line'"
           ORDER=$value ;;
    *) bad_fabric "unknown line '$line' (expected nic, racks, uplink, ranks_per_host, order)" ;;
  esac
done <"$FABRIC"
[ -n "$NIC" ] || bad_fabric "no 'nic' line"
[ ${#RACK_SIZES[@]} -gt 0 ] || bad_fabric "no 'racks' line"
[ ${#RACK_SIZES[@]} -eq 1 ] || [ -n "$UPLINK" ] ||
  bad_fabric "${#RACK_SIZES[@]} racks need an 'uplink' line"
RACK=()   # host index -> rack
for r in "${!RACK_SIZES[@]}"; do
  for ((k = 0; k < RACK_SIZES[r]; k++)); do RACK+=("$r"); done
done
H=${#RACK[@]}
[ "$H" -ge 2 ] || bad_fabric "expected at least 2 hosts"
[ "$H" -le "$MAX_HOSTS" ] || bad_fabric "$H hosts: at most $MAX_HOSTS"

# The job's host order: rack by rack, or crossed (the k-th host of each rack in turn).
JOB_ORDER=()
if [ "$ORDER" = rack ]; then
  for ((i = 0; i < H; i++)); do JOB_ORDER+=("$i"); done
else
  for ((k = 0; ; k++)); do
    added=0
    first=0
    for r in "${!RACK_SIZES[@]}"; do
      if [ "$k" -lt "${RACK_SIZES[r]}" ]; then JOB_ORDER+=($((first + k))); added=1; fi
      first=$((first + RACK_SIZES[r]))
    done
    [ "$added" -eq 1 ] || break
  done
fi

# Gbit/s to kbit/s, the unit tc is given
kbit() { awk -v r="$1" 'BEGIN { printf "%d", r * 1000000 }'; }

# --- the hosts
declare -A NS=() ADDRESS=()
HOSTS=()
for ((i = 0; i < H; i++)); do
  HOSTS+=("host$i")
  NS[host$i]=horde-fb$$-$i
  ADDRESS[host$i]=$SUBNET.$((i + 1))
done
RACKS=${#RACK_SIZES[@]}
SPINE=fsp$$
# shellcheck source-path=SCRIPTDIR source=netns_common.sh
. "$HERE/netns_common.sh"   # on_host, sshd, shaping, cleanup (see there)
netns_check_tools
for tool in tc awk; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done
T=$(mktemp -d /tmp/horde-fabric.XXXXXX)

# shellcheck disable=SC2317  # run by the trap
cleanup() {
  set +e
  trap '' TERM INT   # a second signal must not cut the cleanup short
  netns_kill_processes
  for ((i = 0; i < H; i++)); do ip link del "fh$$-$i" 2>/dev/null; done
  for ((r = 0; r < RACKS; r++)); do
    ip link del "fu$$-$r" 2>/dev/null
    ip link del "fr$$-$r" 2>/dev/null
  done
  ip link del "$SPINE" 2>/dev/null
  netns_remove
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# One HTB class holding all that leaves DEV (in namespace NS, "" for the root's) to KBIT.
shape() {  # shape NS DEV KBIT
  local namespace=()
  [ -z "$1" ] || namespace=(-n "$1")
  tc "${namespace[@]}" qdisc add dev "$2" root handle 1: htb default 1
  netns_htb_class "$1" "$2" 1: 1:1 "$3" "$3"
}

nic_kbit=$(kbit "$NIC")
[ "$nic_kbit" -gt 0 ] || bad_fabric "nic: expected a rate above 0"
for ((r = 0; r < RACKS; r++)); do netns_bridge "fr$$-$r"; done
if [ "$RACKS" -gt 1 ]; then
  uplink_kbit=$(kbit "$UPLINK")
  [ "$uplink_kbit" -gt 0 ] || bad_fabric "uplink: expected a rate above 0"
  netns_bridge "$SPINE"
  for ((r = 0; r < RACKS; r++)); do
    ip link add "fu$$-$r" mtu "$MTU" type veth peer name "fv$$-$r" mtu "$MTU"
    ip link set "fu$$-$r" master "fr$$-$r" up
    ip link set "fv$$-$r" master "$SPINE" up
    shape "" "fu$$-$r" "$uplink_kbit"   # the rack's uplink, out to the spine
    shape "" "fv$$-$r" "$uplink_kbit"   # and in from it
  done
fi
for ((i = 0; i < H; i++)); do
  host=host$i
  ns=${NS[$host]}
  ip netns add "$ns" 2>"$T/err" || skip "cannot create a network namespace: $(cat "$T/err")"
  ip link add "fh$$-$i" mtu "$MTU" type veth peer name hnet0 mtu "$MTU" netns "$ns"
  ip link set "fh$$-$i" master "fr$$-${RACK[i]}" up
  ip -n "$ns" addr add "${ADDRESS[$host]}/24" dev hnet0
  ip -n "$ns" link set hnet0 up
  ip -n "$ns" link set lo up
  shape "$ns" hnet0 "$nic_kbit"      # the NIC's egress
  shape "" "fh$$-$i" "$nic_kbit"     # its ingress: the switch port's egress
done

# --- names, ssh, sshd
{
  echo "127.0.0.1 localhost"
  for host in "${HOSTS[@]}"; do echo "${ADDRESS[$host]} $host"; done
} >"$T/hosts"
netns_prepare_hosts "${HOSTS[@]}"
netns_start_sshd "${HOSTS[@]}"
mkdir "$T/shared"

# --- the fabric as a link matrix, in the job's order
{
  echo "# $(basename "$FABRIC") as a link matrix (scripts/fabric_testbed.sh)"
  printf 'hosts'; for i in "${JOB_ORDER[@]}"; do printf ' host%s' "$i"; done; echo
  printf 'nic'; for _ in "${JOB_ORDER[@]}"; do printf ' %s' "$NIC"; done; echo
  if [ "$RACKS" -gt 1 ]; then
    printf 'racks'; for i in "${JOB_ORDER[@]}"; do printf ' %s' "${RACK[i]}"; done; echo
    printf 'uplink'; for _ in "${RACK_SIZES[@]}"; do printf ' %s' "$UPLINK"; done; echo
  fi
  for i in "${JOB_ORDER[@]}"; do
    for j in "${JOB_ORDER[@]}"; do
      if [ "$i" -eq "$j" ]; then printf ' -'; else printf ' %s' "$NIC"; fi
    done
    echo
  done
} >"$T/shared/fabric_matrix.txt"

order_hosts=()
for i in "${JOB_ORDER[@]}"; do order_hosts+=("host$i"); done
if [ "$quiet" -eq 0 ]; then
  echo "fabric test bed: $H hosts, NICs $NIC Gbit/s each way, $RANKS_PER_HOST rank(s) a host"
  for ((r = 0; r < RACKS; r++)); do
    members=""
    for ((i = 0; i < H; i++)); do [ "${RACK[i]}" -ne "$r" ] || members+=" host$i"; done
    uplink=""
    [ "$RACKS" -eq 1 ] || uplink=", uplink $UPLINK Gbit/s each way"
    echo "  rack $r:$members$uplink"
  done
  echo "  job order: ${order_hosts[*]}"
fi

# --- the command, on the job's first host; in the background so that a signal reaches
# the traps at once (the cleanup ends it with every other process on the hosts).
TESTBED_HOSTS=$(IFS=,; echo "${order_hosts[*]}")
TESTBED_SLOTS=${TESTBED_HOSTS//,/:$RANKS_PER_HOST,}:$RANKS_PER_HOST
export TESTBED_HOSTS TESTBED_SLOTS TESTBED_SSH="-p 2222 -i $T/client_key" \
  TESTBED_IFACE=hnet0 TESTBED_MATRIX=$T/shared/fabric_matrix.txt TESTBED_DIR=$T/shared
exec 3<&0
on_host "${order_hosts[0]}" "$@" <&3 3<&- &
code=0
wait $! || code=$?
exit "$code"
