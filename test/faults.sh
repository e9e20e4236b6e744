#!/bin/bash
# The fault matrix of docs/reliability.md on the real-Slurm lab, from one command:
#
#   test/faults.sh [22.05|24.11|26.05]     (default 22.05; run as root, one lab at a time)
#
# Each row is an e2e test (build tag e2e) that breaks one thing the way a machine fails
# and checks: every job submitted ran or was refused with a reason, no GPU held more than
# its fake hardware has, no admin state was overwritten, and the lab came back by itself.
#   gpumemd killed -9 during a MIG apply    TestMIGApplyKill9RollsBack, TestMIGApplyKill9RollsForward
#   two MIG applies at once                 TestMIGApplyOneAtATime
#   a MIG apply failing over an admin drain TestMIGApplyFailureKeepsAdminDrain
#   gpumemd killed -9 writing gres.conf     TestFaultGresWriteKill9
#   the inventory half-written              TestBrokenNodeFileCostsThatNode
#   slurmctld killed -9 in a submit storm   TestFaultCtldKill9DuringSubmitStorm
#   slurmdbd down during accounting         TestFaultDbdDownDuringAccounting
# The same tests run in `make test` (test/e2e.sh), but for the slurmctld kill -9 row,
# which takes six minutes a release and runs only here (E2E_FAULT_MATRIX=1).
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rel=${1:-22.05}
case "$rel" in 22.05 | 24.11 | 26.05) ;; *)
	echo "usage: $0 [22.05|24.11|26.05]" >&2
	exit 2
	;;
esac
exec env E2E_FAULT_MATRIX=1 E2E_RUN='^(TestMIGApplyKill9RollsBack|TestMIGApplyKill9RollsForward|TestMIGApplyOneAtATime|TestMIGApplyFailureKeepsAdminDrain|TestFaultGresWriteKill9|TestBrokenNodeFileCostsThatNode|TestFaultCtldKill9DuringSubmitStorm|TestFaultDbdDownDuringAccounting)$' \
	"$REPO/test/e2e.sh" "$rel"
