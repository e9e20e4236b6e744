# The lab's own Prometheus (sourced by lab.sh): Debian's prometheus package, which
# test/lab/deps.sh installs, run with its own configuration, data directory and a
# loopback port of its own (PROM_PORT, the release table's: labs of different releases
# run at once), so a machine's own Prometheus (9090, /etc/prometheus,
# /var/lib/prometheus) is never touched. It scrapes whatever the tests list in
# $PROM_DIR/targets (file_sd: gpumemd-*.json for job gpumemd, cluster-*.json for job
# gpumem-cluster) every second, and loads gpumem's shipped rules plus a copy of its
# alerts with short `for:` and thresholds, so an alert caused in a test fires within
# seconds. lab.sh up starts it; lab.sh down stops it.
PROM_DIR=/var/lib/gpumem-lab/prometheus-$LAB_ID

prom_up() {
	if ! command -v prometheus >/dev/null; then
		say "prometheus is not installed (test/lab/deps.sh): the lab runs without one" >&2
		return 0
	fi
	prom_down
	rm -rf "$PROM_DIR"
	install -d "$PROM_DIR/targets" "$PROM_DIR/data"
	install -m 0644 "$REPO/packaging/monitoring/gpumem-rules.yml" "$PROM_DIR/gpumem-rules.yml"
	# The alerts again, as group gpumem.alerts.lab: 2s for every `for:`, 5s of idleness.
	sed -n '/- name: gpumem.alerts$/,$p' "$REPO/packaging/monitoring/gpumem-rules.yml" |
		sed -e 's/- name: gpumem.alerts$/- name: gpumem.alerts.lab/' -e 's/for: .*/for: 2s/' \
			-e 's/gpumem_job_idle_seconds{exempt=""} > 1800/gpumem_job_idle_seconds{exempt=""} > 5/' |
		sed '1i groups:' >"$PROM_DIR/gpumem-rules-lab.yml"
	cat >"$PROM_DIR/prometheus.yml" <<-PROM
		# Written by gpumem's test/lab/lab.sh (LAB_SLURM=$REL).
		global:
		  scrape_interval: 1s
		  scrape_timeout: 1s
		  evaluation_interval: 1s
		rule_files:
		  - $PROM_DIR/gpumem-rules.yml
		  - $PROM_DIR/gpumem-rules-lab.yml
		scrape_configs:
		  - job_name: gpumemd
		    file_sd_configs:
		      - files: ['$PROM_DIR/targets/gpumemd-*.json']
		        refresh_interval: 1s
		  - job_name: gpumem-cluster
		    file_sd_configs:
		      - files: ['$PROM_DIR/targets/cluster-*.json']
		        refresh_interval: 1s
	PROM
	promtool check config "$PROM_DIR/prometheus.yml" >"$PROM_DIR/check.log" 2>&1 ||
		die "the lab's Prometheus configuration is wrong; see $PROM_DIR/check.log"
	setsid prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
		--storage.tsdb.retention.time=1d --web.listen-address="127.0.0.1:$PROM_PORT" \
		>"$PROM_DIR/prometheus.log" 2>&1 </dev/null &
	echo $! >"$PROM_DIR/prometheus.pid"
	wait_for 30 "the lab's Prometheus on 127.0.0.1:$PROM_PORT (see $PROM_DIR/prometheus.log)" \
		curl -sf "http://127.0.0.1:$PROM_PORT/-/ready"
	say "prometheus on 127.0.0.1:$PROM_PORT (targets in $PROM_DIR/targets)"
}

# prom_down stops the Prometheus the lab started, by its pid file, and only when that
# pid is still a prometheus.
prom_down() {
	local f=$PROM_DIR/prometheus.pid pid
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if pid_alive "$pid" && [ "$(readlink /proc/"$pid"/exe)" = "$(readlink -f "$(command -v prometheus)")" ]; then
		kill "$pid"
		for _ in $(seq 100); do
			pid_alive "$pid" || break
			sleep 0.1
		done
		pid_alive "$pid" && kill -9 "$pid"
	fi
	rm -f "$f"
}
