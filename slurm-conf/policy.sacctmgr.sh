#!/bin/sh
# GPU memory as a first-class Slurm resource: the sacctmgr half of docs/policy.md.
# Run once against slurmdbd (as a Slurm admin). The quota lines come from
#   gpumemctl policy --inventory /etc/slurm/gpumem.d \
#       --quota account:teama=60g --quota user:alice@teama=30g --quota qos:normal=40g
# Limits are on the billing TRES, which slurm.conf's TRESBillingWeights make GiB of GPU
# memory of any kind (slice, MIG instance, whole GPU): one quota, no way around it.
set -e

# Teams and their users.
sacctmgr -i add account teama Description="team a"
sacctmgr -i add user alice Account=teama

# Preemption: jobs of QOS high requeue jobs of QOS low on the GPUs they need.
sacctmgr -i add qos low Priority=0
sacctmgr -i add qos high Priority=100 Preempt=low
sacctmgr -i modify account teama set QOS=normal,low,high DefaultQOS=normal

# Per-account quota: every job of teama together holds at most 60 GiB of GPU memory.
sacctmgr -i modify account teama set GrpTRES=billing=60
# Per-user quota: alice, in teama, holds at most 30 GiB.
sacctmgr -i modify user alice where account=teama set GrpTRES=billing=30
# Per-user cap for everyone of a QOS: no user of normal holds more than 40 GiB.
sacctmgr -i modify qos normal set MaxTRESPerUser=billing=40
