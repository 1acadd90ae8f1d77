#!/usr/bin/env bash
# Runs the Python examples on 2 ranks, as a user would, and checks what they print:
# the digits CNN must exceed 95% held-out accuracy and save its checkpoint; the
# synthetic benchmark must report a throughput.
set -euo pipefail
cd "$(dirname "$0")/../.."
# The checkpoint goes to a folder of this run's own: two runs at once write different files.
out_dir=$(mktemp -d)
trap 'rm -rf "$out_dir"' EXIT

digits=$(timeout 300 scripts/mpirun.sh -np 2 ${PYTHON:-.venv/bin/python} examples/pytorch_digits.py \
  --checkpoint "$out_dir/digits.pt")
echo "$digits"
accuracy=$(echo "$digits" | sed -n 's/^final held-out accuracy \([0-9.]*\)%.*/\1/p')
if [ -z "$accuracy" ] || ! awk -v a="$accuracy" 'BEGIN { exit !(a > 95) }'; then
  echo "FAIL: digits example reached '${accuracy:-no}'% held-out accuracy; expected > 95%" >&2
  exit 1
fi
[ -s "$out_dir/digits.pt" ] || { echo "FAIL: digits example saved no checkpoint" >&2; exit 1; }

benchmark=$(timeout 300 scripts/mpirun.sh -np 2 ${PYTHON:-.venv/bin/python} examples/pytorch_synthetic_benchmark.py \
  --model resnet18 --image-size 64 --batch-size 8 --num-warmup-batches 1 \
  --num-batches-per-iter 2 --num-iters 2)
echo "$benchmark"
echo "$benchmark" | grep -q "^Total img/sec on 2 CPU(s): [0-9]" \
  || { echo "FAIL: the synthetic benchmark printed no total throughput" >&2; exit 1; }
echo "examples: 2 passed, 0 failed"
