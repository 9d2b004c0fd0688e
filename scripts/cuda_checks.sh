#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run of at most 10 minutes, the most wanted first:
# the CPU-against-CUDA tests; eager, padded and CUDA-graph updates side by side (float64 and
# float32, each profiled); POAM in float64 with first batches up to 200,000 samples; then each
# adaptive-size, memory and multi-task method.
#   bash scripts/cuda_checks.sh OUT_DIR      (results and logs under OUT_DIR)
# Each step has its own time limit so that one slow step leaves the others their turn. The
# tests stop their conftest search at their own folder: the tiers above import the geodesy
# stack (pyproj), which a GPU machine's Python may lack and these tests do not need.
set -u
out=${1:?usage: bash scripts/cuda_checks.sh OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda)"
bench() {  # name, seconds, then poam-ros bench core arguments
    local name=$1 limit=$2; shift 2
    timeout "$limit" python3 -m poam_ros bench core --device cuda --out "$out/$name" "$@" \
        >"$out/$name.log" 2>&1
    echo "== $name (exit $?)"; grep -E "^\| |Launch|profiled|Largest|batch " "$out/$name.log"
}
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider --confcutdir=tests/core/models \
    tests/core/models/test_cuda.py tests/core/models/test_cuda_graphs.py >"$out/tests.log" 2>&1
echo "== CUDA tests (exit $?)"; tail -n 25 "$out/tests.log"
bench graphs64 90 --sizes 1000 --repeats 5 --no-batches --variants padded,captured
bench graphs32 70 --dtype float32 --sizes 1000 --repeats 5 --no-batches --variants padded,captured
bench poam64 100 --sizes 1000,5000,20000 --repeats 3 --batch-sizes 1000,10000,100000,200000
bench poam-vips 50 --method poam-vips --sizes 1000,5000 --repeats 3 --no-batches \
    --variants padded,captured
for method in vips oips dual-gp poam-mt; do
    bench "$method" 35 --method "$method" --sizes 1000,5000 --repeats 3 --no-batches
done
