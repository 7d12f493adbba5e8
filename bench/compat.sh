#!/usr/bin/env bash
# bench/compat.sh: the lane for the next releases of the agent CLIs. It installs each CLI's
# newest release from npm (or the versions given) into a scratch prefix, runs the real-agent
# scripts (testdata/real, against the loopback mock model) with them, and writes what works into
# the "Newest releases" table of docs/compat.md, between its compat:newest markers.
#
# Usage: bench/compat.sh [--keep] [--run REGEXP] [PACKAGE@VERSION...]
#
#   --keep        keep the scratch prefix (its path is printed) instead of removing it
#   --run REGEXP  run only the scripts whose names match (go test's -run, under TestRealAgents/)
#   PACKAGE@VERSION  try these releases instead of the newest of each CLI agt was tested with
#
# The CLIs and their tested releases come from config/tested.go (config.Tested). A release that
# passes every script of its CLI can be pinned: change config.Tested, the pins in .ci/run and the
# tested table in docs/compat.md together (go test ./config checks that they agree). Needs npm
# and Node 22 on PATH, Go, and root for the tests' network namespace (else they run on the
# loopback of the machine). Takes a few minutes; progress goes to stderr.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."

keep=0 run='' wanted=()
while (($#)); do
	case $1 in
	--keep) keep=1 ;;
	--run) run=$2; shift ;;
	-h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "compat.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
	*) wanted+=("$1") ;;
	esac
	shift
done
for tool in npm node go; do
	command -v "$tool" >/dev/null || { echo "compat.sh: $tool is not on PATH" >&2; exit 1; }
done

# program package tested-version, one CLI a line, from the one table in the code.
table=$(sed -n 's/^[[:space:]]*{"\([^"]*\)", "\([^"]*\)", "\([^"]*\)"},.*/\1 \2 \3/p' config/tested.go)
[ -n "$table" ] || { echo "compat.sh: no tested CLIs found in config/tested.go" >&2; exit 1; }

prefix=$(mktemp -d "${TMPDIR:-/tmp}/agt-compat.XXXXXX")
log=$prefix/test.log
cleanup() { if [ "$keep" = 1 ]; then echo "compat.sh: kept $prefix" >&2; else rm -rf "$prefix"; fi; }
trap cleanup EXIT

installs=()
while read -r program pkg tested; do
	version=''
	for w in "${wanted[@]}"; do
		[ "${w%@*}" = "$pkg" ] && version=${w##*@}
	done
	if [ -z "$version" ]; then
		version=$(npm view "$pkg" version 2>/dev/null) || { echo "compat.sh: npm view $pkg failed" >&2; exit 1; }
	fi
	installs+=("$pkg@$version")
done <<<"$table"
echo "compat.sh: installing ${installs[*]} into $prefix" >&2
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "${installs[@]}" >/dev/null

pattern='TestRealAgents'
[ -n "$run" ] && pattern="TestRealAgents/$run"
echo "compat.sh: running the real-agent scripts (node $(node --version))" >&2
status=0
AGT_REAL_CLIS=$prefix/node_modules/.bin go test -race -count=1 -timeout 30m -run "$pattern" -v . >"$log" 2>&1 || status=$?

# The scripts' results: "--- PASS: TestRealAgents/NAME", also when run in a namespace.
results=$(grep -a -o -- '--- \(PASS\|FAIL\|SKIP\): TestRealAgents/[A-Za-z0-9_]*' "$log" | sed 's/--- \(.*\): TestRealAgents\/\(.*\)/\2 \1/' | sort -u)
[ -n "$results" ] || { echo "compat.sh: no script ran (go test exited $status); the end of its log:" >&2; tail -20 "$log" >&2; exit 1; }

# script_program NAME: the CLI a script runs, by its name.
script_program() {
	case $1 in
	claude_acp_*) echo claude-agent-acp ;;
	gemini_acp_* | gemini_*) echo gemini ;;
	opencode_acp_* | opencode_*) echo opencode ;;
	claude_*) echo claude ;;
	codex_*) echo codex ;;
	*) echo other ;;
	esac
}

rows=''
i=0
while read -r program pkg tested; do
	version=${installs[$i]##*@}
	i=$((i + 1))
	pass=0 fails=() skips=0
	while read -r name result; do
		[ "$(script_program "$name")" = "$program" ] || continue
		case $result in
		PASS) pass=$((pass + 1)) ;;
		FAIL) fails+=("$name") ;;
		SKIP) skips=$((skips + 1)) ;;
		esac
	done <<<"$results"
	works="all $pass scripts pass"
	if [ ${#fails[@]} -gt 0 ]; then
		works="$pass pass; fail: ${fails[*]}"
	fi
	[ "$skips" -gt 0 ] && works="$works; $skips skipped"
	[ "$pass" -eq 0 ] && [ ${#fails[@]} -eq 0 ] && works="no script ran"
	rows+="| $program | \`$pkg\` | $version | $tested | $works |"$'\n'
done <<<"$table"

section="<!-- compat:newest -->
Measured $(date -u +%Y-%m-%d) on Node $(node --version | sed 's/^v//') at $(git rev-parse --short HEAD 2>/dev/null || echo '?') by \`bench/compat.sh\`.

| program | package | newest | tested | what works |
| --- | --- | --- | --- | --- |
${rows}<!-- /compat:newest -->"
doc=docs/compat.md
if grep -q '<!-- compat:newest -->' "$doc"; then
	awk -v section="$section" '
		/<!-- compat:newest -->/ { print section; skip = 1; next }
		/<!-- \/compat:newest -->/ { skip = 0; next }
		!skip { print }
	' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
else
	printf '\n## Newest releases\n\n%s\n' "$section" >>"$doc"
fi
printf '%s\n' "$section"
echo "compat.sh: wrote the table into $doc" >&2
