/* The one structure that crosses between the C shims and Go. Slurm's own structures
 * never reach Go, so the Go side is the same for every Slurm release; only the shims are
 * compiled against a release's slurm.h. Each plugin gives the slots its own meaning. */
#ifndef GPUMEM_JOB_H
#define GPUMEM_JOB_H

#include <stdint.h>
#include <string.h>

/* job_submit: the job_desc fields. The first GPUMEM_WRITABLE may be rewritten (req_nodes:
 * the required node list, which only pinning a shard job to one GPU writes); the rest
 * are the job's shape, read only. */
enum {
	GPUMEM_PER_NODE, GPUMEM_PER_JOB, GPUMEM_PER_SOCKET, GPUMEM_PER_TASK, GPUMEM_PARTITION,
	GPUMEM_REQ_NODES, GPUMEM_WRITABLE,
	GPUMEM_EXC_NODES = GPUMEM_WRITABLE, GPUMEM_FEATURES, GPUMEM_RESERVATION, GPUMEM_ARRAY_INX,
	GPUMEM_MEM_PER_TRES, GPUMEM_CPUS_PER_TRES, GPUMEM_TRES_FREQ, GPUMEM_SUBMIT_NSLOTS,
	/* the batch script, only when gpumem_script_to_go says Go must read it; such a job
	 * never goes through the memo, so the slot is no part of its key */
	GPUMEM_SCRIPT = GPUMEM_SUBMIT_NSLOTS,
	/* job_modify: the job being changed, as slurmctld holds it now (gpumem_jobrec.h);
	 * read only, and only when num[GPUMEM_JOB_KNOWN] is 1 */
	GPUMEM_JOB_PER_NODE, GPUMEM_JOB_PER_JOB, GPUMEM_JOB_PER_SOCKET, GPUMEM_JOB_PER_TASK,
	GPUMEM_JOB_PARTITION, GPUMEM_JOB_FEATURES, GPUMEM_JOB_REQ_NODES, GPUMEM_JOB_EXC_NODES,
	GPUMEM_MODIFY_NSLOTS
};

/* job_submit: the job's numbers, read only; 0 where Slurm holds NO_VAL (unset). het_job
 * is a heterogeneous component's offset plus 1 (0: not one). cli_filter puts the
 * component's offset (0 for the first component and for any other job) in
 * num[GPUMEM_HET_JOB]. */
/* GPUMEM_NUM_TASKS is --ntasks, GPUMEM_NTASKS_PER_TRES --ntasks-per-gpu, GPUMEM_EXCLUSIVE 1
 * for a job that holds whole nodes (--exclusive in any form but oversubscribe). */
/* job_modify adds the job's --nodes (GPUMEM_JOB_MIN_NODES), whether the job was read
 * (GPUMEM_JOB_KNOWN), GPUMEM_KEEP_GRES: 1 where Slurm refuses to change a pending job's
 * GRES from shards to gpu or back, and, for a job that was not read, why not:
 * GPUMEM_JOB_LAYOUT 1 where this build knows the release's job record
 * (gpumem_jobrec.h), GPUMEM_JOB_NAMED 1 where the update names one plain job id. */
enum {
	GPUMEM_MIN_NODES, GPUMEM_MAX_NODES, GPUMEM_NTASKS_PER_NODE, GPUMEM_HET_JOB,
	GPUMEM_NUM_TASKS, GPUMEM_NTASKS_PER_TRES, GPUMEM_EXCLUSIVE, GPUMEM_JOB_MIN_NODES, GPUMEM_JOB_KNOWN, GPUMEM_KEEP_GRES,
	GPUMEM_JOB_LAYOUT, GPUMEM_JOB_NAMED, GPUMEM_NUMS
};

/* cli_filter: the client options by the names slurm_option_get takes (those from
 * GPUMEM_OPT_NODES on are read only where the user set them, and only
 * GPUMEM_OPT_TRES_PER_TASK of them is written), then (read only) the tres_per_node and tres_per_job
 * of the job a step runs in. */
enum {
	GPUMEM_OPT_GRES, GPUMEM_OPT_GPUS, GPUMEM_OPT_GPUS_PER_NODE, GPUMEM_OPT_GPUS_PER_SOCKET,
	GPUMEM_OPT_GPUS_PER_TASK, GPUMEM_OPT_PARTITION,
	GPUMEM_OPT_NODES, GPUMEM_OPT_NODELIST, GPUMEM_OPT_EXCLUDE, GPUMEM_OPT_CONSTRAINT,
	GPUMEM_OPT_ARRAY, GPUMEM_OPT_RESERVATION, GPUMEM_OPT_NTASKS_PER_NODE, GPUMEM_OPT_NTASKS,
	GPUMEM_OPT_EXCLUSIVE, GPUMEM_OPT_MEM_PER_GPU, GPUMEM_OPT_CPUS_PER_GPU, GPUMEM_OPT_NTASKS_PER_GPU,
	GPUMEM_OPT_GPU_FREQ, GPUMEM_OPT_TRES_PER_TASK, GPUMEM_OPT_NOPTS,
	GPUMEM_STEP_JOB_PER_NODE = GPUMEM_OPT_NOPTS, GPUMEM_STEP_JOB_PER_JOB
};

#define GPUMEM_SLOTS 24

struct gpumem_job {
	const char *in[GPUMEM_SLOTS]; /* borrowed from Slurm; NULL when unset */
	uint32_t num[GPUMEM_NUMS];    /* job_submit: the job's numbers, see above */
	uint32_t job_id;              /* cli_filter: the job a step runs in, else 0 */
	int changed[GPUMEM_SLOTS];    /* 1: replace slot i with out[i] (NULL: unset it) */
	char *out[GPUMEM_SLOTS];      /* malloc'd by Go; the shim copies and frees */
	char *refusal;                /* malloc'd by Go; non-NULL refuses the job */
	int64_t fresh_ns;             /* job_submit: how long the same in[] get the same answer */
	int pin;                      /* job_submit: 1 for a new job, which Go may pin to a GPU */
};

_Static_assert(GPUMEM_MODIFY_NSLOTS <= GPUMEM_SLOTS, "job_modify's slots fit");

/* gpumem_has_mem is a cheap prefilter, not the rule: Go decides whether a job asks for
 * GPU memory, once (request.AsksMem, a gpu:mem entry). The shims pass on without
 * entering Go a job whose fields hold no "mem" in any case, which Go would leave alone;
 * a job it lets through that Go finds no gpu:mem in is left alone by Go. A fuzz test
 * checks that it never says no where Go says yes. */
static inline int gpumem_has_mem(const char *s)
{
	if (!s)
		return 0;
	for (; s[0] && s[1] && s[2]; s++)
		if ((s[0] | 0x20) == 'm' && (s[1] | 0x20) == 'e' && (s[2] | 0x20) == 'm')
			return 1;
	return 0;
}

/* GPUMEM_SCRIPT_MAX is plugin.MaxScriptRead: how much of a batch script the prefilter
 * and Go read (a test checks the two agree). */
#define GPUMEM_SCRIPT_MAX (1 << 20)

static inline int gpumem_blank(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r'); /* C's isspace, in any locale */
}

/* gpumem_script_to_go is the shim's prefilter for plugin.ScriptRepeats: whether Go must
 * read the script. It reads the script's #SBATCH head (the lines up to the first one that
 * is neither blank nor a comment, as sbatch does) in its first GPUMEM_SCRIPT_MAX bytes,
 * once: yes where its #SBATCH and #SLURM lines, quotes and backslashes left out (sbatch
 * takes them out of words), spell --gres twice and mem in any case; and, for a job that
 * asks for GPU memory, where the head runs past the bound. A fuzz test checks that it
 * says yes wherever Go refuses. */
static inline int gpumem_script_to_go(const char *s, int asks_mem)
{
	static const char gres[] = "--gres", mem[] = "mem";
	size_t n = s ? strnlen(s, GPUMEM_SCRIPT_MAX + 1) : 0;
	int past = n > GPUMEM_SCRIPT_MAX, times = 0, has_mem = 0;
	const char *p = s, *end = s + (past ? GPUMEM_SCRIPT_MAX : n);

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *q = p;
		int g = 0, m = 0; /* how much of "--gres" and of "mem" the last characters spell */

		if (le - p >= 7 && !memcmp(p, "#SBATCH", 7))
			q = p + 7;
		else if (le - p >= 6 && !memcmp(p, "#SLURM", 6))
			q = p + 6;
		else {
			while (q < le && gpumem_blank(*q))
				q++;
			if (q < le && *q != '#') {
				past = 0; /* the first command: sbatch reads no further */
				break;
			}
			q = le;
		}
		for (; q < le; q++) {
			char c = *q, lc = (char)(c | 0x20);

			if (c == '"' || c == '\'' || c == '\\')
				continue;
			if (c == gres[g])
				g++;
			else
				g = c == '-' ? (g == 2 ? 2 : 1) : 0;
			if (g == 6)
				times++, g = 0;
			if (lc == mem[m])
				m++;
			else
				m = lc == 'm';
			if (m == 3)
				has_mem = 1, m = 0;
		}
		p = nl ? nl + 1 : end;
	}
	return (times >= 2 && has_mem) || (past && asks_mem);
}

#endif
