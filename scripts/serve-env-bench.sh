#!/usr/bin/env bash
# Benchmark of `empathy-gym serve-env` over loopback (results/perf/serve-env.md): episodes per
# second and p50/p99 step latency for 200 episodes, driven by scripts/serve-env-load.py.
#   "new-text": replies that quote the user, so every reply is new text the appraiser must embed
#               (the very first pass also embeds what the users of each profile can say);
#   "cached":   the fixed scripts, every reply already embedded (the server's own overhead).
# Usage: scripts/serve-env-bench.sh [CONCURRENCY...]   (default: 200 16)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/empathy-gym}
OUT=$(mktemp -d)
"$BIN" serve-env --port 0 --out "$OUT/episodes.jsonl" > "$OUT/stdout" 2> "$OUT/stderr" &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT
for _ in $(seq 100); do grep -q listening "$OUT/stdout" 2>/dev/null && break; sleep 0.2; done
URL=$(grep -o 'http://[^ ]*' "$OUT/stdout" | head -1)
[ $# -gt 0 ] || set -- 200 16
seed=1000
first=1
for c in "$@"; do
  for pass in new-text new-text cached; do
    flags=""
    [ "$pass" = cached ] && flags="--fixed-replies"
    label=$pass
    [ "$first" = 1 ] && label="cold (first contact with the profiles), new-text"
    first=0
    printf '%s, concurrency %s: ' "$label" "$c"
    python3 scripts/serve-env-load.py --url "$URL" --episodes 200 --concurrency "$c" --seed "$seed" $flags
    seed=$((seed + 1000))
  done
done
kill -TERM $PID; wait $PID || true
cat "$OUT/stdout"
