#!/usr/bin/env bash
# The main job until the trainer lands: fetch the models if missing, build in release, and roll out
# every scripted baseline in configs/baselines/ over the test split at moderate difficulty.
# Logs go to results/baselines/<name>.jsonl; a summary table per baseline is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-models.sh
cargo build --release --quiet
mkdir -p results/baselines
for f in configs/baselines/*.yaml; do
  name=$(basename "$f" .yaml)
  echo "== baseline $name"
  "${CARGO_TARGET_DIR:-target}/release/empathy-gym" rollout --policy "script:$f" --split test --difficulty "${DIFFICULTY:-moderate}" \
    --seed "${SEED:-0}" --out "results/baselines/$name.jsonl" | tail -n 3
done
echo
echo "Logs: results/baselines/*.jsonl. Read one with: target/release/empathy-gym replay show results/baselines/listener.jsonl"
