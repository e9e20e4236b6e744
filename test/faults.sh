#!/bin/bash
# The fault matrix of docs/reliability.md on the real-Slurm lab, from one command:
#
#   test/faults.sh [RELEASE|RELEASE-scale]     (a row of internal/slurmrel/releases.txt; default
#                                              the host's, 22.05; run as root, one lab at a time)
#
# Each row is an e2e test (build tag e2e) that breaks one thing the way a machine fails
# and checks: every job submitted ran or was refused with a reason, no GPU held more than
# its fake hardware has, no admin state was overwritten, and the lab came back by itself.
#   gpumemd killed -9 during a MIG apply    TestMIGApplyKill9RollsBack, TestMIGApplyKill9RollsForward
#   two MIG applies at once                 TestMIGApplyOneAtATime
#   a MIG apply failing over an admin drain TestMIGApplyFailureKeepsAdminDrain
#   gpumemd killed -9 writing gres.conf     TestFaultGresWriteKill9
#   gpumemd killed -9 during a job's kill   TestFaultUsageKill9DuringKill
#   the inventory half-written              TestBrokenNodeFileCostsThatNode
#   slurmctld killed -9 in a submit storm   TestFaultCtldKill9DuringSubmitStorm
#   slurmdbd down during accounting         TestFaultDbdDownDuringAccounting
#   slurmdbd down when a job's summary is due TestFaultDbdDownDuringSummary
#   a backup slurmctld taking over          TestFaultBackupCtldTakesOver
#   the controller's state disk full        TestFaultCtldStateDiskFull
#   a node rebooted mid-MIG-apply           TestFaultMIGApplyNodeReboot, TestFaultMIGApplyNodeRebootBeforeGPU
# These rows are the faults lines of test/e2e/required.txt (test/e2e.sh RELEASE-faults).
# The same tests run in `make test` (test/e2e.sh), but for the slurmctld kill -9 row,
# the summary's slurmdbd row (40 s, most of it gpumemd's wait before it tries again)
# and the last three, which run only here (E2E_FAULT_MATRIX=1): the slurmctld kill -9
# row takes six minutes a release, the backup's row restarts the lab twice (with a
# backup slurmctld, LAB_BACKUP_CTLD=1, and back), the disk-full row moves slurmctld's
# state onto a tmpfs and back, and the reboot rows kill a slurmd (and, before the GPU
# changed, a job's processes).
# The lab runs with SlurmdTimeout=30 here (LAB_SLURMD_TIMEOUT): a job slurmctld's crash
# brought back RUNNING is ended at a node registration, which slurmctld asks for every
# 20 pings, SlurmdTimeout/3 apart; 200 s fits the storm row's wait, 33 min would not.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
release() { (cd "$REPO" && CGO_ENABLED=0 go run ./cmd/slurm-release "$@"); }
rel=${1:-$(release names --host)}
case "$rel" in
*-scale)
	# At cluster scale: the slurmctld kill -9 row on a 64-node lab of mixed GPUs
	# (LAB_SCALE, docs/lab.md); E2E_SCALE sets another node count.
	exec env E2E_FAULT_MATRIX=1 LAB_SLURMD_TIMEOUT="${LAB_SLURMD_TIMEOUT:-30}" E2E_SCALE="${E2E_SCALE:-64}" E2E_RUN='^TestFaultCtldKill9DuringSubmitStorm$' "$REPO/test/e2e.sh" "$rel"
	;;
*-*)
	echo "usage: $0 [RELEASE|RELEASE-scale]; RELEASE: $(release names | tr '\n' ' ')" >&2
	exit 2
	;;
esac
exec env E2E_FAULT_MATRIX=1 LAB_SLURMD_TIMEOUT="${LAB_SLURMD_TIMEOUT:-30}" "$REPO/test/e2e.sh" "$rel-faults"
