# bench/lib.sh: what bench/run.sh and bench/scale.sh share. Sourced, never run.
#
# The caller sets $tmp (a fresh temporary directory it owns) and $bin (where it builds agt),
# then calls bench_start. From then on every process the script starts carries BENCH_TMP=$tmp
# in its environment, and on exit, failure or Ctrl-C bench_cleanup stops every agent of every
# run directory under $tmp, kills the pm2 daemon of $PM2_HOME and the tmux servers of the
# sockets $tmp/tmux-*, then SIGKILLs whatever still carries the mark, and removes $tmp.

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
load() { uptime | sed 's/.*load average: /load /'; }

# start_time PID: its start time, field 22 of /proc/PID/stat; fails when PID is gone.
start_time() {
	local stat f
	read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
	read -ra f <<<"${stat##*) }"
	echo "${f[19]}"
}
# same_proc PID START: PID is alive and is still the process that started at START.
same_proc() { [[ $(start_time "$1") == "$2" ]]; }

# median: the median of the numbers on stdin, one a line.
median() {
	sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
# calc EXPR [FMT]: awk arithmetic, printed with FMT (default %.2f).
calc() { awk "BEGIN {printf \"${2:-%.2f}\", $1}"; }
# ms CMD...: run CMD once with its stdout discarded; print its wall time in milliseconds.
ms() {
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null
	t1=$EPOCHREALTIME
	calc "($t1 - $t0) * 1000" %.3f
	echo
}
# kb PID FIELD: FIELD (Pss, Rss) of /proc/PID/smaps_rollup, in KiB.
kb() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/smaps_rollup"; }

# apt_install PACKAGE: install PACKAGE from Debian (as root).
apt_install() {
	[[ $(id -u) == 0 ]] || return 1
	log "installing $1"
	apt-get install -y -q "$1" >/dev/null 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$1" >/dev/null 2>&1; }
}
# need_apt CMD PACKAGE: install PACKAGE when CMD is missing.
need_apt() { command -v "$1" >/dev/null || apt_install "$2"; }

# install_pm2: pm2 from the npm registry into a cache directory (kept between runs), unless it
# is there already. Sets $pm2 (the command) and $pm2_version; fails when npm cannot install it.
install_pm2() {
	local dir=${XDG_CACHE_HOME:-$HOME/.cache}/agt-bench/pm2
	if [[ ! -x $dir/node_modules/.bin/pm2 ]]; then
		log "installing pm2 from npm into $dir"
		command -v npm >/dev/null || need_apt npm npm || return 1
		npm install --prefix "$dir" --no-audit --no-fund --loglevel=error pm2 >/dev/null 2>&1 || return 1
	fi
	pm2=$dir/node_modules/.bin/pm2
	pm2_version=$(jq -r .version "$dir/node_modules/pm2/package.json")
}

# marked_pids TEXT: the processes with the line TEXT in their environment (one grep over every
# /proc/PID/environ), but not this script's own process group.
marked_pids() {
	local own pid stat
	own=$(awk '{print $5}' "/proc/$$/stat")
	{ env -u BENCH_TMP grep -lsxzF -- "$1" /proc/[0-9]*/environ || true; } | cut -d/ -f3 |
		while read -r pid; do
			read -r stat 2>/dev/null <"/proc/$pid/stat" || continue
			read -r _ _ pgid _ <<<"${stat##*) }"
			[[ $pgid == "$own" ]] || echo "$pid"
		done
}
# agents_left DIR: how many processes of run directory DIR live (supervisors, agents and their
# children all carry AGT_RUN_DIR=DIR).
agents_left() { marked_pids "AGT_RUN_DIR=$1" | wc -l; }

# bench_start: mark every process started from now on, and clean up on exit, failure or Ctrl-C.
bench_start() {
	export BENCH_TMP=$tmp
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

bench_cleanup() {
	local rc=$? d pid pids
	trap - EXIT INT TERM
	set +e
	log "cleaning up"
	for d in "$tmp"/*/agents; do
		[[ -d $d ]] || continue
		d=${d%/agents}
		[[ $(agents_left "$d") -gt 0 ]] || continue
		AGT_RUN_DIR=$d timeout 120 "$bin/agt" stop -t 1s --all >/dev/null 2>&1
	done
	for d in "$tmp"/tmux-*; do
		[[ -S $d ]] && tmux -S "$d" kill-server 2>/dev/null
	done
	if [[ -n ${PM2_HOME:-} && -f $PM2_HOME/pm2.pid && -n ${pm2:-} ]]; then
		timeout 60 "$pm2" kill >/dev/null 2>&1
	fi
	# The net: whatever this run started and is still there.
	pids=$(marked_pids "BENCH_TMP=$tmp")
	if [[ -n $pids ]]; then
		log "killing $(wc -w <<<"$pids") processes left over"
		for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
	fi
	rm -rf "$tmp"
	exit "$rc"
}

# time_set RUNS WARMUP NAME CMD [NAME CMD]...: one round: time each command RUNS times and
# append "NAME MS" for each run to $tmp/out/times, and "cpu:NAME MS" (user+system of one run,
# averaged over the round) when hyperfine is there. Without hyperfine, a shell loop takes turns.
time_set() {
	local runs=$1 warm=$2
	shift 2
	if ((have_hyperfine)); then
		local args=() json=$tmp/out/h.json
		while (($#)); do args+=(-n "$1" "$2"); shift 2; done
		hyperfine -N --style none --warmup "$warm" --runs "$runs" --export-json "$json" "${args[@]}" >&2
		jq -r '.results[] | (.command as $c | .times[] | "\($c) \(. * 1000)"),
			"cpu:\(.command) \((.user + .system) * 1000)"' "$json" >>"$tmp/out/times"
		return
	fi
	local cmds=("$@") i j
	for ((i = 0; i < warm + runs; i++)); do
		for ((j = 0; j < ${#cmds[@]}; j += 2)); do
			if ((i < warm)); then
				${cmds[j + 1]} >/dev/null
			else
				echo "${cmds[j]} $(ms ${cmds[j + 1]})" >>"$tmp/out/times"
			fi
		done
	done
}
# fig NAME: the median of NAME's timings over all rounds, in ms.
fig() { awk -v n="$1" '$1 == n {print $2}' "$tmp/out/times" | median; }
