#!/usr/bin/env bash
# Device side (scripts/gpu/README.md): `run.sh PHASE` with PHASE one of
#   tests       unpack the binaries, show the GPU, run the CUDA tests (tests/integration/cuda.rs)
#   quickstart  unpack the models, the embedder's CUDA test, train configs/quickstart.yaml on the
#               GPU in bf16 (STEPS=N steps, default its 16), `replay verify` its log and train 3
#               steps twice to compare the logs (REPRO=0 skips both), then the rest of the suite
#               (OTHER_TESTS=0 skips it: ~150 s of device time)
#   bench       benches/model.rs and benches/compare_torch/bench_torch.py side by side, f32 and bf16,
#               plus the machine's copy bandwidth and bf16 matmul ceiling (PyTorch);
#               DTYPES="bf16" or "f32" runs one dtype, CEILINGS=0 skips the ceilings;
#               ALLOCATORS="project candle" runs ours twice, the second time with candle's own
#               CUDA allocator settings (engine/src/gpu.rs); a name given twice runs twice, its
#               rounds appended to one log (e.g. "project candle candle project");
#               OPTIMIZERS="project candle_nn" likewise trains with the trainer's AdamW and with
#               candle_nn's (BENCH_OPTIMIZER); CASES=train runs the training cases alone
# Logs go to $OUT. Run from the repository root.
set -uo pipefail
S=/root/stage
G=/root/gpu
OUT=${OUT:-/tmp/out}
mkdir -p "$G" "$OUT" /work
# Binaries built on another machine find the catalog and models through their build path.
[ -e /work/main ] || ln -sfn "$PWD" /work/main
[ -e models ] || ln -sfn "$G/models" models
export EMPATHY_GYM_MODELS=$G/models
# cudarc loads cuBLAS, cuRAND and NVRTC at run time: the CUDA libraries of PyTorch's wheels.
NV_LIBS=$(python3 -c 'import nvidia, glob, os; print(":".join(sorted({os.path.dirname(p) for d in nvidia.__path__ for p in glob.glob(d + "/**/lib*.so*", recursive=True)})))' 2>/dev/null)
export LD_LIBRARY_PATH=${NV_LIBS}:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}
GGUF=$G/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf

unpack() { # a piece of the stream the calls staged (scripts/gpu/pack.sh), once
  [ -e "$G/.unpacked-$1" ] && return 0
  read -r _ off len < <(grep "^$1 " "$S/stream.txt")
  case "$1" in *.xz) flags=-xJ ;; *) flags=-x ;; esac
  # head stops reading early, so only tar's status counts (not pipefail's SIGPIPE of cat and tail)
  (set +o pipefail; cat "$S"/stream.part-* | tail -c +$((off + 1)) | head -c "$len" |
    tar $flags -C "$G") && touch "$G/.unpacked-$1"
}

sampler() { # GPU memory every 50 ms while the phase runs
  nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 50 >"$OUT/gpumem-$1.csv" &
  SAMPLER=$!
}

case "${1:?phase}" in
tests)
  unpack bins.tar.xz || exit 1
  nvidia-smi | tee "$OUT/nvidia-smi.txt"
  # The embedder's test needs all-MiniLM-L6-v2, staged last: the quickstart phase runs it.
  "$G"/bin/integration cuda:: --skip cuda::embedder_on_the_gpu --test-threads=1 2>&1 |
    tee "$OUT/cuda-tests.log"
  ;;
quickstart)
  unpack bins.tar.xz && unpack policy.tar && unpack appraiser.tar.xz || exit 1
  ls -la "$G"/models/*
  "$G"/bin/integration cuda::embedder_on_the_gpu 2>&1 | tee "$OUT/cuda-embedder-test.log"
  sampler quickstart
  start=$(date +%s)
  # STEPS=100: the quickstart's settings for as long as results/runs/smollm2-moderate-100-lr3e-4,
  # whose reward rose from 0.34 to 0.52 on a CPU.
  "$G"/bin/empathy-gym train --config configs/quickstart.yaml --set run=quickstart-gpu \
    --set results_dir=/root/results --set model.device=cuda --set model.dtype=bf16 \
    --set grpo.steps="${STEPS:-16}" 2>&1 |
    tail -n 60 | tee "$OUT/quickstart.log"
  echo "wall seconds: $(($(date +%s) - start))" | tee -a "$OUT/quickstart.log"
  kill $SAMPLER
  # the last checkpoint's adapters come back too, with the run's pointer to it, for
  # `eval empathy --checkpoint RUN_DIR` on a CPU
  last=$(ls -d /root/results/quickstart-gpu/checkpoints/step-* | sort -V | tail -n 1)
  tar -cf /root/quickstart-gpu.tar -C /root/results --exclude=checkpoints quickstart-gpu
  tar -rf /root/quickstart-gpu.tar -C /root/results quickstart-gpu/checkpoints/latest \
    "${last#/root/results/}"/{adapters.safetensors,state.json}
  # in pieces under the 16 MiB a returned file may hold (the adapters alone are ~19 MB in f32);
  # here: cat quickstart-gpu.tar.gz.part-* | tar -xz
  gzip -c /root/quickstart-gpu.tar | split -b 15M -d -a 1 - "$OUT/quickstart-gpu.tar.gz.part-"
  # Reproducible on the GPU: the log's appraisals re-run bit for bit there, and 3 steps trained
  # twice from the same seed write the same dialogues (REPRO=0 skips it).
  if [ "${REPRO:-1}" = 1 ]; then
    "$G"/bin/empathy-gym replay verify /root/results/quickstart-gpu/episodes.jsonl 2>&1 |
      tail -n 5 | tee "$OUT/replay-verify.log"
    for k in 1 2; do
      "$G"/bin/empathy-gym train --config configs/quickstart.yaml --set run=repro \
        --set results_dir=/root/repro-$k --set model.device=cuda --set model.dtype=bf16 \
        --set grpo.steps=3 >/dev/null 2>&1
    done
    md5sum /root/repro-*/repro/episodes.jsonl | tee "$OUT/repro.log"
  fi
  # The rest of the suite on this build (CPU paths; the CLI tests run the binary at its build path).
  [ "${OTHER_TESTS:-1}" = 1 ] || exit 0
  mkdir -p target-cuda/release && cp "$G"/bin/empathy-gym target-cuda/release/
  timeout 150 "$G"/bin/integration --skip cuda:: 2>&1 | tail -n 30 | tee "$OUT/other-tests.log"
  ;;
bench)
  unpack bins.tar.xz && unpack policy.tar || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
  [ "${CEILINGS:-1}" = 1 ] && python3 - <<'PY' 2>&1 | tee "$OUT/ceilings.log"
import torch, time
x = torch.empty(2**30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(20): y.copy_(x)
torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 20
print(f"device-to-device copy: {2 * x.numel() / dt / 1e12:.2f} TB/s (bytes read + written)")
a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda"); b = torch.randn_like(a)
for _ in range(3): a @ b
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(10): a @ b
torch.cuda.synchronize(); dt = (time.perf_counter() - t) / 10
print(f"bf16 matmul 8192^3: {2 * 8192**3 / dt / 1e12:.0f} TFLOP/s")
print(f"torch {torch.__version__}, allow_tf32 {torch.backends.cuda.matmul.allow_tf32}, "
      f"float32 matmul precision {torch.get_float32_matmul_precision()}")
PY
  for dtype in ${DTYPES:-bf16 f32}; do
    sampler "$dtype"
    for alloc in ${ALLOCATORS:-project}; do
      for opt in ${OPTIMIZERS:-project}; do
        suffix=$([ "$alloc" = project ] || echo "-$alloc")$([ "$opt" = project ] || echo "-$opt")
        log="$OUT/bench-ours-$dtype$suffix.log"
        echo "round: allocator $alloc, optimizer $opt, $(date +%T)" | tee -a "$log"
        BENCH_DEVICE=cuda BENCH_DTYPE=$dtype BENCH_BATCHES=1,16,64 BENCH_CUDA_ALLOCATOR=$alloc \
          BENCH_OPTIMIZER=$opt "$G"/bin/model-bench --bench $([ "${CASES:-}" = train ] && echo train) \
          2>&1 | grep -v '^\s*$' | grep -E '^\||^case|^phases|tok|error|Error|panic' | tee -a "$log"
      done
    done
    python3 benches/compare_torch/bench_torch.py --gguf "$GGUF" --device cuda --dtype $dtype \
      --batches 1,16,64 --threads 16 --cases "${CASES:-decode,train}" 2>&1 | grep -v Warning |
      tail -n 30 | tee "$OUT/bench-torch-$dtype.log"
    kill $SAMPLER
  done
  ;;
scale)
  # The scale table's GPU rows (results/perf/scale.md): benches/scale.rs in bf16 at the Qwen3
  # shapes, one process a shape, with the memory sampler (the bench's memory columns read the
  # CPU allocator; nvidia-smi's peak is the GPU's); then PyTorch + peft on the same shape and
  # cases (benches/compare_torch/scale_torch.py, TORCH=0 skips it), its memory from
  # torch.cuda's peak.
  unpack bins.tar.xz || exit 1
  SCALE_CASES=${CASES:-update:1x2048,update:4x2048,decode:1,decode:16,decode:64}
  for shape in ${SHAPES:-qwen3-0.6b qwen3-1.7b qwen3-4b qwen3-8b}; do
    sampler "scale-$shape"
    DEVICE=cuda DTYPE=bf16 SHAPE=$shape STEPS=${STEPS:-2} CASES=$SCALE_CASES \
      "$G"/bin/scale-bench --bench 2>&1 | grep -E '^\||parameters|rror|panic' | tee -a "$OUT/scale.log"
    kill $SAMPLER
    if [ "${TORCH:-1}" = 1 ]; then
      python3 benches/compare_torch/scale_torch.py --device cuda --dtype bf16 --shape "$shape" \
        --steps "${STEPS:-2}" --cases "$SCALE_CASES" 2>&1 |
        grep -E '^\||parameters|rror|Traceback' | tee -a "$OUT/scale.log"
    fi
  done
  ;;
*) echo "unknown phase $1" >&2; exit 2 ;;
esac
