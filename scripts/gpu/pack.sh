#!/usr/bin/env bash
# Here: pack the CUDA build (target-cuda, see scripts/gpu/README.md) and the models into one byte
# stream cut into .gpu-K/ folders, one per device call, each at most PART_MIB so that it and the
# working tree that travels with every call fit the call's 64 MiB (default: 62 MiB less that
# tree). The stream is, in order: the binaries (tar.xz, one big dictionary so the four binaries'
# shared code is stored once), the policy GGUF (tar), the MiniLM appraiser (tar.xz);
# .gpu-1/stream.txt gives each piece's offset and length, so the device unpacks the binaries and
# the GGUF (tests, bench) before the last folders, which only the quickstart needs, have arrived
# (scripts/gpu/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
T=${CARGO_TARGET_DIR:-target-cuda}/release
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- | tail -n 1 | cut -f1)
PART_MIB=${PART_MIB:-$(((62 * 1048576 - tree) / 1048576))}
P=/tmp/gpu-pack
newest() { ls -t $1 2>/dev/null | grep -v '\.d$' | head -n 1; }
rm -rf .gpu-* $P && mkdir -p $P/bin
cp "$T/empathy-gym" $P/bin/
cp "$(newest "$T/deps/integration-*")" $P/bin/integration
cp "$(newest "$T/deps/model-*")" $P/bin/model-bench
cp "$(newest "$T/deps/scale-*")" $P/bin/scale-bench
# not stripped: symbols make the backtraces of a failure on the device readable
tar -cf - -C $P bin | xz -6 --lzma2=preset=6,dict=256MiB -T1 >$P/bins.tar.xz
tar -cf $P/policy.tar models/smollm2-135m-instruct
tar -cf - models/all-minilm-l6-v2 | xz -1 -T2 >$P/appraiser.tar.xz
offset=0
: >$P/stream.txt
for piece in bins.tar.xz policy.tar appraiser.tar.xz; do
  size=$(stat -c %s $P/$piece)
  echo "$piece $offset $size" >>$P/stream.txt
  offset=$((offset + size))
done
cat $P/bins.tar.xz $P/policy.tar $P/appraiser.tar.xz | split -b ${PART_MIB}M -d -a 1 - $P/stream.part-
k=1
for p in $P/stream.part-*; do
  mkdir -p .gpu-$k && mv "$p" .gpu-$k/
  k=$((k + 1))
done
cp $P/stream.txt .gpu-1/
cat $P/stream.txt
echo "parts of $PART_MIB MiB (the working tree that travels too: $((tree / 1048576)) MiB)"
du -sh .gpu-*
