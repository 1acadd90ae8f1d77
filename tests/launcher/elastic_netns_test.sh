#!/usr/bin/env bash
# Elastic training across the two test hosts of netns_hosts.sh (network namespaces
# joined by a veth pair, each with an sshd and its own /dev/shm). From hostA,
#
#   horderun -np 3 --min-np 1 --host-discovery-script D --blacklist-cooldown-range 6 12 ...
#
# with D printing hostA:1 and hostB:2 throughout:
#   1. SIGKILL of both ranks on hostB: the job goes on with 1 rank on hostA (hostB is
#      left out for its cool-down); the test empties hostB's /dev/shm, as a rebooted host
#      has it. After the cool-down hostB is ssh-checked again and the job grows back to 3;
#      hostB's ranks get the newest commit by broadcast. Checked: the sizes 3, 1, 3, the
#      same final weights on every rank, equal to tests/elastic/reference.py's replay.
#   2. SIGINT to horderun mid-training (exit 130), with an unreachable hostC in the
#      discovery output (left out after its ssh check), and 3. a job that gives up
#      (--reset-limit 0, exit 1).
# After each: no process left on either host, and no job directory left on either tmpfs.
# Prints the time from the SIGKILL to the first training step of the 1-rank generation.
#
# Needs root (skips, saying why, where namespaces cannot be made).
# Usage: tests/launcher/elastic_netns_test.sh   (HORDERUN=path to test another build)
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/launcher/netns_hosts.sh   # hostA and hostB (see there)
TRAIN=$ROOT/tests/elastic/elastic_train.py
JOB_LIMIT_S=240
WAIT_S=180   # for any one line of output

printf 'hostA:1\nhostB:2\n' >"$T/hosts.txt"
printf '#!/bin/sh\ncat %s\n' "$T/hosts.txt" >"$T/discover.sh"
chmod +x "$T/discover.sh"

# Starts an elastic job on hostA in the background: its stdout in $T/OUT.out, stderr in
# $T/OUT.err, its exit code in $T/OUT.code once it ends.
start_job() {  # start_job OUT horderun-args...
  local out=$1
  shift
  rm -f "$T/$out.code"
  (
    set +e
    horderun_on_hostA -np 3 --min-np 1 --max-np 3 --host-discovery-script "$T/discover.sh" \
      "$@" "$PYTHON" "$TRAIN" --epochs 5 --commit-every 2 --delay 0.3 >"$T/$out.out" 2>"$T/$out.err"
    echo $? >"$T/$out.code"
  ) &
}

# Waits for a line of $T/OUT.out matching the extended regex; prints it.
wait_for() {  # wait_for OUT REGEX
  local deadline=$((SECONDS + WAIT_S)) line
  while true; do
    line=$(grep -m1 -E "$2" "$T/$1.out" 2>/dev/null || true)
    [ -n "$line" ] && { echo "$line"; return; }
    [ -e "$T/$1.code" ] && { cat "$T/$1.err" >&2; fail "the job ended before a '$2' line"; }
    [ "$SECONDS" -lt "$deadline" ] || { cat "$T/$1.err" >&2; fail "no line matching '$2'"; }
    sleep 0.1
  done
}

finish_job() {  # finish_job OUT EXPECTED_CODE
  local deadline=$((SECONDS + JOB_LIMIT_S))
  while [ ! -e "$T/$1.code" ]; do
    [ "$SECONDS" -lt "$deadline" ] || fail "horderun did not end"
    sleep 0.2
  done
  local code
  code=$(cat "$T/$1.code")
  [ "$code" -eq "$2" ] || { cat "$T/$1.err"; fail "horderun exited $code, expected $2"; }
}

expect_err() {  # expect_err OUT REGEX: a line of horderun's stderr
  grep -qE "$2" "$T/$1.err" || { cat "$T/$1.err"; fail "expected a line matching '$2'"; }
}

# No rank, orted or horderun left on either host (10 s to exit), and no job directory
# left on either host's tmpfs.
expect_clean() {
  local deadline=$((SECONDS + 10)) host
  for host in hostA hostB; do
    while [ -n "$(processes_on "$host")" ]; do
      [ "$SECONDS" -lt "$deadline" ] || fail "still running on $host: $(processes_on "$host")"
      sleep 0.2
    done
    left=$(find "$T/shm-$host" -maxdepth 1 -name 'horde-elastic-*')
    [ -z "$left" ] || fail "job directory left on $host's /dev/shm: $left"
  done
  echo "  nothing left running on hostA or hostB; no job directory on either /dev/shm"
}

pid_of() {  # pid_of OUT GEN RANK: the pid a rank reported in its start line
  wait_for "$1" "^start rank=$3 size=[0-9]+ gen=$2 " | sed -E 's/.* pid=([0-9]+).*/\1/'
}

horderun_pid() {  # horderun's pid on hostA (started by this test), not its ranks' wrappers
  local pid
  for pid in $(ip netns pids "$NS_A"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = horderun ] &&
      ! tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- --rank-exit-wrapper && echo "$pid"
  done
}

# --- 1. hostB's ranks killed: shrink to hostA, grow back after hostB's cool-down
echo "== 3 ranks on hostA:1,hostB:2; both ranks on hostB SIGKILLed; 1 rank; hostB back: 3"
# hostB's first cool-down: 6 * 2 + U(0,1) * 6, kept within 12: 12 s, about twice what the
# 1-rank generation takes to start here, so that it trains before hostB comes back.
start_job grow --blacklist-cooldown-range 6 12
victim1=$(pid_of grow 0 1)
victim2=$(pid_of grow 0 2)
wait_for grow '^step rank=0 size=3 gen=0 epoch=0 batch=3$' >/dev/null  # after commit 1
ls "$T"/shm-hostB/horde-elastic-*/commit.* >/dev/null || fail "no commit on hostB's tmpfs"
killed_at=$(date +%s.%N)
kill -KILL "$victim1" "$victim2"
while kill -0 "$victim1" 2>/dev/null || kill -0 "$victim2" 2>/dev/null; do sleep 0.05; done
rm -rf "$T"/shm-hostB/horde-elastic-*   # hostB comes back as a rebooted host would
wait_for grow '^step rank=0 size=1 gen=1 ' >/dev/null
training_at=$(date +%s.%N)
wait_for grow '^start rank=2 size=3 gen=2 ' >/dev/null
finish_job grow 0
expect_err grow '^horderun: elastic generation 0: 3 rank\(s\) on hostA:1,hostB:2$'
expect_err grow '^horderun: reset 1: rank [12] on hostB failed \(exit code 137\); host hostB '\
'is left out for 12\.0 s \(--blacklist-cooldown-range\)'
expect_err grow '^horde rank [12] on hostB: killed by signal 9$'   # its exit wrapper's line
expect_err grow '^horderun: elastic generation 1: 1 rank\(s\) on hostA:1$'
expect_err grow '^horderun: host hostB is back after its cool-down$'
[ "$(grep -c '^horderun: checking ssh to hostB$' "$T/grow.err")" -eq 2 ] ||
  { cat "$T/grow.err"; fail "expected hostB's ssh check at the start and on its return"; }
expect_err grow '^horderun: reset 2: the ranks committed and asked to re-form'
expect_err grow '^horderun: elastic generation 2: 3 rank\(s\) on hostA:1,hostB:2$'
grep '^horderun: ' "$T/grow.err" | sed 's/^/  /'
(cd tests/elastic && "$PYTHON" check_output.py "$T/grow.out" 5 2 3 1 3) ||
  { cat "$T/grow.err"; fail "the final weights do not follow the reference rule"; }
echo "  from the SIGKILL to the first step of the 1-rank generation:" \
  "$(awk "BEGIN { printf \"%.1f\", $training_at - $killed_at }") s"
expect_clean

# --- 2. Ctrl-C: horderun stops every rank and removes the job directories; hostC,
# discovered but unreachable, is left out after its ssh check
echo "== hostC unreachable, left out; SIGINT to horderun mid-training: exit code 130"
printf 'hostC:1\nhostA:1\nhostB:2\n' >"$T/hosts.txt"
start_job interrupt --start-timeout 3
wait_for interrupt '^step rank=2 size=3 gen=0 epoch=0 batch=3$' >/dev/null
ls "$T"/shm-hostB/horde-elastic-*/commit.* >/dev/null || fail "no commit on hostB's tmpfs"
kill -INT "$(horderun_pid)"
finish_job interrupt 130
expect_err interrupt \
  '^horderun: cannot reach hostC over ssh .*; host hostC is left out from now on$'
expect_err interrupt '^horderun: elastic generation 0: 3 rank\(s\) on hostA:1,hostB:2$'
printf 'hostA:1\nhostB:2\n' >"$T/hosts.txt"
expect_clean

# --- 3. a job that gives up: the same
echo "== a rank on hostB killed with --reset-limit 0: horderun gives up with exit code 1"
start_job give-up --reset-limit 0
victim=$(pid_of give-up 0 2)
wait_for give-up '^step rank=2 size=3 gen=0 epoch=0 batch=3$' >/dev/null
ls "$T"/shm-hostB/horde-elastic-*/commit.* >/dev/null || fail "no commit on hostB's tmpfs"
kill -KILL "$victim"
finish_job give-up 1
expect_err give-up '^horderun: giving up: rank 2 on hostB failed \(exit code 137\); host hostB '\
'is left out from now on, and the job was already reset 0 time\(s\) \(--reset-limit 0\)$'
expect_clean

echo "== elastic multi-host test passed"
