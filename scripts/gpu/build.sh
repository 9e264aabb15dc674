#!/usr/bin/env bash
# Build the CUDA binaries on a machine WITHOUT a GPU, for a GPU machine whose driver supports CUDA
# DRIVER_CUDA (default 13.0, driver 580): what results/perf/gpu.md was measured with.
#   scripts/gpu/build.sh            -> target-cuda/ (tests, the binary, benches/model.rs)
# 1. nvcc, cuBLAS, cuRAND and NVRTC from PyPI (the CUDA 13 line) into /opt/cudalibs.
# 2. A stub libcuda.so (soname libcuda.so.1) with the driver symbols cudarc links against; the real
#    driver library is loaded on the GPU machine at run time.
# 3. candle-kernels' PTX is written by nvcc 13.5 as ISA 9.5; a CUDA 13.0 driver JIT-compiles at
#    most 9.0, so nvcc runs through scripts/gpu/nvcc-ptx-isa.sh, which lowers the .version line
#    of the PTX it writes (the kernels use nothing newer).
set -euo pipefail
cd "$(dirname "$0")/../.."
DRIVER_CUDA=${DRIVER_CUDA:-13.0}
PTX_ISA=${PTX_ISA:-9.0}
LIBS=/opt/cudalibs
python3 -m pip install -q nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-cccl
[ -d $LIBS/nvidia/cu13/lib ] || python3 -m pip install -q --target $LIBS nvidia-cublas nvidia-curand nvidia-cuda-nvrtc
CUDA_HOME=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))')
export CUDA_HOME REAL_NVCC=$CUDA_HOME/bin/nvcc PATH=$CUDA_HOME/bin:$PATH PTX_ISA
export NVCC=$PWD/scripts/gpu/nvcc-ptx-isa.sh
export CPATH=$CUDA_HOME/cccl:$CUDA_HOME/include CUDA_COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
export CUDARC_CUDA_VERSION=$(echo "$DRIVER_CUDA" | awk -F. '{printf "%d%02d0", $1, $2}')
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target-cuda}
LINK=$CARGO_TARGET_DIR/cudalink
mkdir -p "$LINK"
for l in libnvrtc.so.13 libcurand.so.10 libcublasLt.so.13 libcublas.so.13; do
  ln -sf $LIBS/nvidia/cu13/lib/$l "$LINK/${l%%.so*}.so"
done
ln -sf "$CUDA_HOME/lib/libcudart.so.13" "$LINK/libcudart.so"
export LIBRARY_PATH=$(realpath "$LINK")
if [ ! -f "$LINK/libcuda.so" ]; then
  # The libraries compile without libcuda; only linking a binary needs it.
  cargo build --release --features cuda --lib
  nm "$CARGO_TARGET_DIR"/release/deps/libcudarc-*.rlib 2>/dev/null |
    awk '$1=="U" && $2 ~ /^cu[A-Z]/ {print "void " $2 "(void) {}"}' | sort -u >"$LINK/stub.c"
  gcc -shared -fPIC -o "$LINK/libcuda.so" -Wl,-soname,libcuda.so.1 "$LINK/stub.c"
fi
cargo test --release --features cuda --no-run
cargo bench --features cuda --bench model --no-run
cargo bench --features cuda --bench scale --no-run
echo "built: $CARGO_TARGET_DIR/release/empathy-gym; next: scripts/gpu/pack.sh (scripts/gpu/README.md)"
