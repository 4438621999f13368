#!/usr/bin/env bash
# The GPU checks, in one go on a CUDA machine: each step has its own time limit and the limits
# add up to 7 min 40 s, so one call fits in 8 (never run on a GPU yet: the limits are sized
# from CPU runs and published GPU speeds; if a step hits its limit, its log says so).
#
# The device machines of this project have PyTorch (CUDA), OpenCV, pyarrow, scikit-learn and
# Pillow, but no network: fetch what they lack beforehand, here, into .whl/ (the script adds
# it to git's exclude list):
#     benchmarks/gpu_check.sh --download
# then run it there with .whl carried (device tool: carry [".whl"]):
#     benchmarks/gpu_check.sh
# Output goes to stdout and to $OUT/gpu-check.log ($OUT: the device tool's folder, else
# ./gpu-check-out), every figure with the command that produced it (each step's header).
#
# Steps: the tests of AMP, training (sink mode on the device; the `gpu`-marked ones: a step
# captured as a CUDA graph trains the model of the eager step, dropout and fp16 loss scaling
# included, and replays without a host sync), image ops (offload) and device decoding; sink
# mode with and without CUDA graphs against eager steps and a plain loop (a tiny MLP, a small
# CNN, ResNet-50 and ResNet-18 at batch 32 and 256, O0 and O2 at fp16 and bf16, and
# torch.compile's reduce-overhead mode on the MLP); the AMP step benchmark (fp16 and bf16 at
# O0..O3 against plain PyTorch); the image pipeline (jisu, region decoding and GPU decoding
# against a DataLoader). The wheels fetched: nvImageCodec (CUDA 13 build) and nvJPEG 13.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${1:-}" = "--download" ]; then
  exclude=$(git rev-parse --git-path info/exclude)
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/.whl/" "$exclude" 2>/dev/null || echo "/.whl/" >>"$exclude"
  exec "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
    simplejpeg crc32c nvidia-nvimgcodec-cu13 "nvidia-nvjpeg>=13,<14"
fi

OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu-check.log") 2>&1
export PYTHONUNBUFFERED=1

if [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/jisu-site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/jisu-site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  # nvImageCodec dlopens libnvjpeg.so.13: the nvjpeg 13 wheel puts it in nvidia/cu13/lib
  export LD_LIBRARY_PATH="/tmp/jisu-site/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
"$PY" - <<'PYEOF' || exit 1
import torch
import jisu
from jisu.dataset.vision import region_decode
print(f"jisu {jisu.__version__}, torch {torch.__version__}, cuda {torch.cuda.is_available()}, "
      f"region decode {region_decode.available()}")
if not torch.cuda.is_available():
    raise SystemExit("gpu_check: no CUDA device")
print(torch.cuda.get_device_name(0))
from jisu.dataset import vision
from jisu.dataset.device.decode_plan import DevicePlan
from jisu.dataset.device.decoder import DeviceDecoder
gpu = DeviceDecoder(DevicePlan(vision.RandomCropDecodeResize(8), None, []))._gpu_decoder(
    torch.device("cuda", 0))
print(f"GPU JPEG decoding (nvImageCodec + nvJPEG): {'ready' if gpu else 'NOT available'}")
PYEOF

step() {  # step SECONDS NAME COMMAND...
  local limit=$1 name=$2
  shift 2
  echo "=== $name (limit ${limit}s): $*"
  local begin=$SECONDS
  timeout "$limit" "$@"
  echo "=== $name: exit $? in $((SECONDS - begin)) s"
}

step 150 "tests: amp, train, offload, device decode" "$PY" -m pytest -q -p no:cacheprovider \
  -o addopts="" -m "not slow" tests/amp tests/train tests/dataset/vision/test_image_ops.py \
  tests/dataset/device/test_device_decode.py --maxfail=20 -rs
step 170 "sink_capture" "$PY" benchmarks/sink_capture.py --rounds 1 --compile mlp \
  --only mlp,resnet50-b32,cnn,resnet18-b32,resnet50-b256,resnet18-b256
step 60 "amp_step" "$PY" benchmarks/amp_step.py --steps 20 --rounds 3
step 80 "image_pipeline" "$PY" benchmarks/image_pipeline.py --images 2000 --repeats 2 \
  --loader-workers 0,8,16
