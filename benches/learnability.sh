#!/usr/bin/env bash
# Does a config learn? Trains CONFIG for several seeds as a sweep (resumable: run the
# same command again after an interruption), evaluates every final policy and the base model on
# held-out test profiles under the SAGE protocol (always the fixed moderate user, whatever the
# training difficulty), and prints per seed the training reward of the first and last quarter of
# steps and its rise, the held-out score before and after, and their mean +- std across seeds.
#
#   benches/learnability.sh [CONFIG] [OUT_DIR]
#   env: SEEDS="0 1 2"  DIFFICULTIES="moderate" (training difficulty; e.g. "moderate hard auto"
#        compares them at equal budget)  SAGE_LIMIT=12 (test profiles; 0 = all 37)
#        SETS="grpo.steps=16 ..." (overrides for every cell)  JOBS=1
#        EMPATHY_GYM=path/to/binary (a copy, so that builds during the run do not replace it)
#
# Not a test: 3 seeds of the quickstart take about 45-60 minutes on 2 CPU cores.
set -euo pipefail
cd "$(dirname "$0")/.."
config=${1:-configs/quickstart.yaml}
out=${2:-results/learnability/$(basename "$config" .yaml)}
seeds=${SEEDS:-0 1 2}
difficulties=${DIFFICULTIES:-moderate}
limit=${SAGE_LIMIT:-12}
bin=${EMPATHY_GYM:-target/release/empathy-gym}
[ -n "${EMPATHY_GYM:-}" ] || cargo build --release --quiet
mkdir -p "$out"
{
  echo "# Written by benches/learnability.sh: $config, seeds $seeds."
  echo "name: $(basename "$out")"
  echo "dir: $out"
  echo "base: $config"
  if [ -n "${SETS:-}" ]; then
    echo "set:"
    for kv in $SETS; do echo "  ${kv%%=*}: ${kv#*=}"; done
  fi
  echo "axes:"
  echo "  env.difficulty: [$(echo $difficulties | sed 's/ /, /g')]"
  echo "seeds: [$(echo $seeds | sed 's/ /, /g')]"
  if [ "$limit" -gt 0 ]; then
    echo "eval:"
    echo "  empathy: {split: test, limit: $limit, seed: 0}"
  else
    echo "eval:"
    echo "  empathy: {split: test, seed: 0}"
  fi
} > "$out/learnability.yaml"
"$bin" sweep run "$out/learnability.yaml" --jobs "${JOBS:-1}"
"$bin" sweep collect "$out" > /dev/null
python3 benches/learnability.py "$out" | tee "$out/learnability.md"
