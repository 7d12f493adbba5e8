#!/usr/bin/env bash
# bench/sandbox.sh: what a sandbox (spawn --sandbox, bubblewrap) costs: the time of a spawn
# that runs true to its end, with and without a sandbox, and of the empty sandbox spawn tries
# first; and the memory of bubblewrap's two processes beside a sandboxed agent. See
# docs/sandbox.md for the figures.
#
# Usage: bench/sandbox.sh [--runs N]     (default 40 spawns of each kind, taking turns)
#
# It builds agt into a temporary directory, runs its agents there, and on exit, failure or
# Ctrl-C stops them and removes the directory (bench/lib.sh). Progress goes to stderr, the
# figures to stdout.
set -euo pipefail
export LC_ALL=C

runs=40
while (($#)); do
	case $1 in
	--runs) runs=$2; shift ;;
	-h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "sandbox.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agt-bench.XXXXXX")
bin=$tmp/bin
mkdir -p "$bin" "$tmp/out" "$tmp/home" "$tmp/work"
. "$root/bench/lib.sh"
bench_start
command -v bwrap >/dev/null || { echo "sandbox.sh: needs bubblewrap (apt-get install bubblewrap)" >&2; exit 1; }

log "building agt"
(cd "$root" && go build -tags urfave_cli_no_docs -o "$bin/agt" .)
export AGT_RUN_DIR=$tmp/run HOME=$tmp/home AGT_RESTART=never
cd "$tmp/work"

# The empty sandbox spawn tries before it writes anything (sandbox.Probe's argv).
bwrap_probe() {
	env --ignore-signal=INT,QUIT,TERM,TSTP bwrap --unshare-all --unshare-user --cap-drop ALL --die-with-parent \
		--share-net --ro-bind / / --dev /dev --proc /proc --perms 1777 --tmpfs /tmp \
		-- env --default-signal=INT,QUIT,TERM,TSTP true
}

log "$runs spawns of true to its end, each way, taking turns; load: $(load)"
for ((i = 0; i < runs; i++)); do
	echo "plain $(ms "$bin/agt" spawn --wait --rm plain -- true)" >>"$tmp/out/times"
	echo "sandbox $(ms "$bin/agt" spawn --wait --rm --sandbox boxed -- true)" >>"$tmp/out/times"
	echo "probe $(ms bwrap_probe)" >>"$tmp/out/times"
done 2>/dev/null

fig() { awk -v n="$1" '$1 == n {print $2}' "$tmp/out/times" | median; }
plain=$(fig plain) sandboxed=$(fig sandbox)

# Memory: a sandboxed agent that sleeps, and the processes between it and its supervisor.
"$bin/agt" spawn --sandbox idle -- sleep 600 >/dev/null
outer=$(jq -r .pid "$AGT_RUN_DIR/agents/idle/status.json")
for _ in $(seq 100); do
	init=$(cat "/proc/$outer/task/$outer/children" 2>/dev/null | awk '{print $1}')
	[[ -n $init ]] && break
	sleep 0.05
done
outer_mem="$(kb "$outer" Pss) / $(kb "$outer" Rss)"
init_mem="$(kb "$init" Pss) / $(kb "$init" Rss)"
"$bin/agt" stop idle >/dev/null

echo "spawn --wait of true, median of $runs ($(load))"
printf '  %-36s %8.1f ms\n' "without a sandbox" "$plain" "with --sandbox" "$sandboxed"
printf '  %-36s %8.1f ms\n' "the difference" "$(calc "$sandboxed - $plain" %.1f)"
printf '  %-36s %8.1f ms\n' "the empty sandbox spawn tries first" "$(fig probe)"
echo "memory of bubblewrap beside a sandboxed agent, Pss / Rss"
printf '  %-36s %12s KiB\n' "bwrap outside (the agent's leader)" "$outer_mem" "bwrap inside (the sandbox's init)" "$init_mem"
