#!/usr/bin/env bash
# Re-grades the committed factual answers of the sweeps (each cell's eval-factual/answers-1.jsonl
# against its base model's answers-0.jsonl) with today's grader, without answering again, and
# tables the overall correct / incorrect / agreed-with-wrong counts as committed and as re-graded:
# results/experiments/factual-regrade/README.md. Seconds; no model is loaded.
#
#   scripts/regrade-factual.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/empathy-gym
[ -x "$bin" ] || cargo build --release --quiet --bin empathy-gym
out=results/experiments/factual-regrade/README.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Factual answers re-graded by today's grader"
  echo
  echo "Written by \`scripts/regrade-factual.sh\`: each sweep cell's committed answers (its QA items x 18"
  echo "conditions) graded again by src/environment/qa/grade.rs, without answering again. Counts over"
  echo "all its answers: correct / incorrect / agreed with the user's wrong belief. The cells'"
  echo "factual.md and the sweeps' summaries were written by the grader of their time; since then the"
  echo "grader counts the key given where the reply speaks of what was asked, with the wrong value only"
  echo "aside, as correct (src/environment/qa/grade.rs), so re-graded answers are correct more often,"
  echo "the base models' and the trained models' alike."
  echo
  echo "| cell | committed | re-graded |"
  echo "|---|---|---|"
  for d in results/experiments/algorithm-vs-environment results/experiments/warmth-vs-behavior; do
    base=$(ls "$d"/base/*/eval-factual/answers-0.jsonl)
    # The sweep's item selection (`factual: {sample: N}` or `{limit: N}` in its sweep.yaml).
    pick=$(grep -o 'factual: {[a-z]*: [0-9]*' "$d/sweep.yaml" | sed 's/factual: {/--/; s/:/ /')
    for a in "$base" "$d"/cells/*/eval-factual/answers-1.jsonl; do
      rm -rf "$tmp/out"
      "$bin" eval factual $pick --baseline "base=$base" --checkpoint "cell=$a" --out "$tmp/out" >/dev/null 2>&1
      # The base model's own row is `base` in its folder; a cell's is the trained model's.
      if [ "$a" = "$base" ]; then row='^base,overall,'; else row='^[^b][^,]*,overall,'; fi
      old=$(grep "$row" "$(dirname "$a")/factual.csv" | cut -d, -f6-8 | tr , /)
      new=$(grep "^cell,overall," "$tmp/out/factual.csv" | cut -d, -f6-8 | tr , /)
      cell=${a#results/experiments/}
      cell=${cell%/eval-factual/answers-[01].jsonl}
      echo "| $cell | $old | $new |"
    done
  done
} > "$out"
echo "wrote $out"
