#!/usr/bin/env bash
# One prepared GPU lease (run on the lent machine from the repository root, with build/gpu
# carried; `python -m tools.gpu_runs inputs` writes it here first):
#   bash tools/gpu_lease.sh PLAN DEADLINE_S PARALLEL
# trains the plan's unfinished NAME:SEED jobs in parallel until the deadline and leaves
# $OUT/results.tar.gz; here, `python -m tools.gpu_runs unpack` puts the seeds in place.
set -euo pipefail
plan=${1:?a plan, e.g. issue55-scale}; deadline=${2:-450}; parallel=${3:-7}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
jobs=$(python3 -m tools.gpu_runs plan "$plan")
echo "jobs: $jobs"
python3 -m tools.gpu_runs train --deadline "$deadline" --parallel "$parallel" $jobs
for f in build/gpu/logs/*.log; do echo "== $f"; tail -n 4 "$f"; done
ls -la "${OUT:-build/gpu/out}"
