#!/bin/bash
# The GPU checks of one session, in one call of a lent machine (its own python3 with torch,
# jax, cupy and triton; nothing can be fetched there). Prepare here, once:
#   echo /.gpu/ >> .git/info/exclude
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .gpu/whl \
#       array-api-compat==1.16.0 array-api-strict==2.6.1
# then run, carrying .gpu:  BUDGET=480 bash tools/gpu_check.sh   (results under $OUT)
# Stages: build the kernel; the whole test suite on torch[cuda], cupy and JAX's GPU (not
# tests/test_properties.py and tests/test_openvino_runtime.py: no OpenVINO there; `check`
# runs the property campaign instead); the Triton kernels on CUDA; `check`; the programs
# (torch.compile, eager, jax.jit) on the GPU; the single-call benchmarks, eager then jax.jit.
# Each stage is cut to what is left of BUDGET seconds; TESTS_S (default 220) caps the suite.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false  # (12 pytest workers share the GPU)
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
START=$(date +%s); BUDGET=${BUDGET:-420}
left() { echo $((BUDGET - ($(date +%s) - START))); }
if compgen -G ".gpu/whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .gpu/whl/*.whl
fi
export PYTHONPATH=$PWD/src:/tmp/site:$PWD/tests
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import torch, jax, cupy, triton; print('torch', torch.__version__, 'jax', jax.__version__, jax.devices(), 'cupy', cupy.__version__, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1; cat "$OUT/env.txt"
python3 setup.py build_ext --inplace -j 8 > "$OUT/build.log" 2>&1 || tail "$OUT/build.log"
PYTEST="python3 -m pytest -q -p no:cacheprovider -p no:benchmark -rfE"  # (pytest-benchmark warns under xdist)
echo "== tests on the GPU, $(left) s left"
timeout ${TESTS_S:-220} env ONNX_GATHER_BACKENDS='torch[cuda],cupy,jax' $PYTEST -n 12 \
  --ignore tests/test_properties.py --ignore tests/test_openvino_runtime.py tests > "$OUT/tests_gpu.log" 2>&1
echo "rc=$?"; grep -E "^(FAILED|ERROR)" "$OUT/tests_gpu.log" | head -30; tail -1 "$OUT/tests_gpu.log"
echo "== the Triton kernels on CUDA, $(left) s left"
timeout 60 env ONNX_GATHER_BACKENDS=torch ONNX_GATHER_TOOLS=triton ONNX_GATHER_EXAMPLES=40 $PYTEST -n 8 \
  tests/test_torch_triton.py > "$OUT/tests_triton.log" 2>&1
echo "rc=$?"; grep -E "^(FAILED|ERROR)" "$OUT/tests_triton.log" | head -20; tail -1 "$OUT/tests_triton.log"
echo "== check, $(left) s left"
timeout 60 python3 -m onnx_gather check --backends 'torch[cuda],cupy,jax' --examples 25 > "$OUT/check.log" 2>&1
echo "rc=$?"; tail -6 "$OUT/check.log"
echo "== programs on the GPU, $(left) s left"
timeout $(($(left) - 90)) python3 -m benchmarks.programs --device cuda --backends torch,jax \
  --rounds 7 --sample 0.01 --out "$OUT" > "$OUT/programs.log" 2>&1
echo "rc=$?"; grep -E "^(converted|decode)" "$OUT/programs.log" | head -40
for mode in eager jit; do
  echo "== benchmarks $mode, $(left) s left"
  timeout $(($(left) - 10)) python3 -m benchmarks --device cuda --mode $mode --rounds 7 --sample 0.01 \
    --out "$OUT/bench-$mode" > "$OUT/bench-$mode.log" 2>&1
  echo "rc=$?"; grep -E "^(Gather|Scatter)" "$OUT/bench-$mode.log" | grep -v "bandwidth" | head -40
done
