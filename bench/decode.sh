#!/usr/bin/env bash
# Decoder throughput, side by side on the same files: jq -c extracting four fields, a bare
# gjson extractor of the same fields, agt's decoder alone (one core), and agt end to end
# (agent stdout → events on disk through a live supervisor).
#   bench/decode.sh [MB]     default 200 MB per stream
set -euo pipefail
cd "$(dirname "$0")/.."
mb=${1:-200}
tmp=$(mktemp -d)
run="$tmp/run"
cleanup() {
  AGT_RUN_DIR="$run" "$tmp/agt" stop --all >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }

go build -o "$tmp/agt" .
go build -o "$tmp/decode" ./bench/decode
go build -o "$tmp/extract" ./bench/extract

# Streams made by repeating the real captures (every fixture of the agent, in turn).
make_stream() { # FORMAT OUT
  python3 - "$1" "$2" "$mb" <<'PY'
import glob, sys
fmt, out, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = b"".join(open(p, "rb").read() for p in sorted(glob.glob(f"stream/testdata/{fmt}/*.jsonl")))
with open(out, "wb") as f:
    for _ in range(mb * 1024 * 1024 // len(data) + 1):
        f.write(data)
PY
}
make_stream claude "$tmp/claude.jsonl"
make_stream codex "$tmp/codex.jsonl"

mbps() { # BYTES SECONDS
  awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f MB/s", b / 1e6 / s }'
}
timed() { # COMMAND... → seconds
  local t0 t1
  t0=$(date +%s.%N); "$@" >/dev/null; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

echo "machine: $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
for fmt in claude codex; do
  file="$tmp/$fmt.jsonl"
  bytes=$(stat -c %s "$file")
  case $fmt in
    claude) jqf='{type, subtype, session_id, uuid}'; fields='type,subtype,session_id,uuid' ;;
    codex)  jqf='{type, thread_id, id: .item.id, usage}'; fields='type,thread_id,item.id,usage' ;;
  esac
  echo "== $fmt: $((bytes / 1000000)) MB"
  echo "jq -c:            $(mbps "$bytes" "$(timed jq -c "$jqf" "$file")")"
  echo "gjson extractor:  $("$tmp/extract" "$fields" "$file")"
  echo "agt decoder:      $("$tmp/decode" "$fmt" "$file")"
  # End to end: a kind whose agent is cat, through a live supervisor.
  mkdir -p "$tmp/$fmt-dir"
  printf 'log_max_size = "8GiB"\n[agents.replay]\nstart = ["cat", "%s"]\nformat = "%s"\n' "$file" "$fmt" > "$tmp/$fmt-dir/agt.toml"
  secs=$(cd "$tmp/$fmt-dir" && AGT_RUN_DIR="$run" timed sh -c "'$tmp/agt' spawn --workspace none --agent replay live-$fmt && '$tmp/agt' wait live-$fmt")
  echo "agt live:         $(mbps "$bytes" "$secs") (spawn, then wait: $((bytes / 1000000)) MB through a supervisor to events.ndjson)"
done
