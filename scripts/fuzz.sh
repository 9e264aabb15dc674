#!/usr/bin/env bash
# The fuzz campaign (benches/fuzz.rs; the targets are in tests/support/src/fuzz): every target for
# SECONDS_PER_TARGET seconds (default 600) or MAX_INPUTS inputs (default 1000000), whichever comes
# first, each in a process of its own. Inputs that panicked, aborted (an allocation over 2 GiB, a
# stack overflow), hung or broke a promise go to target/fuzz/crashes/ with a note beside each; the
# log goes to target/fuzz/fuzz.log.
#   TARGETS="gguf safetensors"  only these (default: all; `cargo bench --bench fuzz -- --list`)
#   JOBS=2                      two processes, each with half the targets and its own log
#                               (fuzz-1.log, fuzz-2.log), joined into fuzz.log at the end
#   SEED=N                      the random seed (default: the current time; the log names it)
#   OUT=DIR                     instead of target/fuzz
# Exits non-zero when a target found something or could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-target/fuzz}
SECONDS_PER_TARGET=${SECONDS_PER_TARGET:-600}
MAX_INPUTS=${MAX_INPUTS:-1000000}
JOBS=${JOBS:-1}
SEED=${SEED:-$(date +%s)}
mkdir -p "$OUT"
targets=$(echo ${TARGETS:-all} | tr ' ' ',')
args=(--seconds "$SECONDS_PER_TARGET" --max-inputs "$MAX_INPUTS" --seed "$SEED" --out "$OUT")
header="fuzz: targets $targets, $SECONDS_PER_TARGET s or $MAX_INPUTS inputs each, seed $SEED, $JOBS at a time"

if [ "$JOBS" -le 1 ]; then
  {
    echo "$header"
    cargo bench --bench fuzz -- --target "$targets" "${args[@]}" 2>&1
  } | tee "$OUT/fuzz.log"
  exit "${PIPESTATUS[0]}"
fi
echo "$header"

# Several processes: build once, then run the binary itself in each.
exe=$(cargo bench --bench fuzz --no-run --message-format=json 2>/dev/null |
  grep '"name":"fuzz"' | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4)
if [ -z "$exe" ]; then
  echo "fuzz: could not build benches/fuzz.rs" >&2
  exit 2
fi
if [ "$targets" = all ]; then
  names=$("$exe" --list)
else
  names=$(echo "$targets" | tr ',' '\n')
fi
declare -a groups
i=0
for n in $names; do
  g=$((i % JOBS))
  groups[g]="${groups[g]:+${groups[g]},}$n"
  i=$((i + 1))
done
pids=()
for g in "${!groups[@]}"; do
  log="$OUT/fuzz-$((g + 1)).log"
  ("$exe" --target "${groups[g]}" "${args[@]}" 2>&1 | tee "$log") &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do
  wait "$p" || status=1
done
{
  echo "$header"
  for g in "${!groups[@]}"; do
    cat "$OUT/fuzz-$((g + 1)).log"
  done
} >"$OUT/fuzz.log"
"$exe" --summary --target "$targets" --out "$OUT" | tee -a "$OUT/fuzz.log" || status=1
exit "$status"
