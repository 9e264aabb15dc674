#!/usr/bin/env bash
# Device side: keep the chunk carried in .gpu-K/ (see scripts/gpu/README.md) in /root/stage.
set -euo pipefail
mkdir -p /root/stage
for d in .gpu-*; do cp "$d"/* /root/stage/; done
# the pieces of the stream (.gpu-1/stream.txt) whose bytes have all arrived
have=$(stat -c %s /root/stage/stream.part-* | awk '{ s += $1 } END { print s }')
while read -r piece off len; do
  if [ $((off + len)) -le "$have" ]; then echo "staged: $piece"; fi
done </root/stage/stream.txt
