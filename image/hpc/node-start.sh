#!/bin/bash
# The HPC node's entry point: munged, slurmctld and slurmd for this one node, then it waits.
# Run as root in the container, with no added capabilities (image/hpc/node.sh run).
set -euo pipefail
# Apptainer's squashfuse runs as the user; the engine hands /dev/fuse over root-only.
[ -c /dev/fuse ] && chmod 0666 /dev/fuse
node=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 512 ))
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
[ -f /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
runuser -u munge -- munged
install -d /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=biotoolhpc
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# No cgroup of its own in a container: processes tracked by parentage, no task containment.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=3600
NodeName=$node CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld
slurmd
echo "node: $node ready ($cpus CPUs, ${mem_mb} MB), apptainer $(apptainer version)"
exec sleep infinity
