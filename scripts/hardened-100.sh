#!/usr/bin/env bash
# The headline run against the hardened reward: 100 GRPO steps of SmolLM2-135M-Instruct (the
# quickstart config, bf16 products), three seeds, then the held-out SAGE evaluation of base and
# trained (episodes kept). Resumable: a finished seed is skipped, an interrupted one continues
# from its last checkpoint. Results: results/runs/hardened-100/seed-N/ (training curves, config,
# eval/ with episodes), summarized by scripts/hardened-audit.py.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${EMPATHY_GYM:-target/release/empathy-gym}
[ -n "${EMPATHY_GYM:-}" ] || cargo build --release --quiet
out=results/runs/hardened-100
seeds=${SEEDS:-0 1 2}
first=${seeds%% *}
for seed in $seeds; do
  run=$out/seed-$seed
  if [ -f "$run/eval/empathy.csv" ]; then echo "seed $seed: done"; continue; fi
  if [ -f "$run/config.yaml" ]; then
    "$bin" train --resume "$run" --quiet
  else
    "$bin" train --config configs/quickstart.yaml --quiet --set results_dir=$out --set run=seed-$seed \
      --set seed=$seed --set grpo.steps=100 --set checkpoint.every=10 --set model.cpu_matmul=bf16
  fi
  # The base model's dialogues are the same for every seed (eval seed 0): evaluate it once.
  base=--no-base
  [ "$seed" = "$first" ] && base=
  "$bin" eval empathy --checkpoint trained=$run --out $run/eval $base
done
