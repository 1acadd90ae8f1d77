#!/bin/sh
# Stands in for ssh in the unit tests of the reachability check. The host is the word
# before the remote command ("true"); its name says how to behave. Each call appends its
# arguments to $FAKE_SSH_LOG when that is set.
[ -n "$FAKE_SSH_LOG" ] && echo "$*" >> "$FAKE_SSH_LOG"
for arg; do host=$previous; previous=$arg; done
case "$host" in
  down*) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255 ;;
  denied*) echo "$host: Permission denied (publickey)." >&2; exit 255 ;;
  slow*) sleep 1 ;;
  # Meets the other meet* hosts: succeeds once $FAKE_SSH_MEET_COUNT of them are running
  # at the same time (each leaves its name in $FAKE_SSH_MEET), fails after 15 s.
  meet*)
    touch "$FAKE_SSH_MEET/$host"
    for _ in $(seq 150); do
      [ "$(ls "$FAKE_SSH_MEET" | wc -l)" -ge "$FAKE_SSH_MEET_COUNT" ] && exit 0
      sleep 0.1
    done
    echo "$host: met only $(ls "$FAKE_SSH_MEET" | wc -l) hosts" >&2; exit 255 ;;
  hang*) exec sleep 30 ;;
esac
exit 0
