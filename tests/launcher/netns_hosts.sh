# Two test "hosts" on one machine, for the multi-host tests (sourced by
# multihost_netns_test.sh and elastic_netns_test.sh after `cd` to the checkout).
#
# Two Linux network namespaces joined by a veth pair are the hosts hostA (10.211.0.1)
# and hostB (10.211.0.2), each with its own hostname (a UTS namespace), its own
# /dev/shm ($T/shm-hostA, $T/shm-hostB, so the tests can look at each host's tmpfs) and
# an sshd on port 2222 with a throwaway key. hostC (10.211.0.3) has a name but no
# machine. Defines skip, fail, on_host, horderun_on_hostA and processes_on; cleans up
# (processes, namespaces, files) on any exit.
#
# Needs root, iproute2, unshare and OpenSSH's client and server; skips, saying why,
# where namespaces cannot be made.
# shellcheck shell=bash
ROOT=$PWD
HORDERUN=${HORDERUN:-$ROOT/.venv/bin/horderun}
PYTHON=$ROOT/.venv/bin/python

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
  mkdir -p "$T/shm-$host"
done

# --- names, keys and ssh configuration, seen by the hosts in place of the system's
mkdir -p "$T/etc-ssh" "$T/empty"
printf '127.0.0.1 localhost\n10.211.0.1 hostA\n10.211.0.2 hostB\n10.211.0.3 hostC\n' >"$T/hosts"
ssh-keygen -q -t ed25519 -N '' -C horde-test-client -f "$T/client_key"
cp "$T/client_key.pub" "$T/authorized_keys"
for host in hostA hostB; do
  ssh-keygen -q -t ed25519 -N '' -C "horde-test-$host" -f "$T/${host}_key"
  echo "[$host]:2222 $(cut -d' ' -f1,2 "$T/${host}_key.pub")" >>"$T/etc-ssh/ssh_known_hosts"
  cat >"$T/sshd_$host.conf" <<CONF
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
CONF
done
# Host keys are checked for real, against the test's known hosts only.
printf 'Host *\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /etc/ssh/ssh_known_hosts\n' \
  >"$T/etc-ssh/ssh_config"
[ -f /etc/ssh/moduli ] && cp /etc/ssh/moduli "$T/etc-ssh/"
if [ ! -d /run/sshd ]; then mkdir -p /run/sshd && MADE_RUN_SSHD=1; fi

# Runs a command on a test host: in its network namespace, under its own hostname,
# and in a private mount namespace where the test's /etc/hosts, /etc/ssh and the host's
# own /dev/shm replace the system's and the user's ~/.ssh is hidden. Nothing outside
# sees these mounts.
on_host() {
  local host=$1
  shift
  ip netns exec "${NS[$host]}" unshare --uts --mount --propagation private sh -c '
    mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/etc-ssh" /etc/ssh || exit 1
    mount --bind "$0/shm-$1" /dev/shm || exit 1
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
