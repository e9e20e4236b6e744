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
	echo "PartitionName=gpu Nodes=n1,n2,n3 Default=YES DefaultTime=60 MaxTime=INFINITE State=UP"
	echo "PartitionName=train Nodes=n1,n2 DefaultTime=60 MaxTime=INFINITE State=UP"
	echo "PartitionName=inference Nodes=n3 DefaultTime=60 MaxTime=INFINITE State=UP"
}
