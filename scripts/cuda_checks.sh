#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run: the CPU-against-CUDA tests, then the core
# benchmark on the device (POAM in float64 with first batches up to 200,000 samples and in
# float32; eager, padded and CUDA-graph updates side by side; then each adaptive-size, memory
# and multi-task method).
#   bash scripts/cuda_checks.sh OUT_DIR      (results and logs under OUT_DIR)
# Each step has its own time limit so that one slow step leaves the others their turn.
set -u
out=${1:?usage: bash scripts/cuda_checks.sh OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
bench() {  # name, seconds, then poam-ros bench core arguments
    local name=$1 limit=$2; shift 2
    timeout "$limit" python3 -m poam_ros bench core --device cuda --out "$out/$name" "$@" \
        >"$out/$name.log" 2>&1
    echo "== $name (exit $?)"; grep -E "^\| |Launch|profiled|Largest|batch " "$out/$name.log"
}
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/core/models/test_cuda.py \
    tests/core/models/test_cuda_graphs.py >"$out/tests.log" 2>&1
echo "== CUDA tests (exit $?)"; tail -n 25 "$out/tests.log"
bench poam64 120 --dtype float64 --batch-sizes 1000,10000,100000,200000
bench poam32 50 --dtype float32 --no-batches
bench graphs 60 --sizes 1000 --repeats 3 --no-batches --variants padded,captured
for method in poam-vips vips oips dual-gp poam-mt; do
    bench "$method" 45 --method "$method" --sizes 1000,5000,20000 --repeats 3 --no-batches
done
