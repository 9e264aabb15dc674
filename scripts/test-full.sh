#!/usr/bin/env bash
# Everything scripts/test.sh leaves out, after it: the tests of 30 s or more (marked
# `#[ignore = "slow ..."]`: the sweeps, one of them as a job array on a real one-node Slurm cluster
# that scripts/slurm-local.sh runs while they do, the training commands, 200 concurrent
# episodes), then the builds without the engine's features: its unit tests as compiled for a CPU
# with AVX2 only (gemm's own AVX-512 products off too), and the whole suite without the CPU
# kernels (--no-default-features). About 35 minutes on 2 cores; run it before a release and when
# a change touches the sweeps, the trainer's commands, the servers or the engine's kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test.sh
scripts/slurm-local.sh start
trap 'scripts/slurm-local.sh stop' EXIT
echo "== the slow tests"
cargo test --release --workspace --test integration -- --ignored sweep:: train_cli:: serve_env::
echo "== the engine's unit tests as compiled for a CPU with AVX2 only (--no-default-features --features cpu-kernels)"
cargo test --release -p empathy-engine --lib --no-default-features --features cpu-kernels
echo "== the whole suite without the engine's CPU kernels (--no-default-features)"
cargo test --release --workspace --no-default-features
