#!/usr/bin/env bash
# A real two-host horde job on one machine. Two Linux network namespaces joined by a
# veth pair are the hosts hostA (10.211.0.1) and hostB (10.211.0.2), each with its own
# hostname (a UTS namespace) and an sshd on port 2222 with a throwaway key. From hostA,
#
#   horderun -np 4 -H hostA:2,hostB:2 -p 2222 -i KEY --network-interface hnet0 ...
#
# starts ranks 2 and 3 on hostB through ssh, and the test checks that the collectives
# are right, that local_rank/local_size/cross_rank/cross_size match the hosts the ranks
# run on, and that the allreduce traffic crossed the veth link (its byte counters).
# Then: a rank failing on hostB stops the job with its exit code, and an unreachable
# host or a wrong ssh port is refused before anything starts.
#
# Needs root, iproute2, unshare and OpenSSH's client and server; skips, saying why,
# where namespaces cannot be made. Cleans up (processes, namespaces, files) on any exit.
# Usage: tests/launcher/multihost_netns_test.sh   (HORDERUN=path to test another build)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HORDERUN=${HORDERUN:-$ROOT/.venv/bin/horderun}
PYTHON=$ROOT/.venv/bin/python
JOB=$ROOT/tests/launcher/job.py
MEGABYTES=32   # per allreduce; two of them
JOB_LIMIT_S=120

skip() { echo "SKIP multi-host test: $*"; exit 0; }
fail() { echo "FAIL multi-host test: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (run as root or in CI)"
for tool in ip unshare ssh ssh-keygen /usr/sbin/sshd ss; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed (scripts/install.sh installs it)"
done

NS_A=horde-a-$$
NS_B=horde-b-$$
T=$(mktemp -d /tmp/horde-netns.XXXXXX)
MADE_RUN_SSHD=0

cleanup() {
  set +e
  # Every process in the two namespaces was started by this test: sshd and what it ran.
  for signal in TERM KILL; do
    for ns in "$NS_A" "$NS_B"; do
      pids=$(ip netns pids "$ns" 2>/dev/null)
      [ -n "$pids" ] && kill -s "$signal" $pids 2>/dev/null
    done
    sleep 0.5
  done
  ip netns del "$NS_A" 2>/dev/null   # deleting a namespace deletes its end of the veth
  ip netns del "$NS_B" 2>/dev/null
  ip link del "hva$$" 2>/dev/null
  [ "$MADE_RUN_SSHD" -eq 1 ] && rmdir /run/sshd 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- the network: hostA = hnet0 in NS_A, hostB = hnet0 in NS_B, one veth between them
ip netns add "$NS_A" 2>"$T/err" || skip "cannot create a network namespace: $(cat "$T/err")"
ip netns add "$NS_B"
ip link add "hva$$" type veth peer name "hvb$$"
ip link set "hva$$" netns "$NS_A"
ip link set "hvb$$" netns "$NS_B"
declare -A ADDRESS=([hostA]=10.211.0.1 [hostB]=10.211.0.2)
declare -A NS=([hostA]=$NS_A [hostB]=$NS_B)
for host in hostA hostB; do
  veth=hva$$; [ "$host" = hostB ] && veth=hvb$$
  ip -n "${NS[$host]}" link set "$veth" name hnet0
  ip -n "${NS[$host]}" addr add "${ADDRESS[$host]}/24" dev hnet0
  ip -n "${NS[$host]}" link set hnet0 up
  ip -n "${NS[$host]}" link set lo up
done

# --- names, keys and ssh configuration, seen by the hosts in place of the system's
mkdir -p "$T/etc-ssh" "$T/empty"
printf '127.0.0.1 localhost\n10.211.0.1 hostA\n10.211.0.2 hostB\n10.211.0.3 hostC\n' >"$T/hosts"
ssh-keygen -q -t ed25519 -N '' -C horde-test-client -f "$T/client_key"
cp "$T/client_key.pub" "$T/authorized_keys"
for host in hostA hostB; do
  ssh-keygen -q -t ed25519 -N '' -C "horde-test-$host" -f "$T/${host}_key"
  echo "[$host]:2222 $(cut -d' ' -f1,2 "$T/${host}_key.pub")" >>"$T/etc-ssh/ssh_known_hosts"
  cat >"$T/sshd_$host.conf" <<EOF
Port 2222
ListenAddress ${ADDRESS[$host]}
HostKey $T/${host}_key
AuthorizedKeysFile $T/authorized_keys
PidFile $T/sshd_$host.pid
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
LogLevel ERROR
EOF
done
# Host keys are checked for real, against the test's known hosts only.
printf 'Host *\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /etc/ssh/ssh_known_hosts\n' \
  >"$T/etc-ssh/ssh_config"
[ -f /etc/ssh/moduli ] && cp /etc/ssh/moduli "$T/etc-ssh/"
if [ ! -d /run/sshd ]; then mkdir -p /run/sshd && MADE_RUN_SSHD=1; fi

# Runs a command on a test host: in its network namespace, under its own hostname,
# and in a private mount namespace where the test's /etc/hosts and /etc/ssh replace
# the system's and the user's ~/.ssh is hidden. Nothing outside sees these mounts.
on_host() {
  local host=$1
  shift
  ip netns exec "${NS[$host]}" unshare --uts --mount --propagation private sh -c '
    mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/etc-ssh" /etc/ssh || exit 1
    if [ -d ~/.ssh ]; then mount --bind "$0/empty" ~/.ssh || exit 1; fi
    hostname "$1" && shift && exec "$@"' "$T" "$host" "$@"
}

for host in hostA hostB; do
  on_host "$host" /usr/sbin/sshd -D -e -f "$T/sshd_$host.conf" 2>"$T/sshd_$host.log" &
done
for host in hostA hostB; do
  for _ in $(seq 100); do
    ip netns exec "${NS[$host]}" ss -Hltn 'sport = :2222' | grep -q 2222 && continue 2
    sleep 0.1
  done
  fail "sshd on $host did not start: $(cat "$T/sshd_$host.log")"
done

counter() {  # bytes through hostA's end of the link: counter rx|tx
  ip netns exec "$NS_A" cat "/sys/class/net/hnet0/statistics/${1}_bytes"
}

horderun_on_hostA() {
  on_host hostA timeout "$JOB_LIMIT_S" "$HORDERUN" -p 2222 -i "$T/client_key" \
    --network-interface hnet0 "$@"
}

# --- 1. a horde job on two hosts
echo "== 4 ranks on hostA:2,hostB:2 over ssh; allreduce traffic must cross the veth"
rx_before=$(counter rx)
tx_before=$(counter tx)
horderun_on_hostA --verbose -np 4 -H hostA:2,hostB:2 \
  "$PYTHON" "$JOB" collectives --local-size 2 --megabytes "$MEGABYTES" --repeat 2 \
  >"$T/job.out" 2>&1 || { cat "$T/job.out"; fail "the two-host job failed"; }
rx=$(($(counter rx) - rx_before))
tx=$(($(counter tx) - tx_before))
grep -E '(^|:)ok rank=' "$T/job.out" | sed 's/^/  /'
for rank in 0 1 2 3; do
  host=hostA; [ "$rank" -ge 2 ] && host=hostB
  expected="ok rank=$rank size=4 local_rank=$((rank % 2)) local_size=2"
  expected+=" cross_rank=$((rank / 2)) cross_size=2 host=$host"
  grep -q "$expected\$" "$T/job.out" ||
    { cat "$T/job.out"; fail "rank $rank did not report '$expected'"; }
done
# Each host must receive the other's half of every sum: at least the data size each way.
minimum=$((2 * MEGABYTES * 1024 * 1024))
echo "  hnet0 on hostA: received $rx bytes, sent $tx bytes (allreduced $minimum bytes)"
[ "$rx" -ge "$minimum" ] && [ "$tx" -ge "$minimum" ] ||
  fail "only $rx/$tx bytes crossed the veth link: the ranks did not talk over it"

# --- 2. a rank that fails on hostB ends the job with its exit code; nothing is left
echo "== rank 3 (on hostB) exits with 3: horderun exits 3 and every rank stops"
start=$SECONDS
set +e
horderun_on_hostA -np 4 -H hostA:2,hostB:2 "$PYTHON" "$JOB" fail 3 3 >"$T/fail.out" 2>&1
code=$?
set -e
[ "$code" -eq 3 ] || { cat "$T/fail.out"; fail "horderun exited $code, expected 3"; }
[ $((SECONDS - start)) -lt 60 ] || fail "the job took $((SECONDS - start)) s to stop"
sleep 1
left=$(ps -o pid=,args= -p "$(ip netns pids "$NS_B" | paste -sd,)" | grep -v sshd || true)
[ -z "$left" ] || fail "still running on hostB: $left"
echo "  exit code 3 after $((SECONDS - start)) s; no rank left on hostB"

# --- 3. hosts that cannot be reached are named before anything starts
expect_refusal() {  # expect_refusal NEEDLE horderun-args...
  local needle=$1 out
  shift
  set +e
  out=$(horderun_on_hostA "$@" /usr/bin/touch "$T/ran" 2>&1)
  code=$?
  set -e
  [ "$code" -eq 2 ] || fail "expected exit code 2, got $code: $out"
  [ ! -e "$T/ran" ] || fail "a refused job started anyway"
  grep -q -- "$needle" <<<"$out" || fail "expected '$needle' in: $out"
  echo "  $out"
}
echo "== unreachable host and wrong port are refused with exit code 2"
expect_refusal "cannot reach hostC over ssh" --start-timeout 3 -H hostA:1,hostB:1,hostC:1
expect_refusal "cannot reach hostB over ssh (.*port 2223: Connection refused)" \
  -p 2223 -H hostA:1,hostB:1

echo "== multi-host test passed"
