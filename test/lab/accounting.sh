# The lab's accounting (sourced by lab.sh): a private MariaDB and slurmdbd, so that
# quotas, QOS preemption, billing and `gpumemctl report` run against Slurm's real
# accounting database. On by default; LAB_ACCOUNTING=0 runs the lab without it.
#
# Safe beside a machine's own database and Slurm: the lab runs its own mariadbd (the
# host's binary, for every release) on a datadir, socket and port of its own, bound to
# 127.0.0.1, copied afresh from a template at every `up`; it never reads /etc/mysql and
# never connects to another server. slurmdbd is the release's own (the chroot's for
# 24.11 and 26.05), on a lab port. Both write pid files under $LAB/run, so `down` stops them with
# the other daemons it started, and only those.
ACCOUNTING=${LAB_ACCOUNTING:-1}
# Beside each release's slurmctld port: 6806 and 6819 for 22.05 (5806 and 5819 in its
# chroot), 8806 and 8819 for 24.11, 9806 and 9819 for 26.05.
DB_PORT=$((CTLD_PORT - 11)) DBD_PORT=$((CTLD_PORT + 2))
DB_NAME=gpumem_lab_${REL/./}
DB_USER=gpumemlab
DB_TEMPLATE=/var/lib/gpumem-lab/mysql-template
# The lab's accounts: two teams for quotas; root in both, gpumemlab in teama.
ACCT_ACCOUNTS=(teama teamb)
LAB_USER_UID=2001 # the hostile tests' user, created here when missing

acct_on() { [ "$ACCOUNTING" = 1 ]; }

port_free() { ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# acct_check fails before anything starts when accounting cannot run here.
acct_check() {
	acct_on || return 0
	command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null ||
		die "accounting needs MariaDB (mariadb-server-core): run test/lab/deps.sh, or LAB_ACCOUNTING=0"
	if [ -n "$ROOT" ] && [ ! -x "$ROOT/usr/sbin/slurmdbd" ]; then
		say "installing slurmdbd in the chroot (once)"
		chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get -qq -y install --no-install-recommends slurmdbd >/dev/null ||
			die "installing slurmdbd in $ROOT failed"
	fi
	[ -x "$ROOT/usr/sbin/slurmdbd" ] || die "accounting needs slurmdbd: run test/lab/deps.sh, or LAB_ACCOUNTING=0"
	local p
	for p in "$DB_PORT" "$DBD_PORT"; do
		port_free "$p" || die "port $p is taken by a process the lab did not start: the lab's accounting needs it (or LAB_ACCOUNTING=0)"
	done
}

# acct_conf_lines prints slurm.conf's accounting lines; $1 is AccountingStorageTRES.
acct_conf_lines() {
	if ! acct_on; then
		echo "AccountingStorageType=accounting_storage/none"
		return 0
	fi
	cat <<-CONF
		AccountingStorageType=accounting_storage/slurmdbd
		AccountingStorageHost=127.0.0.1
		AccountingStoragePort=$DBD_PORT
		AccountingStorageTRES=$1
		AccountingStorageEnforce=associations,limits,qos
		JobAcctGatherType=jobacct_gather/none
		PreemptType=preempt/qos
		PreemptMode=REQUEUE
		PriorityType=priority/multifactor
		PriorityWeightQOS=10000
	CONF
}

# acct_render writes slurmdbd.conf (mode 600: it holds the database password).
acct_render() {
	local etc=$ROOT$CONF pass
	rm -f "$etc/slurmdbd.conf"
	acct_on || return 0
	pass=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	(
		umask 077
		cat >"$etc/slurmdbd.conf" <<-CONF
			# slurmdbd of the gpumem lab, written by test/lab/lab.sh; its database is the lab's own
			# mariadbd on 127.0.0.1:$DB_PORT.
			AuthType=$AUTH
			DbdHost=localhost
			DbdAddr=127.0.0.1
			DbdPort=$DBD_PORT
			SlurmUser=root
			PidFile=$LAB/run/slurmdbd.pid
			LogFile=$LAB/log/slurmdbd.log
			DebugLevel=info
			StorageType=accounting_storage/mysql
			StorageHost=127.0.0.1
			StoragePort=$DB_PORT
			StorageUser=$DB_USER
			StoragePass=$pass
			StorageLoc=$DB_NAME
		CONF
		cat >"$ROOT$LAB/mysql-init.sql" <<-SQL
			CREATE DATABASE IF NOT EXISTS $DB_NAME;
			CREATE OR REPLACE USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$pass';
			GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
		SQL
	)
}

# acct_template makes, once, an empty MariaDB datadir that every `up` copies.
acct_template() {
	[ -d "$DB_TEMPLATE/mysql" ] && return 0
	local tmp=$DB_TEMPLATE.tmp
	rm -rf "$tmp"
	install -d -m 0700 "$tmp"
	mariadb-install-db --no-defaults --user=root --datadir="$tmp" --skip-test-db \
		--auth-root-authentication-method=socket >"$(dirname "$DB_TEMPLATE")/mysql-template.log" 2>&1 ||
		die "mariadb-install-db failed; see $(dirname "$DB_TEMPLATE")/mysql-template.log"
	mv "$tmp" "$DB_TEMPLATE"
}

acct_db_up() {
	mariadb --no-defaults --protocol=socket --socket="$ROOT$LAB/run/mysqld.sock" -u root -e 'SELECT 1' >/dev/null 2>&1
}

# acct_start starts mariadbd and slurmdbd and creates the lab's cluster, accounts,
# users and QOS, before slurmctld starts (it then loads them at once).
acct_start() {
	acct_on || return 0
	local t0=$SECONDS t1 t2
	acct_template
	rm -rf "$ROOT$LAB/mysql"
	cp -a "$DB_TEMPLATE" "$ROOT$LAB/mysql"
	# Small buffers and no fsync per commit: a throwaway test database.
	setsid mariadbd --no-defaults --user=root --datadir="$ROOT$LAB/mysql" \
		--socket="$ROOT$LAB/run/mysqld.sock" --port="$DB_PORT" --bind-address=127.0.0.1 \
		--pid-file="$ROOT$LAB/run/mysqld.pid" --log-error="$ROOT$LAB/log/mysqld.log" \
		--init-file="$ROOT$LAB/mysql-init.sql" --skip-log-bin --innodb-buffer-pool-size=64M \
		--innodb-log-file-size=48M --innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 \
		--innodb-lock-wait-timeout=900 --max-allowed-packet=16M </dev/null >/dev/null 2>&1 &
	wait_for 60 "mariadbd" acct_db_up
	t1=$SECONDS
	lab_in slurmdbd
	wait_for 60 "slurmdbd" lab_in sacctmgr -n list cluster
	t2=$SECONDS
	acct_users
	say "accounting up in $((SECONDS - t0))s (mariadbd $((t1 - t0))s, slurmdbd $((t2 - t1))s, accounts and QOS $((SECONDS - t2))s)"
}

# acct_users creates the lab's users on the machine (and in the chroot) when missing,
# and in the accounting database the cluster, the teams, the QOS and the users.
acct_users() {
	local qos=normal,low,high
	id -u gpumemlab >/dev/null 2>&1 || useradd -M -u "$LAB_USER_UID" -s /bin/sh gpumemlab
	if [ -n "$ROOT" ] && ! chroot "$ROOT" id -u gpumemlab >/dev/null 2>&1; then
		chroot "$ROOT" useradd -M -u "$LAB_USER_UID" -s /bin/sh gpumemlab
	fi
	# Few calls: each costs a round trip (and a munge credential on 22.05).
	local sa=(lab_in sacctmgr -i -Q)
	"${sa[@]}" add cluster "gpumem${REL/./}" >/dev/null
	# Preemption by QOS (docs/policy.md): high requeues low on the same GPUs.
	"${sa[@]}" add qos low Priority=0 >/dev/null
	"${sa[@]}" add qos high Priority=100 Preempt=low >/dev/null
	# Set on the root account, the QOS list is inherited by every association below.
	"${sa[@]}" modify account root set QOS="$qos" DefaultQOS=normal >/dev/null
	"${sa[@]}" add account "$(IFS=,; echo "${ACCT_ACCOUNTS[*]}")" Description="lab team" Organization=gpumem >/dev/null
	# root keeps its root account as default: the other tests' jobs run as before.
	"${sa[@]}" add user root Account="$(IFS=,; echo "${ACCT_ACCOUNTS[*]}")" >/dev/null
	"${sa[@]}" add user gpumemlab Account=teama DefaultAccount=teama >/dev/null
}
