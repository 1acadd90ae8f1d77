# What the test hosts made of Linux network namespaces share: the two-host bed of the
# multi-host tests (tests/launcher/netns_hosts.sh) and the N-host bed with shaped links
# (scripts/link_testbed.sh). Sourced by both; makes no namespace or link itself.
#
# A host is a network namespace (its interface hnet0 made by the caller), entered with
# on_host under its own hostname (a UTS namespace), with its own /dev/shm ($T/shm-HOST),
# the bed's /etc/hosts and /etc/ssh, and an sshd on port 2222 that only the bed's
# throwaway client key ($T/client_key) may log in to, as root.
#
# Before sourcing, the caller sets:
#   T        a directory of its own, made for this bed (netns_remove deletes it)
#   NS       an associative array: host name -> network namespace
#   ADDRESS  an associative array: host name -> the IPv4 address of the host's hnet0
# and defines skip REASON (exits 0) and fail REASON (exits 1). It writes $T/hosts (what the
# hosts see as /etc/hosts) before on_host runs anything.
#
# Provides:
#   netns_check_tools            skips unless root, iproute2, unshare and OpenSSH are here
#   netns_prepare_hosts HOST...  each host's /dev/shm, ssh keys and sshd configuration
#   netns_start_sshd HOST...     starts each host's sshd and waits until it listens
#   on_host HOST COMMAND...      runs COMMAND on HOST (see there)
#   netns_kill_processes         TERM, then KILL, every process in the namespaces of NS
#   netns_remove                 deletes the namespaces of NS and $T (after the above)
#   netns_bridge NAME            makes a bridge in the root namespace and brings it up
#   netns_htb_class NS DEV PARENT CLASSID RATE_KBIT CEIL_KBIT
#                                adds an HTB class to DEV in namespace NS ("": the root's)
# shellcheck shell=bash

NETNS_MADE_RUN_SSHD=0

netns_check_tools() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (run as root or in CI)"
  local tool
  for tool in ip unshare ssh ssh-keygen /usr/sbin/sshd ss; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed (scripts/install.sh installs it)"
  done
}

# Keys, known hosts and configuration files for the hosts' sshd and ssh, seen by every
# host in place of the system's /etc/ssh.
netns_prepare_hosts() {
  local host
  mkdir -p "$T/etc-ssh" "$T/empty"
  ssh-keygen -q -t ed25519 -N '' -C horde-test-client -f "$T/client_key"
  cp "$T/client_key.pub" "$T/authorized_keys"
  for host in "$@"; do
    mkdir -p "$T/shm-$host"
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
  # Host keys are checked for real, against the bed's known hosts only.
  printf 'Host *\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /etc/ssh/ssh_known_hosts\n' \
    >"$T/etc-ssh/ssh_config"
  [ -f /etc/ssh/moduli ] && cp /etc/ssh/moduli "$T/etc-ssh/"
  if [ ! -d /run/sshd ]; then mkdir -p /run/sshd && NETNS_MADE_RUN_SSHD=1; fi
}

# Runs a command on a test host: in its network namespace, under its own hostname,
# and in a private mount namespace where the bed's /etc/hosts, /etc/ssh and the host's
# own /dev/shm replace the system's and the user's ~/.ssh is hidden. Nothing outside
# sees these mounts. The command replaces the shell (exec): its pid is the caller's $!.
on_host() {
  local host=$1
  shift
  # shellcheck disable=SC2016  # expanded by sh -c
  ip netns exec "${NS[$host]}" unshare --uts --mount --propagation private sh -c '
    mount --bind "$0/hosts" /etc/hosts && mount --bind "$0/etc-ssh" /etc/ssh || exit 1
    mount --bind "$0/shm-$1" /dev/shm || exit 1
    if [ -d ~/.ssh ]; then mount --bind "$0/empty" ~/.ssh || exit 1; fi
    hostname "$1" && shift && exec "$@"' "$T" "$host" "$@"
}

netns_start_sshd() {
  local host
  for host in "$@"; do
    on_host "$host" /usr/sbin/sshd -D -e -f "$T/sshd_$host.conf" 2>"$T/sshd_$host.log" &
  done
  for host in "$@"; do
    for _ in $(seq 100); do
      ip netns exec "${NS[$host]}" ss -Hltn 'sport = :2222' | grep -q 2222 && continue 2
      sleep 0.1
    done
    fail "sshd on $host did not start: $(cat "$T/sshd_$host.log")"
  done
}

# Every process in the namespaces was started by the bed: sshd and what it ran, and what
# on_host ran.
netns_kill_processes() {
  local signal ns pids
  for signal in TERM KILL; do
    for ns in "${NS[@]}"; do
      pids=$(ip netns pids "$ns" 2>/dev/null)
      # shellcheck disable=SC2086  # a list of pids
      [ -n "$pids" ] && kill -s "$signal" $pids 2>/dev/null
    done
    sleep 0.5
  done
  return 0
}

netns_remove() {
  local ns
  for ns in "${NS[@]}"; do
    ip netns del "$ns" 2>/dev/null   # deleting a namespace deletes its end of each veth
  done
  [ "$NETNS_MADE_RUN_SSHD" -eq 1 ] && rmdir /run/sshd 2>/dev/null
  rm -rf "$T"
  return 0
}

# Bursts of 1 ms at the class's rate (at least 16 kB) keep the rates accurate when the
# shaper runs a little late, as on a busy machine (with tc's default of a few kB, 2 Gbit/s
# links ran 5% slow). A leaf class queues up to the device's txqueuelen (1,000 packets),
# so TCP sees no drops; shallow queues (64 kB) dropped packets and left an Open MPI job
# stalled.
netns_htb_class() {  # netns_htb_class NS DEV PARENT CLASSID RATE_KBIT CEIL_KBIT
  local burst namespace=()
  [ -z "$1" ] || namespace=(-n "$1")
  burst=$(awk -v r="$6" 'BEGIN { b = r * 1000 / 8 / 1000; printf "%d", b < 16000 ? 16000 : b }')
  tc "${namespace[@]}" class add dev "$2" parent "$3" classid "$4" htb rate "$5kbit" \
    ceil "$6kbit" burst "$burst" cburst "$burst" quantum 60000
}

netns_bridge() {  # netns_bridge NAME
  ip link add "$1" type bridge 2>"$T/err" || skip "cannot create a bridge: $(cat "$T/err")"
  # Frames between the hosts skip the root namespace's firewall (br_netfilter), if any.
  ip link set "$1" type bridge nf_call_iptables 0 nf_call_ip6tables 0 2>/dev/null || true
  ip link set "$1" up
}
