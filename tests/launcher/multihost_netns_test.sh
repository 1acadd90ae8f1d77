#!/usr/bin/env bash
# A real two-host horde job on one machine, on the two test hosts of netns_hosts.sh
# (network namespaces joined by a veth pair, each with an sshd). From hostA,
#
#   horderun -np 4 -H hostA:2,hostB:2 -p 2222 -i KEY --network-interface hnet0 ...
#
# starts ranks 2 and 3 on hostB through ssh, and the test checks that the collectives
# are right, that local_rank/local_size/cross_rank/cross_size match the hosts the ranks
# run on, and that the allreduce traffic crossed the veth link (its byte counters).
# Then: a rank failing on hostB stops the job with its exit code, and an unreachable
# host or a wrong ssh port is refused before anything starts.
#
# Needs root (skips, saying why, where namespaces cannot be made).
# Usage: tests/launcher/multihost_netns_test.sh   (HORDERUN=path to test another build)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/launcher/netns_hosts.sh   # hostA and hostB (see there)
JOB=$ROOT/tests/launcher/job.py
MEGABYTES=32   # per allreduce; two of them
JOB_LIMIT_S=120

counter() {  # bytes through hostA's end of the link: counter rx|tx
  ip netns exec "$NS_A" cat "/sys/class/net/hnet0/statistics/${1}_bytes"
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
left=$(processes_on hostB)
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
