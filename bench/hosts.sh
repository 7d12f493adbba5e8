#!/usr/bin/env bash
# bench/hosts.sh: agt across SSH hosts. See docs/benchmarks.md for what each figure means and
# the targets.
#
# Usage: bench/hosts.sh [--quick] [--agents N] [--rounds N] [--events N]
#
#   --quick       fewer runs: 3 rounds, 300 events; about a minute
#   --agents N    agents on each of the 3 hosts; default 100
#   --rounds N    rounds of ps timings; default 10. Each round times every command a few times in
#                 turn, so that a change of load hits all of them alike; a figure is the median
#   --events N    events for the tail -f latency; default 1000, 10 ms apart
#
# It needs root (network namespaces), sshd (Debian's openssh-server, installed when missing),
# ip, ssh and python3. It builds agt into a temporary directory and makes three SSH hosts there:
# three sshd's, each in a network namespace of its own behind a veth pair, with their own keys,
# a root whose shell is /bin/sh (a private /etc/passwd bound over the real one in the host's
# mount namespace) and a run directory each. On exit, failure or Ctrl-C it stops every agent,
# kills the sshd's and the ssh masters, removes the namespaces and the directory. Progress goes
# to stderr, the table to stdout.
set -euo pipefail
export LC_ALL=C

quick=0 agents=100 rounds='' events='' have_hyperfine=1
while (($#)); do
	case $1 in
	-q | --quick) quick=1 ;;
	--agents) agents=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--events) events=$2; shift ;;
	-h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "hosts.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if ((quick)); then
	: "${rounds:=3}" "${events:=300}"
else
	: "${rounds:=10}" "${events:=1000}"
fi
[[ $(id -u) == 0 ]] || { echo "hosts.sh: needs root for network namespaces" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agt-hosts.XXXXXX")
bin=$tmp/bin
mkdir -p "$bin" "$tmp/out" "$tmp/config/agt"
. "$root/bench/lib.sh"
bench_start
hosts=(h1 h2 h3)
ns() { echo "agt-bench-$$-$1"; }
hosts_cleanup() {
	local rc=$? h pid
	set +e
	for h in "${hosts[@]}"; do
		for pid in $(ip netns pids "$(ns "$h")" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
		ip netns del "$(ns "$h")" 2>/dev/null
	done
	(exit "$rc")
	bench_cleanup
}
trap hosts_cleanup EXIT

need_apt sshd openssh-server || [[ -x /usr/sbin/sshd ]] || { echo "hosts.sh: sshd is needed" >&2; exit 1; }
sshd=$(command -v sshd || echo /usr/sbin/sshd)
need_apt jq jq || { echo "hosts.sh: jq is needed" >&2; exit 1; }
if ! need_apt hyperfine hyperfine; then
	have_hyperfine=0
	log "no hyperfine: timing with a shell loop"
fi
mkdir -p /run/sshd

log "building agt into a temporary directory"
(cd "$root" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$bin/agt" .)

# --- three hosts ---------------------------------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -C bench -f "$tmp/id"
cp "$tmp/id.pub" "$tmp/authorized_keys"
: >"$tmp/known_hosts" >"$tmp/ssh_config" >"$tmp/config/agt/config.toml"
i=0
for h in "${hosts[@]}"; do
	i=$((i + 1))
	block=$(((($$ * 3 + i) % 16384) * 4))
	local_ip=10.202.$((block >> 8)).$(((block & 255) + 1)) addr=10.202.$((block >> 8)).$(((block & 255) + 2))
	d=$tmp/$h
	mkdir -p "$d/home"
	ssh-keygen -q -t ed25519 -N '' -C "$h" -f "$d/host_key"
	echo "$h $(cat "$d/host_key.pub")" >>"$tmp/known_hosts"
	sed "s#^root:.*#root:x:0:0:root:$d/home:/bin/sh#" /etc/passwd >"$d/passwd"
	cat >"$d/sshd_config" <<-EOF
		Port 22
		ListenAddress 0.0.0.0
		HostKey $d/host_key
		AuthorizedKeysFile $tmp/authorized_keys
		PidFile none
		UsePAM no
		PermitRootLogin prohibit-password
		StrictModes no
		LogLevel ERROR
	EOF
	ip netns add "$(ns "$h")"
	veth=ab$(($$ % 100000))$h
	ip link add "$veth" type veth peer name eth0 netns "$(ns "$h")"
	ip addr add "$local_ip/30" dev "$veth"
	ip link set "$veth" up
	ip -n "$(ns "$h")" addr add "$addr/30" dev eth0
	ip -n "$(ns "$h")" link set eth0 up
	ip -n "$(ns "$h")" link set lo up
	ip netns exec "$(ns "$h")" sh -c 'mount --bind "$1" /etc/passwd && exec "$2" -D -e -f "$3"' sh \
		"$d/passwd" "$sshd" "$d/sshd_config" 2>"$d/sshd.log" &
	printf 'Host %s\n  HostName %s\n  HostKeyAlias %s\n' "$h" "$addr" "$h" >>"$tmp/ssh_config"
	printf '[hosts.%s]\nssh = "%s"\nrun_dir = "%s"\nagt = "%s"\n' "$h" "$h" "$d/run" "$bin/agt" >>"$tmp/config/agt/config.toml"
done
printf 'Host *\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n' \
	"$tmp/id" "$tmp/known_hosts" >>"$tmp/ssh_config"
# The system ssh, reading this ssh config as it would read ~/.ssh/config.
printf '#!/bin/sh\nexec %s -F %s "$@"\n' "$(command -v ssh)" "$tmp/ssh_config" >"$bin/ssh"
chmod +x "$bin/ssh"
export PATH=$bin:$PATH XDG_CONFIG_HOME=$tmp/config AGT_RUN_DIR=$tmp/run
for h in "${hosts[@]}"; do
	for _ in $(seq 100); do ssh -o BatchMode=yes "$h" true 2>/dev/null && break; sleep 0.1; done
done
cd "$tmp"
load_start=$(load)
log "hosts up; $load_start"

# --- ps over 3 hosts x N agents ----------------------------------------------------------------
log "spawning $agents agents on each host"
for h in "${hosts[@]}"; do
	seq "$agents" | xargs -P 8 -I{} agt --host "$h" spawn --json "a{}" -- sleep 600 >/dev/null
done
for h in "${hosts[@]}"; do
	n=$(agt ps --host "$h" -q | wc -l)
	[[ $n == "$agents" ]] || { echo "hosts.sh: $h lists $n agents, not $agents" >&2; exit 1; }
done
# A single host as ssh runs it: through agt's own master (no handshake), and alone (with one).
sock() { echo "$tmp/run/ssh/$(printf '%s\0%s' "$1" "$bin/agt" | sha256sum | cut -c1-12).sock"; }
for h in "${hosts[@]}"; do
	[[ -S $(sock "$h") ]] || { echo "hosts.sh: no master socket for $h at $(sock "$h")" >&2; exit 1; }
done
log "timing ps: $rounds rounds; $(load)"
cmds=(agt-ps-3-hosts "$bin/agt ps --host h1,h2,h3 --json")
for h in "${hosts[@]}"; do
	cmds+=("ssh-mux-$h" "$bin/ssh -o BatchMode=yes -o ControlMaster=no -o ControlPath=$(sock "$h") $h $bin/agt --run-dir $tmp/$h/run ps --json")
done
cmds+=(ssh-own-h1 "$bin/ssh -o BatchMode=yes -o ControlPath=none h1 $bin/agt --run-dir $tmp/h1/run ps --json")
for ((r = 0; r < rounds; r++)); do
	time_set 5 1 "${cmds[@]}"
done
load_ps=$(load)

# --- tail -f latency over a host -----------------------------------------------------------------
# An agent on h1 writes a line every 10 ms; a reader here stamps each event as it arrives and
# subtracts the event's own ts (one clock: the hosts are this machine). Only events written
# after the reader started count. The same agent followed here, for the floor.
log "timing tail -f: $events events; $(load)"
cat >"$tmp/latency.py" <<-'EOF'
	import calendar, json, sys, time
	start, lat = time.time() + 0.5, []
	for line in sys.stdin:
	    now = time.time()
	    ev = json.loads(line)
	    if ev.get("type") != "output":
	        continue
	    ts = ev["ts"]  # RFC 3339, UTC: 2026-01-02T03:04:05.123456789Z
	    frac = ts[20:-1] if ts[19] == "." else "0"
	    t = calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float("0." + frac)
	    if t >= start:
	        lat.append((now - t) * 1000)
	lat.sort()
	q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
	print(len(lat), "%.2f %.2f %.2f %.2f" % (q(0.5), q(0.9), q(0.99), lat[-1]))
EOF
writer="i=0; while [ \$i -lt $events ]; do echo \$i; sleep 0.01; i=\$((i+1)); done"
agt --host h1 spawn --json lat -- sh -c "$writer" >/dev/null
tail_host=$(agt tail -f --type output h1:lat | python3 "$tmp/latency.py")
agt spawn --json lat -- sh -c "$writer" >/dev/null
tail_local=$(agt tail -f --type output lat | python3 "$tmp/latency.py")
load_end=$(load)

# --- the table -----------------------------------------------------------------------------------
ps3=$(fig agt-ps-3-hosts)
slowest=0
for h in "${hosts[@]}"; do
	v=$(fig "ssh-mux-$h")
	slowest=$(calc "($v > $slowest) ? $v : $slowest" %.3f)
done
read -r n_host p50_host p90_host p99_host max_host <<<"$tail_host"
read -r n_local p50_local p90_local p99_local max_local <<<"$tail_local"
cat <<-EOF
	agt across SSH hosts: 3 hosts x $agents agents, $(nproc) cores; load: start $load_start, after ps $load_ps, end $load_end

	| figure | ms (median) |
	| --- | --- |
	| agt ps --host h1,h2,h3 --json | $(calc "$ps3") |
	| ssh h1 agt ps --json, through agt's master | $(calc "$(fig ssh-mux-h1)") |
	| ssh h2 agt ps --json, through agt's master | $(calc "$(fig ssh-mux-h2)") |
	| ssh h3 agt ps --json, through agt's master | $(calc "$(fig ssh-mux-h3)") |
	| ssh h1 agt ps --json, a connection of its own | $(calc "$(fig ssh-own-h1)") |
	| ratio: 3 hosts / the slowest single host (goal <= 1.3) | $(calc "$ps3 / $slowest") |
	| CPU here (user+system of agt and the ssh it runs): agt ps over 3 hosts | $(calc "$(fig cpu:agt-ps-3-hosts)") |
	| CPU here: ssh h1 agt ps --json, three times | $(calc "3 * $(fig cpu:ssh-mux-h1)") |

	| tail -f of one agent, $events events 10 ms apart | events | p50 ms | p90 ms | p99 ms | max ms |
	| --- | --- | --- | --- | --- | --- |
	| over ssh: agt tail -f h1:lat (goal p99 <= 20) | $n_host | $p50_host | $p90_host | $p99_host | $max_host |
	| here: agt tail -f lat | $n_local | $p50_local | $p90_local | $p99_local | $max_local |
EOF
