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

gpumem_conf() {
	:
}
