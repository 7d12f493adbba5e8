#!/usr/bin/env bash
# bench/peers.sh: what a flood from a peer costs a supervisor (R36), for this tree's agt and,
# with --against REV, for agt built at REV, side by side. See docs/control.md.
#
# Usage: bench/peers.sh [--against REV] [--clients N] [--mb N] [--requests N] [--kb N]
#
#   --against REV   also measure agt as built at git revision REV (main, a commit)
#   --clients N     control clients flooding at once; default 30
#   --mb N          megabytes each writes without a newline; default 15
#   --requests N    requests the ACP agent sends while reading none of its input; default 3000
#   --kb N          kilobytes in each request; default 64
#
# For each agt: a `sleep` agent whose control channel the clients flood (bench/peers ctl), and
# an ACP agent (bench/peers acp) that floods requests at its first prompt. After each flood it
# prints the supervisor's peak and current resident size (VmHWM, VmRSS), its resident size 10 s
# later (what it gave back), and the agent's state.
# It builds into a temporary directory, and on exit, failure or Ctrl-C stops every agent it
# spawned and removes that directory.
set -euo pipefail
export LC_ALL=C

against='' clients=30 mb=15 requests=3000 kb=64
while (($#)); do
	case $1 in
	--against) against=$2; shift ;;
	--clients) clients=$2; shift ;;
	--mb) mb=$2; shift ;;
	--requests) requests=$2; shift ;;
	--kb) kb=$2; shift ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "peers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agt-peers.XXXXXX")
builds=()
cleanup() {
	for b in "${builds[@]}"; do
		AGT_RUN_DIR=$tmp/run-$b "$tmp/$b/agt" stop --all -t 0 >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

build() { # name, source dir
	mkdir -p "$tmp/$1"
	(cd "$2" && CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o "$tmp/$1/agt" .)
	builds+=("$1")
}
echo "building" >&2
build new "$root"
(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/peers" ./bench/peers)
if [[ -n $against ]]; then
	mkdir -p "$tmp/src"
	git -C "$root" archive "$against" | tar -x -C "$tmp/src"
	build old "$tmp/src"
fi

supervisor() { # run dir, name: the supervisor's pid
	cut -d' ' -f1 "$1/agents/$2/supervisor.pid"
}

printf '%-5s %-28s %12s %12s %12s %s\n' agt flood 'VmHWM KiB' 'VmRSS KiB' '10 s later' 'agent after'
report() { # build, flood, pid, name
	local hwm rss later
	read -r hwm rss < <("$tmp/peers" rss "$3")
	sleep 10
	read -r _ later < <("$tmp/peers" rss "$3")
	printf '%-5s %-28s %12s %12s %12s %s\n' "$1" "$2" "$hwm" "$rss" "$later" "$("$agt" ps --format '{{.State}}' "$4")"
}
for b in "${builds[@]}"; do
	agt=$tmp/$b/agt run=$tmp/run-$b work=$tmp/work-$b
	mkdir -p "$work"
	export AGT_RUN_DIR=$run
	cd "$work"

	"$agt" spawn target -- sleep 600 >/dev/null
	pid=$(supervisor "$run" target)
	"$tmp/peers" ctl "$run/agents/target/ctl.sock" "$clients" "$mb" >&2
	report "$b" "$clients clients x $mb MB" "$pid" target

	printf '[agents.flood]\nstart = ["%s", "acp", "%s", "%s"]\nformat = "acp"\n' "$tmp/peers" "$requests" "$kb" >agt.toml
	"$agt" spawn --agent flood --prompt go flooder >/dev/null
	pid=$(supervisor "$run" flooder)
	for ((i = 0; i < 600; i++)); do
		grep -q 'flood/done' "$run/agents/flooder/events.ndjson" 2>/dev/null && break
		sleep 0.1
	done
	report "$b" "ACP $requests x $kb KiB" "$pid" flooder
	"$agt" stop --all -t 0 >/dev/null
done
