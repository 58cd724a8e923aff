#!/usr/bin/env bash
# make test-slurm: the SLURM sweep on a real SLURM, started and stopped here (issue 21).
#  1. installs slurm-wlm and munge when they are missing (apt-get; as root, as CI runs);
#  2. starts munged, slurmctld and slurmd on localhost from a generated config in a temporary folder
#     (tests/slurm/cluster.sh);
#  3. runs tests/test_slurm.py: a sweep whose status query always fails must stop with one line, then the
#     sweep config/test-slurm.yaml through config/profiles/slurm (verdicts, speedups, an MPI cell inside its
#     allocation, the report), leaving results-slurm/;
#  4. stops the daemons it started, by PID, whatever happened (trap).
# Extra arguments go to pytest. TICKPAR_SLURM_MIN_CPU_AVAILABLE=0 on a machine others load (tests/test_slurm.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
started=$SECONDS

missing=()
for exe in munged slurmctld slurmd sbatch srun squeue scancel; do
    command -v "$exe" >/dev/null 2>&1 || missing+=("$exe")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "test-slurm: ${missing[*]} missing: apt-get install slurm-wlm munge"
    if [ "$(id -u)" != 0 ]; then
        echo "test-slurm: installing needs root (CI runs as root): sudo apt-get install -y slurm-wlm munge" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq slurm-wlm munge >/dev/null
fi

cluster=$(mktemp -d /tmp/tickpar-slurm.XXXXXX)
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -f "$cluster/slurm.conf" ]; then
        # Jobs a failed test left behind, then the daemons (by the PIDs cluster.sh wrote down).
        SLURM_CONF="$cluster/slurm.conf" timeout 20 scancel --user "$(id -un)" >/dev/null 2>&1 || true
    fi
    tests/slurm/cluster.sh stop "$cluster" || rc=1
    rm -rf "$cluster"
    echo "test-slurm: daemons stopped; $((SECONDS - started)) s in all; exit $rc"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tests/slurm/cluster.sh start "$cluster"
export SLURM_CONF="$cluster/slurm.conf" PATH="$cluster/bin:$PATH" TICKPAR_SLURM_CLUSTER="$cluster"
.venv/bin/python -m pytest -q -s -m slurm tests/test_slurm.py "$@"
