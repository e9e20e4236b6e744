/* The job_submit memo (gpumem_cache.h) when memory runs out: strdup is replaced by a
 * wrapper that fails on a chosen call. A memo hit copies each out[] and the refusal; a
 * copy that fails must make the hit a miss (return 0, every out[] and the refusal NULL,
 * changed[] 0), never an answer with that field missing, which would unset the field in
 * Slurm's job. A put whose copy fails must leave the slot empty.
 * Prints "ok HITS PUTS" (the strdups a hit and a put make) and exits 0, or names each
 * failure and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int strdup_calls, strdup_fail_at; /* fail_at: the call that fails, 1-based; 0: none */

static char *test_strdup(const char *s)
{
	if (++strdup_calls == strdup_fail_at)
		return NULL;
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	return p ? memcpy(p, s, n) : NULL;
}

#define strdup test_strdup
#include "gpumem_cache.h"
#undef strdup

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf(__VA_ARGS__); putchar('\n'); } } while (0)

/* The memo's job: a few inputs, several rewritten fields (one of them unset: changed with
 * a NULL out), and a refusal, so a hit copies several strings. */
static void fill(struct gpumem_job *j)
{
	memset(j, 0, sizeof(*j));
	j->in[GPUMEM_PER_NODE] = "gres/gpu:mem:20g";
	j->in[GPUMEM_PARTITION] = "gpu";
	j->num[GPUMEM_MIN_NODES] = 1;
	j->fresh_ns = 60LL * 1000000000;
}

static const char *want_out[GPUMEM_SLOTS] = {
	[GPUMEM_PER_NODE] = "gres/shard:h100:20",
	[GPUMEM_PER_JOB] = NULL, /* changed: unset */
	[GPUMEM_PARTITION] = "gpu",
	[GPUMEM_REQ_NODES] = "n1",
};
static const int want_changed[GPUMEM_SLOTS] = {
	[GPUMEM_PER_NODE] = 1, [GPUMEM_PER_JOB] = 1, [GPUMEM_PARTITION] = 1, [GPUMEM_REQ_NODES] = 1,
};
static const char *want_refusal = "gpumem: a test refusal";

static void put(struct gpumem_cache *c)
{
	struct gpumem_job j;
	fill(&j);
	for (int i = 0; i < GPUMEM_SLOTS; i++) {
		j.changed[i] = want_changed[i];
		j.out[i] = want_out[i] ? (char *)want_out[i] : NULL;
	}
	j.refusal = (char *)want_refusal;
	gpumem_cache_put(c, &j, GPUMEM_SUBMIT_NSLOTS); /* copies; j's strings stay ours */
}

/* get asks the memo for the same job, its out[] and changed[] holding what a caller
 * might have left there, and returns what gpumem_cache_get returned, checking the job. */
static int get(struct gpumem_cache *c, const char *what)
{
	struct gpumem_job j;
	fill(&j);
	for (int i = 0; i < GPUMEM_SLOTS; i++)
		j.changed[i] = 7;
	int hit = gpumem_cache_get(c, &j, GPUMEM_SUBMIT_NSLOTS);
	for (int i = 0; i < GPUMEM_SLOTS; i++) {
		if (!hit) {
			CHECK(!j.out[i] && !j.changed[i], "%s: a miss left slot %d: out %s, changed %d", what, i,
			      j.out[i] ? j.out[i] : "NULL", j.changed[i]);
		} else {
			CHECK(j.changed[i] == want_changed[i], "%s: slot %d changed %d, want %d", what, i, j.changed[i], want_changed[i]);
			CHECK(!j.out[i] == !want_out[i] && (!j.out[i] || strcmp(j.out[i], want_out[i]) == 0),
			      "%s: slot %d out %s, want %s", what, i, j.out[i] ? j.out[i] : "NULL", want_out[i] ? want_out[i] : "NULL");
		}
		free(j.out[i]);
	}
	if (!hit)
		CHECK(!j.refusal, "%s: a miss left the refusal %s", what, j.refusal);
	else
		CHECK(j.refusal && strcmp(j.refusal, want_refusal) == 0, "%s: refusal %s, want %s", what,
		      j.refusal ? j.refusal : "NULL", want_refusal);
	free(j.refusal);
	return hit;
}

int main(void)
{
	static struct gpumem_cache c = {.mu = PTHREAD_MUTEX_INITIALIZER};
	char what[64];

	/* With memory: a put, then a hit with every field; count the strdups each makes. */
	strdup_calls = 0;
	put(&c);
	int puts = strdup_calls;
	strdup_calls = 0;
	CHECK(get(&c, "no failure"), "no failure: a miss, want a hit");
	int hits = strdup_calls;
	CHECK(hits == 4, "a hit made %d strdups, want 4 (three outs and the refusal)", hits);

	/* The k-th copy of a hit fails: a miss with nothing set, and the memo still answers. */
	for (int k = 1; k <= hits; k++) {
		snprintf(what, sizeof(what), "hit, strdup %d of %d fails", k, hits);
		strdup_calls = 0;
		strdup_fail_at = k;
		CHECK(!get(&c, what), "%s: a hit, want a miss", what);
		CHECK(strdup_calls >= k, "%s: only %d strdups made", what, strdup_calls);
		strdup_fail_at = 0;
		snprintf(what, sizeof(what), "after hit failure %d", k);
		CHECK(get(&c, what), "%s: a miss, want the memo still there", what);
	}

	/* The k-th copy of a put fails: the slot stays empty. */
	for (int k = 1; k <= puts; k++) {
		gpumem_cache_reset(&c);
		strdup_calls = 0;
		strdup_fail_at = k;
		put(&c);
		strdup_fail_at = 0;
		snprintf(what, sizeof(what), "put, strdup %d of %d fails", k, puts);
		CHECK(!get(&c, what), "%s: a hit, want an empty slot", what);
	}

	gpumem_cache_reset(&c);
	if (failures)
		return 1;
	printf("ok %d %d\n", hits, puts);
	return 0;
}
