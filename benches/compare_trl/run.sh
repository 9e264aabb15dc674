#!/usr/bin/env bash
# The same single-turn GRPO job in empathy-gym and in TRL's GRPOTrainer, on this machine,
# alternating the two stacks for ROUNDS rounds; then results/perf/vs-trl.md and its reward plot.
# Not part of CI; run it on an otherwise idle machine. See README.md here.
# Usage: benches/compare_trl/run.sh [ROUNDS]   (default 2)
# Env: STEPS (default 12), THREADS (default: nproc), VENV (default target/torch-venv),
# OUT (default results/perf/vs-trl.md), LOGS (default target/compare-trl),
# DEVICE (cpu, default, or cuda: a CUDA build and PyTorch's CUDA wheel), DTYPE (f32, default, or bf16).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-2}
STEPS=${STEPS:-12}
THREADS=${THREADS:-$(nproc)}
VENV=${VENV:-target/torch-venv}
OUT=${OUT:-results/perf/vs-trl.md}
LOGS=${LOGS:-target/compare-trl}
scripts/fetch-models.sh
if ! "$VENV/bin/python" -c "import trl, peft, gguf" 2>/dev/null; then
  echo "== installing torch, transformers, peft, gguf and trl into $VENV from PyPI (several GB)"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet torch transformers peft gguf trl
fi
DEVICE=${DEVICE:-cpu}
DTYPE=${DTYPE:-f32}
FEATURES=()
[ "$DEVICE" = cuda ] && FEATURES=(--features cuda)
cargo build --release --quiet "${FEATURES[@]}"
"$VENV/bin/python" benches/compare_trl/harness.py --rounds "$ROUNDS" --steps "$STEPS" \
  --threads "$THREADS" --python "$VENV/bin/python" --logs "$LOGS" --device "$DEVICE" --dtype "$DTYPE"
# Written aside, then moved, so that the report's `git status` sees the checkout as it is.
"$VENV/bin/python" benches/compare_trl/report.py "$LOGS" "${OUT%.md}" >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
