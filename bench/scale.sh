#!/usr/bin/env bash
# bench/scale.sh: agt at 10, 100, 500 and 1000 agents, side by side with pm2 and tmux at the same
# counts in one run, an event-throughput test, and plots. See docs/benchmarks.md ("At scale").
#
# Usage: bench/scale.sh [--quick] [--counts LIST] [--idle SECS] [--runs N] [--events-rate N]
#                       [--events-for SECS] [--plots DIR] [--no-pm2] [--no-tmux] [--no-events]
#
#   --quick            counts 10,50, a 10 s idle window, 5 runs, a 10 s flood; about a minute
#   --counts LIST      agent counts, comma-separated, run in this order; default 10,100,500,1000
#   --idle SECS        how long to watch idle supervisors for wakeups; default 30
#   --runs N           timed runs of each listing and of the single stop; default 10
#   --events-rate N    events a second the flooding agent writes; default 10000
#   --events-for SECS  how long it floods; default 60
#   --plots DIR        where scale-time.png, scale-memory.png and scale-data.tsv go; default
#                      docs/ of this tree, with --quick a directory under ${TMPDIR:-/tmp}
#   --no-pm2, --no-tmux, --no-events  leave a part out
#
# Per count N, one after the other: N agents (`agt spawn aNNNN -- sleep 900`, each spawn timed),
# their idle wakeups and memory, `agt ps --json` against bench/floor, single stops while they run,
# `agt stop -t 2s --all` and what it leaves; N more agents whose supervisors get SIGKILL, then
# `agt reap`; pm2 with N processes; tmux with N sessions. Each part ends with nothing of it left
# running (agt stop --all and agt reap are cut at 15 minutes: exit 124). On exit, failure or Ctrl-C everything this run started is stopped and its temporary
# directory removed (bench/lib.sh). Progress goes to stderr, the tables (Markdown) to stdout.
set -euo pipefail
export LC_ALL=C

quick=0 counts='' idle_secs='' runs='' ev_rate=10000 ev_secs='' plots=''
use_pm2=1 use_tmux=1 use_events=1 have_hyperfine=1
while (($#)); do
	case $1 in
	-q | --quick) quick=1 ;;
	--counts) counts=$2; shift ;;
	--idle) idle_secs=$2; shift ;;
	--runs) runs=$2; shift ;;
	--events-rate) ev_rate=$2; shift ;;
	--events-for) ev_secs=$2; shift ;;
	--plots) plots=$2; shift ;;
	--no-pm2) use_pm2=0 ;;
	--no-tmux) use_tmux=0 ;;
	--no-events) use_events=0 ;;
	-h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ((quick)); then
	: "${counts:=10,50}" "${idle_secs:=10}" "${runs:=5}" "${ev_secs:=10}" "${plots:=${TMPDIR:-/tmp}/agt-scale-quick}"
else
	: "${counts:=10,100,500,1000}" "${idle_secs:=30}" "${runs:=10}" "${ev_secs:=60}" "${plots:=$root/docs}"
fi
IFS=, read -ra counts <<<"$counts"
grace=2                          # agt stop -t, pm2's kill_timeout
stop_runs=$((runs < 5 ? runs : 5)) # single stops per count
pm2_runs=$((runs < 5 ? runs : 5))  # pm2 jlist takes seconds at 1000

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agt-scale.XXXXXX")
bin=$tmp/bin out=$tmp/out
mkdir -p "$bin" "$out" "$tmp/work"
export PM2_HOME=$tmp/pm2home
. "$root/bench/lib.sh"
bench_start
data=$out/data.tsv # N KEY VALUE, N = 0 for what belongs to no count
put() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$data"; }
# load_now: the load average and how many tasks are runnable right now (it lags by minutes).
load_now() { echo "$(load), runnable $(cut -d' ' -f4 /proc/loadavg | cut -d/ -f1)"; }

# --- tools, limits -----------------------------------------------------------------------------
need_apt jq jq || { echo "scale.sh: jq is needed" >&2; exit 1; }
((use_tmux)) && { need_apt tmux tmux || { log "no tmux: leaving it out"; use_tmux=0; }; }
need_apt hyperfine hyperfine || { have_hyperfine=0; log "no hyperfine: timing with a shell loop"; }
if ((use_pm2)) && ! install_pm2; then
	log "npm could not install pm2: leaving it out"
	use_pm2=0
fi
# A Python with matplotlib for the plots: this one, Debian's, or one installed now.
py=''
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import matplotlib' 2>/dev/null; then py=$p; break; fi
done
if [[ -z $py ]] && apt_install python3-matplotlib; then py=/usr/bin/python3; fi
if [[ -z $py ]] && timeout 120 python3 -m pip install -q --user matplotlib >/dev/null 2>&1; then py=python3; fi
[[ -n $py ]] || log "no matplotlib (neither Debian's python3-matplotlib nor pip): tables only, no plots"

log "building agt, floor and flood"
(cd "$root" && go build -tags urfave_cli_no_docs -o "$bin/agt" . && go build -o "$bin/floor" ./bench/floor &&
	go build -o "$bin/flood" ./bench/flood)
agt=$bin/agt

# Every agent is two processes and a supervisor has ~8 threads: each counts against pid_max and
# threads-max. Descriptors: raise the soft limit to the hard one, for agt stop --all and reap.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tasks_now() { { ls -d /proc/[0-9]*/task/[0-9]* 2>/dev/null || true; } | wc -l; }
pid_max=$(cat /proc/sys/kernel/pid_max) threads_max=$(cat /proc/sys/kernel/threads-max)
pty_max=$(cat /proc/sys/kernel/pty/max)
inotify_max=$(cat /proc/sys/fs/inotify/max_user_instances)
inotify_used=$({ find /proc/[0-9]*/fd -lname 'anon_inode:inotify' 2>/dev/null || true; } | wc -l)
put 0 limits "ulimit -n $(ulimit -n), ulimit -u $(ulimit -u), pid_max $pid_max, threads-max $threads_max, pty max $pty_max, inotify max_user_instances $inotify_max ($inotify_used in use at the start, all users)"
log "limits: $(awk -F'\t' '$2 == "limits" {print $3}' "$data")"
# fits N: whether N agents (up to 10 tasks each, with room for the rest of the machine) fit.
fits() {
	local need=$(($1 * 10 + 2000)) have
	have=$(($(((pid_max < threads_max)) && echo "$pid_max" || echo "$threads_max") - $(tasks_now)))
	((need <= have)) && return 0
	put "$1" skipped "needs ~$need tasks, $have free (pid_max $pid_max, threads-max $threads_max)"
	log "skipping $1 agents: needs ~$need tasks, only $have free"
	return 1
}

cd "$tmp/work" # agents run here: no repository, nothing of the caller's
rev=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
put 0 meta "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(go version | awk '{print $3}'), agt $rev"
put 0 tools "$(tmux -V 2>/dev/null)${pm2_version:+, pm2 $pm2_version, node $(node -v)}$( ((have_hyperfine)) && echo ", $(hyperfine --version)")"
put 0 command "bench/scale.sh $( ((quick)) && echo '--quick ')--counts $(IFS=,; echo "${counts[*]}") --idle $idle_secs --runs $runs --events-rate $ev_rate --events-for $ev_secs"
put 0 load_start "$(load_now)"
log "start: $(load)"

# stamps FILE: "T0 T1" lines (EPOCHREALTIME before and after) -> milliseconds, one a line.
stamps() { awk '{printf "%.3f\n", ($2 - $1) * 1000}' "$1"; }
# med_lines FROM TO: the median of lines FROM..TO of stdin.
med_lines() { sed -n "$1,$2p" | median; }
# secs_since T0: seconds from EPOCHREALTIME T0 to now.
secs_since() { calc "$EPOCHREALTIME - $1" %.2f; }
# pids_of RUNDIR FILE: the first field (the PID) of every agents/*/FILE.
pids_of() { cat "$1"/agents/*/"$2" 2>/dev/null | awk '{print $1}'; }
# spawn_agents RUNDIR N PREFIX STAMPS: spawn N sleep agents, one after another, stamping each
# spawn; prints how many started. A failed spawn (a limit) ends the loop: its error is logged.
spawn_agents() {
	local i t0 n=0
	for ((i = 1; i <= $2; i++)); do
		t0=$EPOCHREALTIME
		if ! "$agt" --run-dir "$1" spawn --json "$(printf '%s%04d' "$3" "$i")" -- sleep 900 >/dev/null 2>"$out/spawn.err"; then
			log "spawn $i of $2 failed: $(head -c 300 "$out/spawn.err")"
			break
		fi
		echo "$t0 $EPOCHREALTIME" >>"$4"
		n=$i
		((i % 100 == 0)) && log "  $i spawned ($(load))"
	done
	echo "$n"
}
# clear_rundir RUNDIR: SIGKILL what is left of it and delete it, so the next part starts clean.
clear_rundir() {
	local pids
	pids=$(marked_pids "AGT_RUN_DIR=$1")
	[[ -z $pids ]] || kill -KILL $pids 2>/dev/null || true
	rm -rf "$1"
}

# --- events: one agent flooding, agt tail -f attached ------------------------------------------
if ((use_events)); then
	log "events: one agent writing $ev_rate events/s for ${ev_secs}s, agt tail -f attached"
	ev=$tmp/ev
	put 0 load_events "$(load_now)"
	"$agt" --run-dir "$ev" spawn --json flood -- "$bin/flood" write -rate "$ev_rate" -for "${ev_secs}s" \
		-go "$out/flood.go" -report "$out/flood-write.json" >/dev/null
	timeout $((ev_secs + 180)) "$agt" --run-dir "$ev" tail -f --json flood |
		"$bin/flood" read -go "$out/flood.go" -report "$out/flood-read.json" ||
		log "the tail or the reader failed"
	for f in write read; do
		[[ -s $out/flood-$f.json ]] && jq -r 'to_entries[] | "0\tev_\(.key)\t\(.value)"' "$out/flood-$f.json" >>"$data"
	done
	put 0 ev_log_bytes "$(cat "$ev"/agents/flood/events.ndjson* 2>/dev/null | wc -c)"
	clear_rundir "$ev"
fi

pm2_online() { "$pm2" jlist 2>/dev/null | jq '[.[] | select(.pm2_env.status == "online")] | length'; }

# --- per count ---------------------------------------------------------------------------------
for n in "${counts[@]}"; do
	fits "$n" || continue
	log "=== $n agents ($(load))"
	put "$n" load "$(load_now)"

	# agt: spawn N, each timed.
	run=$tmp/run-$n
	t0=$EPOCHREALTIME
	k=$(spawn_agents "$run" "$n" a "$out/spawn-$n")
	put "$n" agt_spawn_all_s "$(secs_since "$t0")"
	put "$n" agt_spawned "$k"
	((k == n)) || put "$n" limited "only $k of $n agents spawned: $(head -c 200 "$out/spawn.err")"
	stamps "$out/spawn-$n" >"$out/spawn-$n.ms"
	put "$n" agt_spawn_first_ms "$(med_lines 1 10 <"$out/spawn-$n.ms")"
	put "$n" agt_spawn_last_ms "$(med_lines $((k > 10 ? k - 9 : 1)) "$k" <"$out/spawn-$n.ms")"
	log "spawned $k in $(secs_since "$t0")s"
	sleep 2 # a plain command has no timer: its supervisor is idle once the agent runs
	running=$("$agt" --run-dir "$run" ps -q --state running | wc -l)
	((running == k)) || log "only $running of $k agents run"
	mapfile -t sup < <(pids_of "$run" supervisor.pid)

	# Idle: context switches of every thread of every supervisor over a window, per minute.
	# One grep reads them all (a supervisor has ~8 threads); a supervisor gone counts nothing.
	status=() fds=() rollups=()
	for p in "${sup[@]}"; do
		status+=(/proc/"$p"/task/*/status) fds+=("/proc/$p/fd") rollups+=("/proc/$p/smaps_rollup")
	done
	ctx_sum() {
		{ grep -H ctxt_switches "${status[@]}" 2>/dev/null || true; } |
			awk -F'[/:\t ]+' '{n[$3] += $NF} END {for (p in n) print p, n[p]}' | sort
	}
	log "idle: watching $k supervisors for ${idle_secs}s"
	ctx_sum >"$out/ctx0"
	sleep "$idle_secs"
	ctx_sum >"$out/ctx1"
	join "$out/ctx0" "$out/ctx1" | awk -v k="$idle_secs" '{print ($3 - $2) * 60 / k}' >"$out/wake"
	put "$n" agt_wake_med "$(median <"$out/wake")"
	put "$n" agt_wake_max "$(sort -g "$out/wake" | tail -1)"
	put "$n" agt_wake_busy "$(awk '$1 > 0' "$out/wake" | wc -l)"
	put "$n" agt_inotify "$({ find "${fds[@]}" -lname 'anon_inode:inotify' -printf '%h\n' 2>/dev/null || true; } | sort -u | wc -l)"
	put "$n" agt_threads_med "$(for p in "${sup[@]}"; do ls "/proc/$p/task" 2>/dev/null | wc -l; done | median)"

	# Memory of the supervisors.
	{ grep -h '^Pss:' "${rollups[@]}" 2>/dev/null || true; } | awk '{print $2}' >"$out/pss"
	{ grep -h '^Rss:' "${rollups[@]}" 2>/dev/null || true; } | awk '{print $2}' >"$out/rss"
	put "$n" agt_pss_med_kib "$(median <"$out/pss")"
	put "$n" agt_pss_mean_kib "$(awk '{s += $1} END {printf "%.0f", s / NR}' "$out/pss")"
	put "$n" agt_pss_sum_kib "$(awk '{s += $1} END {print s}' "$out/pss")"
	put "$n" agt_rss_med_kib "$(median <"$out/rss")"

	# agt ps --json against the floor, in turn.
	log "ps: $runs runs each of agt ps --json and floor"
	time_set "$runs" 2 "agt-ps-$n" "$agt --run-dir $run ps --json" "floor-$n" "$bin/floor $run"
	put "$n" agt_ps_ms "$(fig "agt-ps-$n")"
	put "$n" floor_ms "$(fig "floor-$n")"

	# One stop of a TERM-respecting agent while the N others run.
	log "single stops: $stop_runs x (spawn one more, time agt stop -t ${grace}s of it)"
	: >"$out/stop1-$n"
	for ((i = 1; i <= stop_runs; i++)); do
		"$agt" --run-dir "$run" spawn --json "solo$i" -- sleep 900 >/dev/null
		t0=$EPOCHREALTIME
		"$agt" --run-dir "$run" stop -t "${grace}s" "solo$i" >/dev/null
		echo "$t0 $EPOCHREALTIME" >>"$out/stop1-$n"
	done
	stamps "$out/stop1-$n" >"$out/stop1-$n.ms"
	put "$n" agt_stop1_ms "$(median <"$out/stop1-$n.ms")"
	put "$n" agt_stop1_max_ms "$(sort -g "$out/stop1-$n.ms" | tail -1)"

	# agt stop --all: its time, its exit, and whether each agent ended within the grace + 5 s.
	log "agt stop -t ${grace}s --all over $k agents"
	put "$n" load_stop "$(load_now)"
	t0=$EPOCHREALTIME rc=0
	timeout 900 "$agt" --run-dir "$run" stop -t "${grace}s" --all >/dev/null 2>"$out/stopall-$n.err" || rc=$?
	put "$n" agt_stopall_s "$(secs_since "$t0")"
	put "$n" agt_stopall_rc "$rc"
	put "$n" agt_stopall_left "$(agents_left "$run")"
	sleep "$(calc "$t0 + $grace + 5 - $EPOCHREALTIME" %.2f | sed 's/^-.*/0/')"
	put "$n" agt_stopall_left_later "$(agents_left "$run")"
	put "$n" agt_stopall_errors "$(grep -c . "$out/stopall-$n.err" || true)"
	put "$n" agt_stopall_late "$(grep -c 'still run' "$out/stopall-$n.err" || true)"
	[[ -s $out/stopall-$n.err ]] && log "stop --all said: $(head -c 300 "$out/stopall-$n.err")"
	# Each agent's end, from its status: the time of its last state change, against the start.
	"$agt" --run-dir "$run" ps --json >"$out/ps-after-$n.json"
	jq -r -s --argjson t0 "$t0" 'def secs: (sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601) +
			((capture("(?<f>\\.[0-9]+)Z$") | "0" + .f | tonumber) // 0);
		map(select(.name | startswith("a"))) |
		"\(map(select(.state != "stopped")) | length)\t\(map(.since | secs - $t0) | max)"' \
		"$out/ps-after-$n.json" | {
		read -r notstopped slowest
		put "$n" agt_stopall_not_stopped "$notstopped"
		put "$n" agt_stopall_slowest_s "$(calc "$slowest")"
	}
	clear_rundir "$run"

	# agt reap over N lost agents: spawn N, SIGKILL every supervisor, time agt reap.
	log "reap: spawning $k agents, then SIGKILL to every supervisor"
	rrun=$tmp/reap-$n
	kr=$(spawn_agents "$rrun" "$k" r "$out/spawn-reap-$n")
	while read -r p s _; do
		same_proc "$p" "$s" && kill -KILL "$p"
	done < <(cat "$rrun"/agents/*/supervisor.pid)
	for ((i = 0; i < 50; i++)); do
		alive=0
		for p in $(pids_of "$rrun" supervisor.pid); do [[ -d /proc/$p ]] && alive=$((alive + 1)); done
		((alive == 0)) && break
		sleep 0.1
	done
	put "$n" agt_reap_lost "$kr"
	t0=$EPOCHREALTIME rc=0
	timeout 900 "$agt" --run-dir "$rrun" reap --json >"$out/reap-$n.json" 2>"$out/reap-$n.err" || rc=$?
	put "$n" agt_reap_s "$(secs_since "$t0")"
	put "$n" agt_reap_rc "$rc"
	put "$n" agt_reap_reaped "$(grep -c . "$out/reap-$n.json" || true)"
	put "$n" agt_reap_left "$(agents_left "$rrun")"
	[[ -s $out/reap-$n.err ]] && log "reap said: $(head -c 300 "$out/reap-$n.err")"
	clear_rundir "$rrun"

	# pm2: N processes from one ecosystem file; one more started alone; jlist; stop all.
	if ((use_pm2)); then
		log "pm2: starting $k sleep 900 processes"
		put "$n" load_pm2 "$(load_now)"
		"$pm2" ping >/dev/null # the daemon starts here, outside the timings
		jq -n --argjson n "$k" '{apps: [range(1; $n + 1) | {name: "p\(.)", script: "sleep",
			args: "900", interpreter: "none", autorestart: false, kill_timeout: '$((grace * 1000))'}]}' >"$out/apps.json"
		t0=$EPOCHREALTIME
		"$pm2" start "$out/apps.json" >/dev/null
		put "$n" pm2_start_s "$(secs_since "$t0")"
		for ((i = 0; i < 120 + n / 5; i++)); do
			[[ $(pm2_online) -ge $k ]] && break
			sleep 1
		done
		put "$n" pm2_online_s "$(secs_since "$t0")"
		put "$n" pm2_online "$(pm2_online)"
		t0=$EPOCHREALTIME
		"$pm2" start sleep --name extra --interpreter none --no-autorestart -- 900 >/dev/null
		put "$n" pm2_start1_ms "$(calc "($EPOCHREALTIME - $t0) * 1000")"
		log "pm2: $pm2_runs runs of pm2 jlist"
		time_set "$pm2_runs" 1 "pm2-jlist-$n" "$pm2 jlist"
		put "$n" pm2_jlist_ms "$(fig "pm2-jlist-$n")"
		daemon=$(cat "$PM2_HOME/pm2.pid")
		put "$n" pm2_pss_kib "$(kb "$daemon" Pss)"
		put "$n" pm2_rss_kib "$(kb "$daemon" Rss)"
		children=$(pgrep -P "$daemon" | tr '\n' ' ')
		t0=$EPOCHREALTIME rc=0
		"$pm2" stop all >/dev/null 2>&1 || rc=$?
		put "$n" pm2_stopall_s "$(secs_since "$t0")"
		put "$n" pm2_stopall_rc "$rc"
		left=0
		for p in $children; do [[ -d /proc/$p ]] && left=$((left + 1)); done
		put "$n" pm2_stopall_left "$left"
		"$pm2" kill >/dev/null 2>&1 || true
	fi

	# tmux: one server (an anchor session starts it), N sessions each timed, ls, kill-server.
	if ((use_tmux)); then
		log "tmux: $k sessions"
		put "$n" load_tmux "$(load_now)"
		sock=$tmp/tmux-$n
		tmux -S "$sock" new-session -d -s anchor sleep 900
		: >"$out/tmux-$n"
		for ((i = 1; i <= k; i++)); do
			t0=$EPOCHREALTIME
			tmux -S "$sock" new-session -d -s "t$i" sleep 900
			echo "$t0 $EPOCHREALTIME" >>"$out/tmux-$n"
		done
		stamps "$out/tmux-$n" >"$out/tmux-$n.ms"
		put "$n" tmux_new_first_ms "$(med_lines 1 10 <"$out/tmux-$n.ms")"
		put "$n" tmux_new_all_s "$(awk '{s += $1} END {printf "%.2f", s / 1000}' "$out/tmux-$n.ms")"
		put "$n" tmux_new_last_ms "$(med_lines $((k > 10 ? k - 9 : 1)) "$k" <"$out/tmux-$n.ms")"
		time_set "$runs" 2 "tmux-ls-$n" "tmux -S $sock ls"
		put "$n" tmux_ls_ms "$(fig "tmux-ls-$n")"
		server=$(tmux -S "$sock" display-message -p '#{pid}')
		put "$n" tmux_pss_kib "$(kb "$server" Pss)"
		put "$n" tmux_rss_kib "$(kb "$server" Rss)"
		panes=$(tmux -S "$sock" list-panes -a -F '#{pane_pid}' | tr '\n' ' ')
		t0=$EPOCHREALTIME
		tmux -S "$sock" kill-server
		put "$n" tmux_kill_ms "$(calc "($EPOCHREALTIME - $t0) * 1000")"
		for ((i = 0; i < (grace + 5) * 10; i++)); do
			left=0
			for p in $panes; do [[ -d /proc/$p ]] && left=$((left + 1)); done
			((left == 0)) && break
			sleep 0.1
		done
		put "$n" tmux_gone_s "$(secs_since "$t0")"
		put "$n" tmux_left "$left"
	fi
	log "done with $n ($(load))"
done
put 0 load_end "$(load_now)"

# --- the tables and the plots ------------------------------------------------------------------
mkdir -p "$plots"
cp "$data" "$plots/scale-data.tsv"
report=(python3)
[[ -n $py ]] && report=("$py")
"${report[@]}" "$root/bench/scale_report.py" "$data" "$( [[ -n $py ]] && echo "$plots")"
log "data and plots in $plots"
