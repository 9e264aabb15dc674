#!/usr/bin/env bash
# Clippy on every target (the benches too), then everything scripts/test.sh leaves out, after it:
# the tests of 20 s or more (marked `#[ignore = "slow ..."]`: the sweeps, one of them as a job
# array on a real one-node Slurm cluster that scripts/slurm-local.sh runs while they do, the
# training commands, 200 concurrent episodes, every profile at every difficulty, the red-team
# suite's margins, the frozen honest dialogues), the pages in headless Chromium
# (`#[ignore = "needs Chromium ..."]`: `replay html` and the rating page; Debian's chromium is
# installed with apt-get when it is missing), the cross-check of the engine's forward against
# candle-transformers (feature `reference`), then the builds without the engine's features: its
# unit tests as compiled for a CPU with AVX2 only (gemm's own AVX-512 products off too), and the
# whole suite without the CPU kernels (--no-default-features). About 45 minutes on 2 cores; run it
# before a release and when a change touches the sweeps, the trainer's commands, the servers, the
# pages, the catalog, the reward (data/, src/environment/sim/) or the engine's kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== clippy on every target, the benches included (warnings are errors)"
cargo clippy --release --workspace --all-targets -- -D warnings
scripts/test.sh
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing Debian's chromium for the page tests ..."
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
scripts/slurm-local.sh start
trap 'scripts/slurm-local.sh stop' EXIT
echo "== the slow tests and the pages"
cargo test --release --workspace --test integration -- --ignored \
  sweep:: train_cli:: serve_env:: replay_html:: rate_page:: conformance:: redteam:: honest::
echo "== the engine's forward against candle-transformers' quantized llama (--features reference)"
cargo test --release --features reference --test integration model::real::reference
echo "== the engine's unit tests as compiled for a CPU with AVX2 only (--no-default-features --features cpu-kernels)"
cargo test --release -p empathy-engine --lib --no-default-features --features cpu-kernels
echo "== the whole suite without the engine's CPU kernels (--no-default-features)"
cargo test --release --workspace --no-default-features
