#!/usr/bin/env bash
# nvcc, then the PTX it wrote declared as ISA $PTX_ISA (scripts/gpu/build.sh): candle-kernels'
# build script (cudaforge) calls $NVCC with `--ptx --output-directory DIR FILE.cu`, others with
# `-o FILE.ptx`; a driver older than the nvcc JIT-compiles only older PTX ISAs.
set -euo pipefail
"$REAL_NVCC" "$@"
outs=()
dir=""
ptx=0
prev=""
for a in "$@"; do
  case "$prev" in
  -o | --output-file) outs+=("$a") ;;
  -odir | --output-directory) dir=$a ;;
  esac
  case "$a" in --ptx | -ptx) ptx=1 ;; esac
  prev=$a
done
if [ "$ptx" = 1 ] && [ ${#outs[@]} = 0 ]; then
  for a in "$@"; do
    case "$a" in *.cu) outs+=("${dir:-.}/$(basename "${a%.cu}").ptx") ;; esac
  done
fi
for out in "${outs[@]}"; do
  case "$out" in
  *.ptx) sed -i "0,/^\.version [0-9.]*\$/s//.version $PTX_ISA/" "$out" ;;
  esac
done
