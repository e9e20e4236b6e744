# The lab's nodes and partitions (sourced by lab.sh). What GPUs each node has lives in
# test/lab/nodes/NODE.json, the fake-NVML file gpumemctl reads; here is only what
# slurm.conf needs beyond that.
LAB_NODES=(n1 n2 n3)
# Node features, for --constraint: the GPU model, and mig for the MIG node.
LAB_FEATURES=(h100 a100,mig l4)
LAB_CPUS=16
# Each node's sockets, so that every GPU's cores (its "cores" in NODE.json, gres.conf's
# Cores=) are whole sockets, as on a real node: from 26.05 on slurmctld refuses a node
# whose gres.conf Cores= cross a socket boundary of its NodeName line, and a line with
# only CPUs= has one core per socket.
LAB_TOPOLOGY=("Sockets=2 CoresPerSocket=8" "Sockets=1 CoresPerSocket=16" "Sockets=4 CoresPerSocket=4")
LAB_MEMORY_MB=64000

# LAB_SCALE=N gives the lab N nodes s1..sN instead, for steering at cluster scale
# (test/steer/scale.sh): in turn one H100, one A100 40GB and two L4s a node, every GPU
# shared, one partition. Their fake-NVML files are written at `up` (scale_node_files),
# not kept in test/lab/nodes/. Each slurmd listens on a port of its own from NODE_PORT0.
SCALE=${LAB_SCALE:-}
SCALE_MAX=200 # 64 slurmd take about 1 GiB; the ports from NODE_PORT0 must stay free
if [ -n "$SCALE" ]; then
	case $SCALE in '' | *[!0-9]* | 0*) die "LAB_SCALE=$SCALE: want a number of nodes, 3 to $SCALE_MAX" ;; esac
	[ "$SCALE" -ge 3 ] && [ "$SCALE" -le "$SCALE_MAX" ] || die "LAB_SCALE=$SCALE: want 3 to $SCALE_MAX nodes"
	# 64 CPUs a node, so that CPUs seldom decide where a small shard job fits.
	LAB_NODES=() LAB_FEATURES=() LAB_TOPOLOGY=() LAB_CPUS=64
	for i in $(seq "$SCALE"); do
		LAB_NODES+=("s$i")
		case $((i % 3)) in
		1) LAB_FEATURES+=(h100) LAB_TOPOLOGY+=("Sockets=1 CoresPerSocket=64") ;;
		2) LAB_FEATURES+=(a100) LAB_TOPOLOGY+=("Sockets=1 CoresPerSocket=64") ;;
		0) LAB_FEATURES+=(l4) LAB_TOPOLOGY+=("Sockets=2 CoresPerSocket=32") ;;
		esac
	done
fi

# scale_node_files writes the fake-NVML file of each node of a LAB_SCALE lab into $1.
scale_node_files() {
	local i gpus
	for i in "${!LAB_NODES[@]}"; do
		case ${LAB_FEATURES[$i]} in
		h100) gpus='{"model": "h100-80gb", "cores": "0-63"}' ;;
		a100) gpus='{"model": "a100-40gb", "cores": "0-63"}' ;;
		l4) gpus='{"name": "NVIDIA L4", "memory_mib": 23034, "cores": "0-31"}, {"name": "NVIDIA L4", "memory_mib": 23034, "cores": "32-63"}' ;;
		esac
		printf '{"driver_version": "550.54.15", "gpus": [%s]}\n' "$gpus" >"$1/${LAB_NODES[$i]}.json"
	done
}

# node_lines prints one NodeName line per node, with the Gres= that the generator wrote
# to DIR/NODE (one file per node; none: no Gres=).
node_lines() {
	local dir=$1 i n gres addr
	for i in "${!LAB_NODES[@]}"; do
		n=${LAB_NODES[$i]}
		gres=$(cat "$dir/$n" 2>/dev/null || true)
		addr=127.0.0.1
		cl_on && addr=$(cl_addr "$i") # its own address, where its gpumemd listens
		echo "NodeName=$n NodeHostname=$HOST NodeAddr=$addr Port=$((NODE_PORT0 + i)) CPUs=$LAB_CPUS ${LAB_TOPOLOGY[$i]} ThreadsPerCore=1 RealMemory=$LAB_MEMORY_MB Features=${LAB_FEATURES[$i]}${gres:+ Gres=$gres} State=UNKNOWN"
	done
}

# Three ways in: everything (default), the big-memory training nodes, and the L4s.
partition_lines() {
	if [ -n "$SCALE" ]; then
		echo "PartitionName=gpu Nodes=s[1-$SCALE] Default=YES DefaultTime=60 MaxTime=INFINITE State=UP"
		return
	fi
	echo "PartitionName=gpu Nodes=n1,n2,n3 Default=YES DefaultTime=60 MaxTime=INFINITE State=UP"
	echo "PartitionName=train Nodes=n1,n2 DefaultTime=60 MaxTime=INFINITE State=UP"
	echo "PartitionName=inference Nodes=n3 DefaultTime=60 MaxTime=INFINITE State=UP"
}
