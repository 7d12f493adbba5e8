#!/usr/bin/env bash
# bench/run.sh: whole-command timings and memory of agt, side by side with baselines in one run.
# See docs/benchmarks.md for what each figure means and the targets.
#
# Usage: bench/run.sh [--quick] [--agents N] [--rounds N] [--idle SECS] [--no-pm2]
#
#   --quick       fewer runs: 3 rounds, 5 spawns, a 10 s idle window; about a minute
#   --agents N    agents (and pm2 processes) to list and watch; default 100
#   --rounds N    rounds of timings; default 10. Each round times every command of a group a
#                 few times in turn, so that a change of load hits all of them alike; a
#                 figure is the median of all its runs
#   --idle SECS   how long to watch the idle supervisors; default 30
#   --no-pm2      skip pm2 (needs npm and the npm registry)
#   --no-hyperfine  time with a shell loop even when hyperfine is there
#
# It builds agt, the floors bench/floor (ps) and bench/chain (spawn), bench/faults (the price of
# a page fault) and a hello-world into a temporary directory, makes its run directories there,
# and on exit, failure or Ctrl-C stops every agent it spawned, kills the pm2 daemon and the tmux
# servers it started, and removes the temporary directory. Progress goes to stderr, the table
# of figures to stdout.
set -euo pipefail
export LC_ALL=C

quick=0 agents=100 rounds='' idle_secs='' use_pm2=1 have_hyperfine=1
while (($#)); do
	case $1 in
	-q | --quick) quick=1 ;;
	--agents) agents=$2; shift ;;
	--rounds) rounds=$2; shift ;;
	--idle) idle_secs=$2; shift ;;
	--no-pm2) use_pm2=0 ;;
	--no-hyperfine) have_hyperfine=0 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
if ((quick)); then
	: "${rounds:=3}" "${idle_secs:=10}"
	ps_runs=4 pm2_runs=1 spawn_runs=5
else
	: "${rounds:=10}" "${idle_secs:=30}"
	ps_runs=5 pm2_runs=2 spawn_runs=20
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/agt-bench.XXXXXX")
bin=$tmp/bin run=$tmp/run spawnrun=$tmp/spawnrun
mkdir -p "$bin" "$tmp/work" "$tmp/out"
export PM2_HOME=$tmp/pm2home
tmux_sock=$tmp/tmux-warm
. "$root/bench/lib.sh"
bench_start

# --- tools -------------------------------------------------------------------------------------
need_apt jq jq || { echo "run.sh: jq is needed" >&2; exit 1; }
need_apt tmux tmux || { echo "run.sh: tmux is needed" >&2; exit 1; }
if ((have_hyperfine)) && ! need_apt hyperfine hyperfine; then
	have_hyperfine=0
	log "no hyperfine: timing with a shell loop"
fi

log "building agt, floor and hello into a temporary directory"
(cd "$root" && go build -tags urfave_cli_no_docs -o "$bin/agt" . && go build -o "$bin/floor" ./bench/floor &&
	go build -o "$bin/chain" ./bench/chain && go build -o "$bin/faults" ./bench/faults &&
	CGO_ENABLED=0 go build -o "$bin/hello" ./bench/hello)

if ((use_pm2)); then
	if ! install_pm2; then
		log "npm install pm2 failed: skipping pm2"
		use_pm2=0
	fi
fi

cd "$tmp/work" # agents run here: no repository, nothing else of the caller's
load_start=$(load)
log "start: $load_start"

# --- 3. spawn versus tmux new-session ------------------------------------------------------------
# Done first, before 100 agents and pm2 load the machine. Names are new each run; each agent and
# session is stopped right after it is timed, outside the timing.
log "spawn: $spawn_runs x agt spawn, tmux new-session (server running) and (cold server)"
tmux -S "$tmux_sock" new-session -d -s anchor sleep 3600 # keeps the server up for the warm case
: >"$tmp/out/spawn.agt" && : >"$tmp/out/spawn.tmux" && : >"$tmp/out/spawn.tmuxcold" && : >"$tmp/out/spawn.chain"
for ((i = 1; i <= spawn_runs; i++)); do
	AGT_RUN_DIR=$spawnrun ms "$bin/agt" spawn --json "s$i" -- sleep 60 >>"$tmp/out/spawn.agt"
	ms "$bin/chain" sleep 1 >>"$tmp/out/spawn.chain" # its sleeps end on their own
	ms tmux -S "$tmux_sock" new-session -d -s "t$i" sleep 60 >>"$tmp/out/spawn.tmux"
	ms tmux -S "$tmp/tmux-cold-$i" new-session -d -s "c$i" sleep 60 >>"$tmp/out/spawn.tmuxcold"
	AGT_RUN_DIR=$spawnrun "$bin/agt" stop -t 2s "s$i" >/dev/null
	tmux -S "$tmux_sock" kill-session -t "t$i"
	tmux -S "$tmp/tmux-cold-$i" kill-server
done
AGT_RUN_DIR=$spawnrun "$bin/agt" ps --json | jq -e -s --argjson n "$spawn_runs" \
	'length == $n and all(.state == "stopped")' >/dev/null ||
	{ echo "run.sh: a spawned agent did not start and stop as expected" >&2; exit 1; }
tmux -S "$tmux_sock" kill-server
spawn_agt=$(median <"$tmp/out/spawn.agt")
spawn_tmux=$(median <"$tmp/out/spawn.tmux")
spawn_tmuxcold=$(median <"$tmp/out/spawn.tmuxcold")
spawn_chain=$(median <"$tmp/out/spawn.chain")
load_spawn=$(load)
# What one page fault costs here: a Go start-up takes a few hundred.
fault_us=$("$bin/faults" | sed 's/.*(a fault) \([0-9.]*\) us.*/\1/')

# --- 1. agt ps --json versus the floor, over N live agents -------------------------------------
log "spawning $agents agents (sleep 600)"
export AGT_RUN_DIR=$run
t0=$EPOCHREALTIME
for ((i = 1; i <= agents; i++)); do
	"$bin/agt" spawn --json "$(printf 'a%03d' "$i")" -- sleep 600 >/dev/null
done
spawn_all=$(calc "$EPOCHREALTIME - $t0" %.1f)
log "spawned $agents in ${spawn_all}s"
sleep 2 # a plain command has no timer (it never turns waiting): its supervisor is idle once it runs
[[ $("$bin/agt" ps -q --state running | wc -l) -eq $agents ]] ||
	{ echo "run.sh: not all $agents agents run" >&2; exit 1; }
[[ $("$bin/floor" "$run" | wc -l) -eq $agents ]] ||
	{ echo "run.sh: floor did not list $agents agents" >&2; exit 1; }

sup_pids=()
for f in "$run"/agents/*/supervisor.pid; do
	read -r pid _ <"$f"
	sup_pids+=("$pid")
done

# --- 5. idle CPU and wakeups of the supervisors ----------------------------------------------
# Before the timings, so that nothing but the idle supervisors runs in this window.
cpu_ticks() { # utime+stime of every supervisor, in clock ticks (whole thread group)
	local p s t=0
	for p in "${sup_pids[@]}"; do
		s=$(cat "/proc/$p/stat")
		s=${s##*) }
		t=$((t + $(awk '{print $12 + $13}' <<<"$s")))
	done
	echo "$t"
}
ctx_switches() { # per supervisor: voluntary + involuntary context switches of all its threads
	local p
	for p in "${sup_pids[@]}"; do
		cat /proc/"$p"/task/*/status | awk '/^(non)?voluntary_ctxt_switches/ {n += $2} END {print n + 0}'
	done
}
log "idle: watching $agents silent supervisors for ${idle_secs}s"
hz=$(getconf CLK_TCK)
c0=$(cpu_ticks)
ctx_switches >"$tmp/out/ctx0"
sleep "$idle_secs"
c1=$(cpu_ticks)
ctx_switches >"$tmp/out/ctx1"
idle_cpu_ms=$(calc "($c1 - $c0) / $hz * 1000 / $agents * 60 / $idle_secs" %.3f)
paste "$tmp/out/ctx0" "$tmp/out/ctx1" | awk -v k="$idle_secs" '{print ($2 - $1) * 60 / k}' >"$tmp/out/wakeups"
wake_med=$(median <"$tmp/out/wakeups") wake_max=$(sort -g "$tmp/out/wakeups" | tail -1)
wake_busy=$(awk '$1 > 0' "$tmp/out/wakeups" | wc -l)
idle_ticks=$((c1 - c0))
# A supervisor watches its directory with inotify, and polls instead when it gets no inotify
# instance (fs.inotify.max_user_instances is per user, shared with everything else).
inotify=0
for p in "${sup_pids[@]}"; do
	if find "/proc/$p/fd" -lname 'anon_inode:inotify' 2>/dev/null | grep -q .; then inotify=$((inotify + 1)); fi
done
inotify_max=$(cat /proc/sys/fs/inotify/max_user_instances 2>/dev/null || echo '?')
load_idle=$(load)

# --- 4. memory of the supervisors --------------------------------------------------------------
for p in "${sup_pids[@]}"; do kb "$p" Pss; done >"$tmp/out/pss"
for p in "${sup_pids[@]}"; do kb "$p" Rss; done >"$tmp/out/rss"
pss_med=$(median <"$tmp/out/pss") pss_max=$(sort -n "$tmp/out/pss" | tail -1)
rss_med=$(median <"$tmp/out/rss") rss_max=$(sort -n "$tmp/out/rss" | tail -1)

# --- 1 and 6. agt ps against the floor and hello, in rounds ------------------------------------
: >"$tmp/out/times"
for ((r = 1; r <= rounds; r++)); do
	((r % 5 == 1)) && log "ps: round $r of $rounds ($(load))"
	time_set "$ps_runs" 2 agt-ps "$bin/agt ps --json" floor "$bin/floor $run" hello "$bin/hello"
done
ps_agt=$(fig agt-ps) ps_floor=$(fig floor) hello=$(fig hello)
cpu_agt=$(fig cpu:agt-ps) cpu_floor=$(fig cpu:floor)
load_ps=$(load)

# --- 2. pm2 jlist with N processes, and pm2's daemon memory ------------------------------------
pm2_ms=nan pm2_rss=nan pm2_pss=nan load_pm2=''
if ((use_pm2)); then
	log "pm2: starting $agents sleep 600 processes"
	jq -n --argjson n "$agents" '{apps: [range(1; $n + 1) | {name: "p\(.)", script: "sleep",
		args: "600", interpreter: "none", autorestart: false}]}' >"$tmp/out/apps.json"
	"$pm2" start "$tmp/out/apps.json" >/dev/null
	pm2_daemon=$(cat "$PM2_HOME/pm2.pid")
	for ((i = 0; i < 60; i++)); do
		[[ $("$pm2" jlist 2>/dev/null | jq '[.[] | select(.pm2_env.status == "online")] | length') -eq $agents ]] && break
		sleep 1
	done
	children=$(pgrep -P "$pm2_daemon" || true)
	[[ $(wc -w <<<"$children") -ge $agents ]] ||
		{ echo "run.sh: pm2 did not start $agents processes" >&2; exit 1; }
	# agt ps again, in turn with pm2 jlist, so that the ratio compares the same moments.
	for ((r = 1; r <= rounds; r++)); do
		((r % 5 == 1)) && log "pm2 jlist: round $r of $rounds ($(load))"
		time_set "$pm2_runs" 1 pm2-jlist "$pm2 jlist" agt-ps-2 "$bin/agt ps --json"
	done
	pm2_ms=$(fig pm2-jlist) ps_agt2=$(fig agt-ps-2)
	pm2_rss=$(kb "$pm2_daemon" Rss) pm2_pss=$(kb "$pm2_daemon" Pss)
	load_pm2=$(load)
	"$pm2" kill >/dev/null 2>&1 || true
fi

# --- stopping them all ------------------------------------------------------------------------
log "agt stop -t 2s --all over the $agents agents"
t0=$EPOCHREALTIME stop_rc=0
"$bin/agt" stop -t 2s --all >/dev/null 2>"$tmp/out/stop.err" || stop_rc=$?
stop_secs=$(calc "$EPOCHREALTIME - $t0" %.1f)
stop_late=$(grep -c "still running" "$tmp/out/stop.err" || true)
load_stop=$(load)

# --- the table ---------------------------------------------------------------------------------
yes_no() { awk "BEGIN {exit !($1)}" && echo met || echo MISSED; }
row() { printf '%-42s %-20s %-40s %s\n' "$@"; }
mb() { calc "$1 / 1024" %.2f; }
ratio=$(calc "$ps_agt / $ps_floor")
rev=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
echo "agt benchmarks, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | awk '{print $3}'), agt $rev, quick=$quick rounds=$rounds agents=$agents"
echo "tools: $(tmux -V)${pm2_version:+, pm2 $pm2_version, node $(node -v)}$( ((have_hyperfine)) && echo ", $(hyperfine --version)")"
echo "load (1, 5, 15 min): start ${load_start#load }; spawn ${load_spawn#load }; idle ${load_idle#load }; ps ${load_ps#load }${load_pm2:+; pm2 ${load_pm2#load }}; stop ${load_stop#load }"
row FIGURE VALUE "AGAINST (TARGET)" RESULT
row "static Go hello-world, start to exit" "$(calc "$hello") ms" "(reference, ~5 ms)" -
row "floor: read+decode $agents status.json" "$(calc "$ps_floor") ms" "(reference, ~9 ms)" -
row "agt ps --json, $agents agents" "$(calc "$ps_agt") ms" "${ratio}x floor (<= 1.2x)" "$(yes_no "$ratio <= 1.2")"
if ((have_hyperfine)); then
	row "  CPU (user+sys) of agt ps / floor" "$(calc "$cpu_agt") / $(calc "$cpu_floor") ms" "$(calc "$cpu_agt / $cpu_floor")x (reference)" -
fi
if ((use_pm2)); then
	speed=$(calc "$pm2_ms / $ps_agt2" %.1f)
	row "pm2 jlist, $agents processes" "$(calc "$pm2_ms" %.1f) ms" "agt ps $(calc "$ps_agt2") ms: ${speed}x faster (>= 25x)" "$(yes_no "$speed >= 25")"
fi
row "agt spawn NAME -- sleep 60" "$(calc "$spawn_agt") ms" "tmux new-session $(calc "$spawn_tmux") ms (agt <=)" "$(yes_no "$spawn_agt <= $spawn_tmux")"
row "tmux new-session -d, server not running" "$(calc "$spawn_tmuxcold") ms" "(reference, ~21 ms)" -
row "two bare Go start-ups in a row (chain)" "$(calc "$spawn_chain") ms" "(reference: a spawn's floor)" -
row "page fault, first touch of a fresh page" "$fault_us us" "(reference; a Go start-up takes 200-400)" -
row "supervisor PSS, median / max" "$(mb "$pss_med") / $(mb "$pss_max") MiB" "(<= 1.5 MiB each)" "$(yes_no "$pss_max <= 1536")"
row "supervisor RSS, median / max" "$(mb "$rss_med") / $(mb "$rss_max") MiB" "(reference)" -
if ((use_pm2)); then
	row "pm2 daemon RSS / PSS, $agents processes" "$(mb "$pm2_rss") / $(mb "$pm2_pss") MiB" "(reference, ~57 MB)" -
fi
row "idle supervisor CPU, per minute" "$idle_cpu_ms ms" "($idle_ticks ticks in ${idle_secs} s; ~0)" "$(yes_no "$idle_cpu_ms < 1")"
row "idle supervisor wakeups/min, median / max" "$(calc "$wake_med" %.0f) / $(calc "$wake_max" %.0f)" "($wake_busy of $agents woke; <= 60 each)" "$(yes_no "$wake_max <= 60")"
row "  supervisors holding an inotify instance" "$inotify of $agents" "(max_user_instances $inotify_max per user)" -
row "spawning $agents agents one after another" "${spawn_all} s" "(reference)" -
row "agt stop -t 2s --all, $agents agents" "${stop_secs} s, exit $stop_rc" "($stop_late reported still running)" -
