package plugin

// The options salloc, sbatch and srun take, as their getopt_long tables hold them on the
// releases gpumem supports (22.05, 24.11 and 26.05; an option any of them has is here).
// Reading a command line or a script's #SBATCH words as the client does needs only
// whether an option takes its argument from the next word; an option's meaning is
// Slurm's. A name unknown to a client makes that client stop with an error of its own.

// Which client reads the words: the index into a longOption's arg and into shortOptions.
type client int

const (
	salloc client = iota
	sbatch
	srun
)

// longOption is one --name. arg holds, per client (salloc, sbatch, srun), 'r' where
// the option requires an argument (from "=value" or else the next word), 'n' where it
// takes none or only "=value", and '-' where the client has no such option.
type longOption struct{ name, arg string }

// longOptions is sorted by name (byte order) so that an abbreviation, which
// getopt_long accepts when it is the prefix of one option only, is found by search.
var longOptions = []longOption{
	{"accel-bind", "--r"}, {"account", "rrr"}, {"acctg-freq", "rrr"},
	{"array", "-r-"}, {"async", "--n"}, {"autocomplete", "rrr"},
	{"batch", "-r-"}, {"bb", "rrr"}, {"bbf", "rrr"},
	{"bcast", "--n"}, {"bcast-exclude", "--r"}, {"begin", "rrr"},
	{"bell", "n--"}, {"chdir", "rrr"}, {"cluster", "rrr"},
	{"cluster-constraint", "rrr"}, {"clusters", "rrr"}, {"comment", "rrr"},
	{"compress", "--n"}, {"consolidate-segments", "nnn"}, {"constraint", "rrr"},
	{"container", "rrr"}, {"container-id", "rrr"}, {"container-type", "rrr"},
	{"context", "rrr"}, {"contiguous", "nnn"}, {"core-spec", "rrr"},
	{"cores-per-socket", "rrr"}, {"cpu-bind", "--r"}, {"cpu-freq", "rrr"},
	{"cpu_bind", "--r"}, {"cpus-per-gpu", "rrr"}, {"cpus-per-task", "rrr"},
	{"deadline", "rrr"}, {"debugger-test", "--n"}, {"delay-boot", "rrr"},
	{"dependency", "rrr"}, {"disable-status", "--n"}, {"distribution", "rrr"},
	{"epilog", "--r"}, {"error", "-rr"}, {"exact", "--n"},
	{"exclude", "rrr"}, {"exclusive", "nnn"}, {"export", "-rr"},
	{"export-file", "-r-"}, {"external", "-n-"}, {"external-launcher", "--n"},
	{"extra", "rrr"}, {"extra-node-info", "rrr"}, {"get-user-env", "nn-"},
	{"gid", "rrr"}, {"gpu-bind", "rrr"}, {"gpu-freq", "rrr"},
	{"gpus", "rrr"}, {"gpus-per-node", "rrr"}, {"gpus-per-socket", "rrr"},
	{"gpus-per-task", "rrr"}, {"gres", "rrr"}, {"gres-flags", "rrr"},
	{"help", "nnn"}, {"het-group", "--r"}, {"hint", "rrr"},
	{"hold", "nnn"}, {"ignore-pbs", "-n-"}, {"ignore-signals", "--r"},
	{"immediate", "n-n"}, {"input", "-rr"}, {"interactive", "--n"},
	{"job-name", "rrr"}, {"jobid", "--r"}, {"kill-command", "n--"},
	{"kill-on-bad-exit", "--n"}, {"kill-on-invalid-dep", "-r-"}, {"label", "--n"},
	{"licenses", "rrr"}, {"mail-type", "rrr"}, {"mail-user", "rrr"},
	{"mcs-label", "rrr"}, {"mem", "rrr"}, {"mem-bind", "rrr"},
	{"mem-per-cpu", "rrr"}, {"mem-per-gpu", "rrr"}, {"mem-update", "rrr"},
	{"mincpus", "rrr"}, {"mpi", "--r"}, {"msg-timeout", "--r"},
	{"multi-prog", "--n"}, {"network", "rrr"}, {"nice", "nnn"},
	{"no-allocate", "--n"}, {"no-bell", "n--"}, {"no-kill", "nnn"},
	{"no-requeue", "-n-"}, {"no-shell", "n--"}, {"nodefile", "rrr"},
	{"nodelist", "rrr"}, {"nodes", "rrr"}, {"ntasks", "rrr"},
	{"ntasks-per-core", "rrr"}, {"ntasks-per-gpu", "rrr"}, {"ntasks-per-node", "rrr"},
	{"ntasks-per-socket", "rrr"}, {"ntasks-per-tres", "rrr"}, {"oom-kill-step", "nnn"},
	{"open-mode", "-rr"}, {"output", "-rr"}, {"overcommit", "nnn"},
	{"overlap", "--n"}, {"oversubscribe", "nnn"}, {"pack-group", "--r"},
	{"parsable", "-nn"}, {"partition", "rrr"}, {"power", "rrr"},
	{"prefer", "rrr"}, {"preserve-env", "--n"}, {"priority", "rrr"},
	{"profile", "rrr"}, {"prolog", "--r"}, {"propagate", "-nn"},
	{"pty", "--n"}, {"qos", "rrr"}, {"quiet", "nnn"},
	{"quit-on-interrupt", "--n"}, {"reboot", "nnn"}, {"relative", "--r"},
	{"requeue", "-n-"}, {"reservation", "rrr"}, {"resources", "rrr"},
	{"resv-ports", "nnn"}, {"segment", "rrr"}, {"send-libs", "--n"},
	{"signal", "rrr"}, {"slurmd-debug", "--r"}, {"sockets-per-node", "rrr"},
	{"spread-job", "nnn"}, {"spread-segments", "nnn"}, {"stepmgr", "nnn"},
	{"switches", "rrr"}, {"task-epilog", "--r"}, {"task-prolog", "--r"},
	{"tasks-per-node", "rrr"}, {"test-only", "-nn"}, {"thread-spec", "rrr"},
	{"threads", "--r"}, {"threads-per-core", "rrr"}, {"time", "rrr"},
	{"time-min", "rrr"}, {"tmp", "rrr"}, {"treewidth", "--r"},
	{"tres-bind", "rrr"}, {"tres-per-task", "rrr"}, {"uid", "rrr"},
	{"unbuffered", "--n"}, {"usage", "nnn"}, {"use-min-nodes", "nnn"},
	{"verbose", "nnn"}, {"version", "nnn"}, {"wait", "-nr"},
	{"wait-all-nodes", "rr-"}, {"wait-for-children", "--n"}, {"wckey", "rrr"},
	{"whole", "--n"}, {"wrap", "-r-"}}

// shortOptions is each client's getopt option string ("x:" requires an argument, "x::"
// takes one only when attached), indexed by client.
var shortOptions = [...]string{
	salloc: "A:B:C:D:F:G:HI::J:K::L:M:N:OQS:Vb:c:d:hk::m:n:p:q:st:vw:x:",
	sbatch: "A:B:C:D:F:G:HJ:L:M:N:OQS:VWa:b:c:d:e:hi:k::m:n:o:p:q:st:vw:x:",
	srun:   "A:B:C:D:EF:G:HI::J:K::L:M:N:OQS:T:VW:XZb:c:d:e:hi:k::lm:n:o:p:q:r:st:uvw:x:",
}
