#!/usr/bin/env bash
# In-place elastic recovery across the two test hosts of netns_hosts.sh (network
# namespaces joined by a veth pair, each with its own hostname, /dev/shm and sshd), with
# an MPI that survives a lost rank (Open MPI 5 with ULFM: the Debian 13 lane). From hostA,
#
#   horderun -np 4 --min-np 2 --elastic-mode in-place --host-discovery-script D ...
#
# with D printing hostA:2 and hostB:2 (ranks 0 and 1 on hostA, 2 and 3 on hostB):
#   1. SIGKILL of one rank on hostB: the 3 others (two on hostA, one on hostB) go on in
#      their own processes, in the same generation; horderun's reset line names the rank
#      and hostB.
#   2. SIGKILL of both ranks on hostB at once (the host lost): the 2 ranks on hostA go on
#      in place (--min-np 2); horderun's reset lines name hostB.
# Checked each time: one generation, no new process, every survivor resuming from one
# commit, the same final weights on every rank, equal to tests/elastic/reference.py's
# replay of the sizes and commits (tests/launcher/in_place_output.py); the survivors
# leaving (MPI_Finalize included) and horderun ending with 0 within 30 s of their final
# line; after the job, no process and no job directory left on either host. Prints the time from the SIGKILL to
# the survivors' first completed step (horderun's stdout, stamped as it arrives on
# hostA); with HORDE_NETNS_RUNS=N (default 1) each case runs N times and the median is
# printed too; HORDE_NETNS_CASES picks cases (default: "one-rank host").
#
# Needs root and an MPI with ULFM: skips, saying why, where either is missing
# (HORDE_NETNS_REQUIRED=1: fails instead).
# Usage: tests/launcher/elastic_in_place_netns_test.sh   (HORDERUN=path to test another build)
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v ompi_info >/dev/null || ! ompi_info | grep -q "FT MPI support: yes"; then
  msg="this MPI has no fault-tolerance extension (ULFM): nothing recovers in place"
  [ "${HORDE_NETNS_REQUIRED:-0}" != 1 ] || { echo "FAIL multi-host test: $msg" >&2; exit 1; }
  echo "SKIP multi-host test: $msg"
  exit 0
fi
. tests/launcher/netns_hosts.sh   # hostA and hostB (see there)
TRAIN=$ROOT/tests/elastic/elastic_train.py
EPOCHS=3
COMMIT_EVERY=2
RUNS=${HORDE_NETNS_RUNS:-1}
CASES=${HORDE_NETNS_CASES:-one-rank host}
JOB_LIMIT_S=120
WAIT_S=90   # for any one line of output
EXIT_S=30   # for horderun to end once every survivor printed its final weights

printf 'hostA:2\nhostB:2\n' >"$T/hosts.txt"
printf '#!/bin/sh\ncat %s\n' "$T/hosts.txt" >"$T/discover.sh"
chmod +x "$T/discover.sh"

# Each line of stdin, as `SECONDS<TAB>LINE`, SECONDS when it arrived (bash's clock).
stamp_lines() {
  local line
  while IFS= read -r line; do printf '%s\t%s\n' "$EPOCHREALTIME" "$line"; done
}

# Starts the in-place job on hostA in the background: its stdout, stamped, in $T/OUT.out,
# stderr in $T/OUT.err, its exit code in $T/OUT.code once it ends.
start_job() {  # start_job OUT
  local out=$1
  rm -f "$T/$out.code"
  (
    set +e
    horderun_on_hostA -np 4 --min-np 2 --max-np 4 --elastic-mode in-place \
      --host-discovery-script "$T/discover.sh" "$PYTHON" "$TRAIN" --epochs "$EPOCHS" \
      --commit-every "$COMMIT_EVERY" --delay 0.05 2>"$T/$out.err" | stamp_lines >"$T/$out.out"
    echo "${PIPESTATUS[0]}" >"$T/$out.code"
  ) &
}

# Waits for a line of $T/OUT.out (stamps left out) matching the extended regex; prints it.
wait_for() {  # wait_for OUT REGEX
  local deadline=$((SECONDS + WAIT_S)) line
  while true; do
    line=$(cut -f2- "$T/$1.out" 2>/dev/null | grep -m1 -E "$2" || true)
    [ -n "$line" ] && { echo "$line"; return; }
    [ -e "$T/$1.code" ] && { cat "$T/$1.err" >&2; fail "the job ended before a '$2' line"; }
    [ "$SECONDS" -lt "$deadline" ] ||
      { cat "$T/$1.err" >&2; fail "no line matching '$2' in $WAIT_S s"; }
    sleep 0.05
  done
}

# Waits for horderun's end: within JOB_LIMIT_S, and within EXIT_S of the SURVIVORS' last
# final line.
finish_job() {  # finish_job OUT EXPECTED_CODE SURVIVORS
  local deadline=$((SECONDS + JOB_LIMIT_S)) code finals_at=""
  while [ ! -e "$T/$1.code" ]; do
    if [ -z "$finals_at" ] && [ "$(cut -f2- "$T/$1.out" | grep -c '^final ')" -ge "$3" ]; then
      finals_at=$SECONDS
      deadline=$((SECONDS + EXIT_S))
    fi
    [ "$SECONDS" -lt "$deadline" ] || {
      [ -z "$finals_at" ] || {
        cat "$T/$1.err"
        echo "still running on hostA:" && processes_on hostA
        echo "still running on hostB:" && processes_on hostB
        fail "the $3 survivors printed their final weights but did not exit within $EXIT_S s" \
          "(expected them to leave MPI_Finalize and horderun to end with the job)"
      }
      echo "stdout (last lines):" && cut -f2- "$T/$1.out" | tail -n 8
      echo "running on hostA:" && processes_on hostA
      echo "running on hostB:" && processes_on hostB
      fail "horderun did not end in $JOB_LIMIT_S s"
    }
    sleep 0.2
  done
  code=$(cat "$T/$1.code")
  [ "$code" -eq "$2" ] || {
    cat "$T/$1.err" && echo "stdout (last lines):" && cut -f2- "$T/$1.out" | tail -n 8
    fail "horderun exited $code, expected $2"
  }
}

expect_err() {  # expect_err OUT REGEX: a line of horderun's stderr
  grep -qE "$2" "$T/$1.err" || { cat "$T/$1.err"; fail "expected a line matching '$2' on stderr"; }
}

# No rank, daemon or horderun left on either host (10 s to exit), and no job directory
# left on either host's tmpfs.
expect_clean() {
  local deadline=$((SECONDS + 10)) host left
  for host in hostA hostB; do
    while [ -n "$(processes_on "$host")" ]; do
      [ "$SECONDS" -lt "$deadline" ] || fail "still running on $host: $(processes_on "$host")"
      sleep 0.2
    done
    left=$(find "$T/shm-$host" -maxdepth 1 -name 'horde-elastic-*')
    [ -z "$left" ] || fail "job directory left on $host's /dev/shm: $left"
  done
}

# "RANK PID" of every rank of generation 0 (from their start lines) whose process runs
# on HOST (in its network namespace).
ranks_on() {  # ranks_on OUT HOST
  local rank pid
  for rank in 0 1 2 3; do
    pid=$(wait_for "$1" "^start rank=$rank size=4 gen=0 " | sed -E 's/.* pid=([0-9]+)$/\1/')
    [ "$(ip netns identify "$pid" 2>/dev/null)" = "${NS[$2]}" ] && echo "$rank $pid"
  done
  return 0
}

# One run: the job, the kill of COUNT rank(s) on hostB once the first of them made the
# step after commit 1, the checks; appends the recovery time to $T/times.CASE.
run_case() {  # run_case CASE COUNT SURVIVORS
  local case=$1 count=$2 survivors=$3 out=$1.$4 victims=() ranks=() rank pid
  local killed_at failed in_place
  start_job "$out"
  while read -r rank pid; do
    ranks+=("$rank") && victims+=("$pid")
  done < <(ranks_on "$out" hostB)
  [ "${#victims[@]}" -eq 2 ] || fail "expected 2 ranks on hostB, found ${#victims[@]}: ${ranks[*]}"
  ranks=("${ranks[@]:0:$count}") && victims=("${victims[@]:0:$count}")
  # As bench/elastic_cost.py: at the victim's step after commit 1.
  wait_for "$out" "^step rank=${ranks[0]} size=4 gen=0 epoch=0 batch=3$" >/dev/null
  # (find, not ls: a commit's temporary file may be renamed between the glob and ls)
  find "$T/shm-hostB" -path '*/horde-elastic-*/commit.*' | grep -q . ||
    fail "no commit on hostB's tmpfs"
  killed_at=$EPOCHREALTIME
  kill -KILL "${victims[@]}"
  finish_job "$out" 0 "$survivors"
  for rank in "${ranks[@]}"; do
    expect_err "$out" "^horde rank $rank on hostB: killed by signal 9$"   # its exit wrapper
  done
  expect_err "$out" '^horderun: elastic mode: in place \(Open MPI 5'
  expect_err "$out" '^horderun: elastic generation 0: 4 rank\(s\) on hostA:2,hostB:2$'
  failed="rank ($(IFS='|' && echo "${ranks[*]}")) on hostB failed \(killed by signal 9\)"
  expect_err "$out" "^horderun: reset 1: $failed; host hostB is left out from now on; "\
'the 3 other rank\(s\) recover in place$'
  if [ "$count" -eq 2 ]; then
    expect_err "$out" "^horderun: reset 2: $failed.*; the 2 other rank\(s\) recover in place$"
  fi
  in_place="generation 0 lost [12] rank\(s\) and goes on in place with $survivors in [0-9.]+ s"
  expect_err "$out" "^horde elastic: $in_place"
  if grep -q '^horderun: elastic generation 1' "$T/$out.err"; then
    cat "$T/$out.err"
    fail "a new generation started; expected the survivors to go on in place"
  fi
  "$PYTHON" tests/launcher/in_place_output.py "$T/$out.out" "$killed_at" "$EPOCHS" \
    "$COMMIT_EVERY" 4 "$survivors" >"$T/$out.check" ||
    { cat "$T/$out.err" "$T/$out.check"; fail "the survivors' output breaks the reference rule"; }
  grep -v '^recovery ' "$T/$out.check"
  grep '^recovery ' "$T/$out.check" | cut -d' ' -f2 >>"$T/times.$case"
  expect_clean
  echo "  from the SIGKILL to the survivors' next step: $(tail -1 "$T/times.$case") s"
}

report() {  # report CASE LABEL: the times of its runs and their median
  sort -n "$T/times.$1" | awk -v label="$2" '{ t[NR] = $1; all = all (NR > 1 ? ", " : "") $1 }
    END { m = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
      printf "  %s: median %.2f s of %d run(s) (sorted: %s)\n", label, m, NR, all }'
}

for case in $CASES; do
  case $case in
    one-rank)
      echo "== 4 ranks on hostA:2,hostB:2; one rank on hostB SIGKILLed; 3 go on in place"
      for run in $(seq "$RUNS"); do run_case one-rank 1 3 "$run"; done ;;
    host)
      echo "== 4 ranks on hostA:2,hostB:2; both ranks on hostB SIGKILLed (hostB lost); 2 go on"
      for run in $(seq "$RUNS"); do run_case host 2 2 "$run"; done ;;
    *) fail "unknown case '$case' in HORDE_NETNS_CASES (one-rank, host)" ;;
  esac
  grep '^horderun: ' "$T/$case.1.err" | sed 's/^/  /'
done

echo "== in place, from the SIGKILL to the survivors' first completed step (stamped on hostA)"
for case in $CASES; do
  case $case in
    one-rank) report one-rank "one rank of hostB lost, 4 -> 3 ranks" ;;
    host) report host "hostB lost (both its ranks), 4 -> 2 ranks" ;;
  esac
done
echo "== elastic in-place multi-host test passed"
