#!/usr/bin/env bash
# Side by side with PyTorch + transformers + peft on this machine: the cases of
# `cargo bench --bench model` and benches/compare_torch/bench_torch.py, alternating the two stacks
# for ROUNDS rounds, then results/perf/vs-torch.md with the ratios and the load during each run.
# Not part of CI. Usage: benches/compare_torch/run.sh [ROUNDS]   (default 2)
# Env: VENV (default target/torch-venv), THREADS (default: nproc), OUT (default results/perf/vs-torch.md),
# MATMUL (f32, default; bf16: ours with model.cpu_matmul: bf16, PyTorch under autocast bf16),
# ISA (native, default; avx2: both stacks as on a CPU with AVX2 only, on any AVX-512 machine: ours
# built without its feature avx512, PyTorch with ATen, MKL and oneDNN capped at AVX2),
# CASES (decode,train, default; train: the training cases alone, as scripts/gpu/run.sh's CASES).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-2}
VENV=${VENV:-target/torch-venv}
THREADS=${THREADS:-$(nproc)}
OUT=${OUT:-results/perf/vs-torch.md}
MATMUL=${MATMUL:-f32}
case "$MATMUL" in
  f32) TORCH_MIXED=() ;;
  bf16) TORCH_MIXED=(--autocast bf16) ;;
  *) echo "MATMUL=$MATMUL: expected f32 or bf16" >&2; exit 2 ;;
esac
ISA=${ISA:-native}
CASES=${CASES:-decode,train}
case "$CASES" in
  decode,train) FILTER=() ;;
  train) FILTER=(train) ;;
  *) echo "CASES=$CASES: expected decode,train or train" >&2; exit 2 ;;
esac
case "$ISA" in
  native) BUILD=() ;;
  avx2)
    # A target directory of its own, so that neither build undoes the other's gemm features.
    BUILD=(--no-default-features --features cpu-kernels)
    export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/avx2}
    export ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ;;
  *) echo "ISA=$ISA: expected native or avx2" >&2; exit 2 ;;
esac
LOGS=target/compare-torch
scripts/fetch-models.sh
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV with torch, transformers, peft and gguf from PyPI (several GB)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet torch transformers peft gguf
fi
cargo bench --bench model "${BUILD[@]}" --no-run --quiet
mkdir -p "$LOGS"
GGUF=models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r: empathy-gym (candle)"
  cat /proc/loadavg >"$LOGS/ours-$r.load"
  BENCH_CPU_MATMUL=$MATMUL RAYON_NUM_THREADS=$THREADS cargo bench --bench model "${BUILD[@]}" -- "${FILTER[@]}" 2>/dev/null | grep '^|' >"$LOGS/ours-$r.md"
  cat /proc/loadavg >>"$LOGS/ours-$r.load"
  echo "== round $r: PyTorch"
  cat /proc/loadavg >"$LOGS/torch-$r.load"
  "$VENV/bin/python" benches/compare_torch/bench_torch.py --gguf "$GGUF" --threads "$THREADS" \
    --cases "$CASES" "${TORCH_MIXED[@]}" 2>/dev/null | grep -E '^\||^torch' >"$LOGS/torch-$r.md"
  cat /proc/loadavg >>"$LOGS/torch-$r.load"
done
"$VENV/bin/python" benches/compare_torch/report.py "$LOGS" "$ROUNDS" "$THREADS" "$MATMUL" "$ISA" "$CASES" \
  >"$OUT.tmp"
# Written aside, then moved: redirecting into $OUT would empty it before report.py asks git
# whether the checkout has uncommitted changes, and label every run -dirty.
mv "$OUT.tmp" "$OUT"
cat "$OUT"
