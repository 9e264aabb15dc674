#!/usr/bin/env bash
# The scale table (results/perf/scale.md): benches/scale.rs at the Qwen3 shapes that fit this
# machine, one process per shape (its peak resident memory is its own). Not part of CI.
#   SHAPES="qwen3-0.6b qwen3-1.7b"   the shapes (default: those two)
#   UPDATES="1x2048 4x2048"          the update cases (BxT)
#   DECODES="8"                      the batched-decode cases (rows)
#   STEPS=1                          repetitions per case; the last is reported
#   OUT=target/scale.log             where the rows go (appended)
set -euo pipefail
cd "$(dirname "$0")/.."
SHAPES=${SHAPES:-qwen3-0.6b qwen3-1.7b}
UPDATES=${UPDATES:-1x2048 4x2048}
DECODES=${DECODES:-8}
STEPS=${STEPS:-1}
OUT=${OUT:-target/scale.log}
cargo bench --bench scale --no-run
cases=""
for u in $UPDATES; do cases="${cases:+$cases,}update:$u"; done
for d in $DECODES; do cases="${cases:+$cases,}decode:$d"; done
echo "# $(date -u +%FT%TZ) $(nproc) cores, STEPS=$STEPS, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
for shape in $SHAPES; do
  SHAPE=$shape CASES=$cases STEPS=$STEPS cargo bench --bench scale 2>&1 | grep -E '^\||parameters' | tee -a "$OUT"
done
