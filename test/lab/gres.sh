# gres.conf, node Gres= and gpumem.conf for the lab (sourced by lab.sh).

# gres_generate writes gres.conf to $1 and each node's Gres= to $2/NODE.
gres_generate() {
	local out=$1 dir=$2
	mkdir -p "$dir"
	gres_bootstrap "$out" "$dir"
}

# gres_bootstrap is what the lab used before gpumemctl could generate gres.conf.
gres_bootstrap() {
	local out=$1 dir=$2 i
	{
		echo "# gpumem lab bootstrap gres.conf"
		for i in 0 1; do echo "NodeName=n1 Name=gpu Type=h100 File=$DEV/nvidia$i"; done
		for i in 0 1; do echo "NodeName=n1 Name=shard Count=79 File=$DEV/nvidia$i"; done
		echo "NodeName=n2 Name=gpu Type=3g.20gb MultipleFiles=$DEV/nvidia0,$DEV/nvidia-caps/nvidia-cap30,$DEV/nvidia-caps/nvidia-cap31"
		echo "NodeName=n2 Name=gpu Type=2g.10gb MultipleFiles=$DEV/nvidia0,$DEV/nvidia-caps/nvidia-cap39,$DEV/nvidia-caps/nvidia-cap40"
		echo "NodeName=n2 Name=gpu Type=1g.5gb MultipleFiles=$DEV/nvidia0,$DEV/nvidia-caps/nvidia-cap12,$DEV/nvidia-caps/nvidia-cap13"
		echo "NodeName=n2 Name=gpu Type=1g.5gb MultipleFiles=$DEV/nvidia0,$DEV/nvidia-caps/nvidia-cap21,$DEV/nvidia-caps/nvidia-cap22"
		for i in 0 1 2 3; do echo "NodeName=n3 Name=gpu Type=l4 File=$DEV/nvidia$i"; done
		for i in 0 1 2 3; do echo "NodeName=n3 Name=shard Count=22 File=$DEV/nvidia$i"; done
	} >"$out"
	echo "gpu:h100:2,shard:158" >"$dir/n1"
	echo "gpu:3g.20gb:1,gpu:2g.10gb:1,gpu:1g.5gb:2" >"$dir/n2"
	echo "gpu:l4:4,shard:88" >"$dir/n3"
}

# gpumem_conf writes the plugins' gpumem.conf into $1 and the inventory they admit
# against into $1/gpumem.d.
gpumem_conf() {
	local etc=$1
	rm -rf "$etc/gpumem.d"
	install -d "$etc/gpumem.d"
	inventory_bootstrap >"$etc/gpumem.d/lab.json"
	cat >"$etc/gpumem.conf" <<-CONF
		# gpumem lab configuration, written by test/lab/lab.sh.
		ShardUnit = 1GiB
		Policy = ${LAB_POLICY:-first-fit}
		PreferMIG = yes
		InventoryPath = $CONF/gpumem.d
		SlurmConf = $CONF/slurm.conf
		OnError = open
		LogLevel = error
		ReloadInterval = 2s
	CONF
}

inventory_bootstrap() {
	cat <<-JSON
		{"nodes": [
		 {"name": "n1", "partitions": ["gpu", "train"], "gpus": [
		  {"index": 0, "minor": 0, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559},
		  {"index": 1, "minor": 1, "name": "NVIDIA H100 80GB HBM3", "type": "h100", "memory_mib": 81559}]},
		 {"name": "n2", "partitions": ["gpu", "train"], "gpus": [
		  {"index": 0, "minor": 0, "name": "NVIDIA A100-SXM4-40GB", "type": "a100", "memory_mib": 40960, "mig": true,
		   "mig_instances": [
		    {"profile": "2g.10gb", "memory_mib": 9856, "gi": 3, "ci": 0, "start": 0, "slices": 2},
		    {"profile": "1g.5gb", "memory_mib": 4864, "gi": 9, "ci": 0, "start": 2, "slices": 1},
		    {"profile": "1g.5gb", "memory_mib": 4864, "gi": 10, "ci": 0, "start": 3, "slices": 1},
		    {"profile": "3g.20gb", "memory_mib": 19968, "gi": 2, "ci": 0, "start": 4, "slices": 3}]}]},
		 {"name": "n3", "partitions": ["gpu", "inference"], "gpus": [
		  {"index": 0, "minor": 0, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
		  {"index": 1, "minor": 1, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
		  {"index": 2, "minor": 2, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034},
		  {"index": 3, "minor": 3, "name": "NVIDIA L4", "type": "l4", "memory_mib": 23034}]}]}
	JSON
}
