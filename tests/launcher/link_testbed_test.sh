#!/usr/bin/env bash
# The link test bed (scripts/link_testbed.sh) on bench/topologies/islands4.txt: 4 hosts,
# {host0,host1} and {host2,host3} at 2 Gbit/s, 0.25 Gbit/s between the two. On the bed:
#   - every host has its own hostname and resolves every other host; ssh reaches each;
#   - TCP from host0 to host1 (a fast link) and from host3 to host1 (a slow one) runs
#     within 20% of the link's rate (measured with a Python sender and receiver);
#   - a 4-rank horde job over ssh (tests/launcher/job.py collectives, one rank a host)
#     is right, and its ranks run on the hosts they should;
#   - the bed exits with its command's exit code.
# Afterwards, and after a SIGTERM to a bed mid-command (exit code 143): no namespace,
# bridge or veth of the bed left. A malformed matrix is refused with exit code 2.
#
# Needs root and the tools link_testbed.sh needs (skips, saying why, without them), and
# .venv (scripts/install.sh). Takes about 15 s; every bed has a time limit.
# Usage: tests/launcher/link_testbed_test.sh   (HORDERUN=path to test another build)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HORDERUN=${HORDERUN:-$ROOT/.venv/bin/horderun}
PYTHON=$ROOT/.venv/bin/python
BED_LIMIT_S=180

fail() { echo "FAIL link test bed: $*" >&2; exit 1; }
[ -x "$HORDERUN" ] || fail "no $HORDERUN: run scripts/install.sh first"
T=$(mktemp -d /tmp/horde-testbed-test.XXXXXX)
trap 'rm -rf "$T"' EXIT

# Runs a bed in the background, stopping it (SIGTERM) after LIMIT s; sets BED_PID, and
# BED_CODE once it ends (bed_wait).
bed_start() {  # bed_start OUT MATRIX COMMAND...
  local out=$1
  shift
  scripts/link_testbed.sh "$@" >"$T/$out" 2>&1 &
  BED_PID=$!
}
bed_wait() {  # bed_wait LIMIT_S
  local deadline=$((SECONDS + $1))
  while kill -0 "$BED_PID" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -TERM "$BED_PID" 2>/dev/null
      wait "$BED_PID" || true
      fail "the bed ran past $1 s"
    fi
    sleep 0.2
  done
  BED_CODE=0
  wait "$BED_PID" || BED_CODE=$?
}
# No namespace, bridge or veth named after the bed's pid.
expect_gone() {  # expect_gone PID
  local left
  left=$(ip netns list | grep -E "^horde-tb$1-" || true)
  [ -z "$left" ] || fail "namespaces left: $left"
  left=$(ip -br link | grep -E "^(hbr$1|hb$1-)" || true)
  [ -z "$left" ] || fail "links left: $left"
}

# --- checks run on host0, inside the bed
cat >"$T/inside.sh" <<'SH'
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
read -ra ssh_args <<<"$TESTBED_SSH"
on() { timeout 30 ssh "${ssh_args[@]}" -o BatchMode=yes "$@"; }
[ "$(hostname)" = host0 ] || fail "the command runs on $(hostname), not host0"
IFS=, read -ra hosts <<<"$TESTBED_HOSTS"
[ "${#hosts[@]}" -eq 4 ] || fail "TESTBED_HOSTS is '$TESTBED_HOSTS'"
[ "$TESTBED_SLOTS" = host0:1,host1:1,host2:1,host3:1 ] || fail "TESTBED_SLOTS: $TESTBED_SLOTS"
[ -d "$TESTBED_DIR" ] && [ -f "$TESTBED_MATRIX" ] && [ "$TESTBED_IFACE" = hnet0 ] ||
  fail "TESTBED_DIR, TESTBED_MATRIX or TESTBED_IFACE is wrong"

echo "== names and ssh"
for host in "${hosts[@]}"; do
  names=$(on "$host" 'hostname; for h in host0 host1 host2 host3; do getent hosts $h; done')
  expected="$host"
  for i in 0 1 2 3; do expected+=$'\n'"10.212.0.$((i + 1)) host$i"; done
  [ "$(tr -s ' ' <<<"$names")" = "$expected" ] || fail "$host sees: $names"
  echo "  $host resolves host0..host3; ssh works"
done

echo "== rates (Gbit/s of TCP payload, to the link's rate)"
measure() {  # measure FROM TO RATE
  local port=$((5000 + RANDOM % 1000)) got
  on "$2" "$PYTHON" "$ROOT/tests/launcher/tcp_rate.py" receive "$port" >"$TESTBED_DIR/rate" &
  on "$1" "$PYTHON" "$ROOT/tests/launcher/tcp_rate.py" send "$2" "$port" 2
  wait $! || fail "no receiver on $2"
  got=$(cat "$TESTBED_DIR/rate")
  echo "  $1 -> $2: $got of $3"
  awk -v g="$got" -v r="$3" 'BEGIN { exit !(g > 0.8 * r && g < 1.2 * r) }' ||
    fail "$1 -> $2 ran at $got Gbit/s, the link's rate is $3"
}
measure host0 host1 2
measure host3 host1 0.25

echo "== 4 ranks over ssh, one a host"
timeout 120 "$HORDERUN" -np 4 -H "$TESTBED_SLOTS" "${ssh_args[@]}" \
  --network-interface "$TESTBED_IFACE" "$PYTHON" "$ROOT/tests/launcher/job.py" \
  collectives --local-size 1 --megabytes 4 --repeat 2 >"$TESTBED_DIR/job.out" 2>&1 ||
  { cat "$TESTBED_DIR/job.out"; fail "the job failed"; }
for rank in 0 1 2 3; do
  expected="ok rank=$rank size=4 local_rank=0 local_size=1 cross_rank=$rank cross_size=4"
  grep -q "$expected host=host$rank\$" "$TESTBED_DIR/job.out" ||
    { cat "$TESTBED_DIR/job.out"; fail "rank $rank did not report '$expected host=host$rank'"; }
done
grep -E 'ok rank=' "$TESTBED_DIR/job.out" | sed 's/^/  /'
exit 7
SH

echo "== a bed of 4 hosts from bench/topologies/islands4.txt"
start=$SECONDS
export ROOT PYTHON HORDERUN   # for inside.sh
bed_start bed.out bench/topologies/islands4.txt -- bash "$T/inside.sh"
bed_wait "$BED_LIMIT_S"
sed 's/^/  /' "$T/bed.out"
if grep -q '^SKIP' "$T/bed.out"; then exit 0; fi
[ "$BED_CODE" -eq 7 ] || fail "the bed exited $BED_CODE, expected its command's 7"
expect_gone "$BED_PID"
echo "  the bed exited 7, as its command did; nothing of it left ($((SECONDS - start)) s)"

echo "== SIGTERM to a bed mid-command: exit code 143, nothing left"
bed_start term.out -q bench/topologies/islands4.txt -- sh -c "touch $T/started; exec sleep 300"
for _ in $(seq 300); do [ -e "$T/started" ] || sleep 0.1; done
[ -e "$T/started" ] || { cat "$T/term.out"; fail "the bed's command did not start"; }
kill -TERM "$BED_PID"
bed_wait 30
[ "$BED_CODE" -eq 143 ] || { cat "$T/term.out"; fail "exit code $BED_CODE, expected 143"; }
expect_gone "$BED_PID"
echo "  exit code 143; nothing of it left"

echo "== a malformed matrix: exit code 2"
printf -- '- 1 1\n1 - 1\n' >"$T/bad.txt"
bed_start bad.out "$T/bad.txt" -- true
bed_wait 30
if [ "$BED_CODE" -ne 2 ] || ! grep -q '2 rows for 3 columns' "$T/bad.out"; then
  cat "$T/bad.out"
  fail "expected exit code 2 and the reason, got $BED_CODE"
fi
echo "  $(cat "$T/bad.out")"

echo "== link test bed passed"
