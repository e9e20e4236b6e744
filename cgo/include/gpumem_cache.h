/* What job_submit keeps between jobs, so that most jobs never enter the Go runtime.
 *
 * Entering Go from one of slurmctld's threads is what costs, not the decision: every RPC
 * runs on a new thread, which Go must adopt (signal stacks and masks), and the processor
 * it leaves parked in a "system call" keeps Go's monitor thread waking every 20 us until
 * it is taken back. Measured on 22.05 that was about 100 us of slurmctld CPU per job for
 * a decision that takes 2 us.
 *
 * So the shim answers two kinds of job itself:
 *  - a job whose GRES fields hold no "mem" in any case, which gpumem leaves alone
 *    (gpumem_has_mem, the same test as Go's plugin.AsksMem, checked against it by a test);
 *  - a job whose fields equal a recent one's, with that job's answer, for as long as Go
 *    said it stays right (fresh_ns: until Go next looks at the inventory), so a changed
 *    inventory is seen exactly as soon as without this memo.
 * Go decides everything else. */
#ifndef GPUMEM_CACHE_H
#define GPUMEM_CACHE_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpumem_job.h"

/* Sites use a handful of sizes; a small table holds them all, and a collision only
 * costs one decision in Go. */
#define GPUMEM_CACHE_SLOTS 64

struct gpumem_memo {
	struct gpumem_job v; /* in[] owned copies (strdup), out[] and refusal too */
	int64_t until_ns;    /* CLOCK_MONOTONIC; 0: slot empty */
};

struct gpumem_cache {
	pthread_mutex_t mu; /* slurmctld >= 23.02 calls job_submit from several threads at once */
	struct gpumem_memo slot[GPUMEM_CACHE_SLOTS];
};

/* A conservative prefilter for pinning: Go pins only N untyped shards, which says "shard". */
static inline int gpumem_has_shard(const char *s) { return s && strstr(s, "shard") != NULL; }

static inline int64_t gpumem_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The key of a memo is everything Go reads: the first n strings and every number.
 * gpumem_slot_of is FNV-1a over them, each string ended by a byte that tells NULL from "". */
static inline unsigned gpumem_slot_of(const struct gpumem_job *j, int n)
{
	uint64_t h = 1469598103934665603ULL;
	for (int i = 0; i < n; i++) {
		for (const char *p = j->in[i]; p && *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
		h = (h ^ (j->in[i] ? 1 : 2)) * 1099511628211ULL;
	}
	for (int i = 0; i < GPUMEM_NUMS; i++)
		h = (h ^ j->num[i]) * 1099511628211ULL;
	return (unsigned)(h % GPUMEM_CACHE_SLOTS);
}

static inline int gpumem_same_in(const struct gpumem_job *a, const struct gpumem_job *b, int n)
{
	if (memcmp(a->num, b->num, sizeof(a->num)) != 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (!a->in[i] != !b->in[i])
			return 0;
		if (a->in[i] && strcmp(a->in[i], b->in[i]) != 0)
			return 0;
	}
	return 1;
}

static inline char *gpumem_strdup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static inline void gpumem_memo_clear(struct gpumem_memo *m)
{
	for (int i = 0; i < GPUMEM_SLOTS; i++) {
		free((void *)m->v.in[i]);
		free(m->v.out[i]);
	}
	free(m->v.refusal);
	memset(m, 0, sizeof(*m));
}

/* gpumem_cache_get copies a fresh answer for j's first n inputs into j (out[] and refusal
 * malloc'd, as Go's are) and returns 1, or returns 0 when Go must decide. A copy that
 * fails for want of memory is a miss, never an answer with a field missing (which would
 * unset that field in the job). */
static inline int gpumem_cache_get(struct gpumem_cache *c, struct gpumem_job *j, int n)
{
	int hit = 0;
	pthread_mutex_lock(&c->mu);
	struct gpumem_memo *m = &c->slot[gpumem_slot_of(j, n)];
	if (m->until_ns && gpumem_now_ns() < m->until_ns && gpumem_same_in(&m->v, j, n)) {
		hit = 1;
		for (int i = 0; i < GPUMEM_SLOTS; i++) {
			j->changed[i] = m->v.changed[i];
			j->out[i] = gpumem_strdup_or_null(m->v.out[i]);
			hit &= j->out[i] || !m->v.out[i];
		}
		j->refusal = gpumem_strdup_or_null(m->v.refusal);
		hit &= j->refusal || !m->v.refusal;
	}
	pthread_mutex_unlock(&c->mu);
	if (!hit) {
		for (int i = 0; i < GPUMEM_SLOTS; i++) {
			free(j->out[i]);
			j->out[i] = NULL;
			j->changed[i] = 0;
		}
		free(j->refusal);
		j->refusal = NULL;
	}
	return hit;
}

/* gpumem_cache_put keeps Go's answer in j for as long as Go said it stays right. A copy
 * that fails for want of memory just leaves the slot empty. */
static inline void gpumem_cache_put(struct gpumem_cache *c, const struct gpumem_job *j, int n)
{
	if (j->fresh_ns <= 0)
		return;
	pthread_mutex_lock(&c->mu);
	struct gpumem_memo *m = &c->slot[gpumem_slot_of(j, n)];
	gpumem_memo_clear(m);
	int ok = 1;
	for (int i = 0; i < n; i++)
		ok &= (m->v.in[i] = gpumem_strdup_or_null(j->in[i])) != NULL || !j->in[i];
	memcpy(m->v.num, j->num, sizeof(m->v.num));
	for (int i = 0; i < GPUMEM_SLOTS; i++) {
		m->v.changed[i] = j->changed[i];
		ok &= (m->v.out[i] = gpumem_strdup_or_null(j->out[i])) != NULL || !j->out[i];
	}
	ok &= (m->v.refusal = gpumem_strdup_or_null(j->refusal)) != NULL || !j->refusal;
	if (ok)
		m->until_ns = gpumem_now_ns() + j->fresh_ns;
	else
		gpumem_memo_clear(m);
	pthread_mutex_unlock(&c->mu);
}

/* gpumem_cache_reset forgets every answer: a new init() may read a new configuration. */
static inline void gpumem_cache_reset(struct gpumem_cache *c)
{
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < GPUMEM_CACHE_SLOTS; i++)
		gpumem_memo_clear(&c->slot[i]);
	pthread_mutex_unlock(&c->mu);
}

#endif
