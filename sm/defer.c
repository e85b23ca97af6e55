// SPDX-License-Identifier: MIT
/*
 * defer.c - the requests that wait, and the order they are served in.
 *
 * The handler answers at once what keeps registered ports alive and in
 * their groups (RENEW, UNREGISTER, RESOLVE, Set, Delete, a Get of one
 * group, RMPP control), each costing microseconds.  What may cost much
 * more, a REGISTER of a new port (main.c asks the kernel who sent it) and
 * an MCMemberRecord query that scans every group (building and sorting up
 * to 16383 records), waits here; main.c serves it between reads of the
 * socket, so that no renewal waits behind it (umc_sm_work()).
 *
 * Queries wait on their port's source host; the hosts with queries take
 * turns, one query each, so one host's flood delays another host's query
 * by one query per flooding host, not by the whole flood.  REGISTERs wait
 * on one queue and take turns with the hosts.  Each queue is bounded
 * (UMC_SM_DEFER_REGISTER, UMC_SM_DEFER_QUERIES_PER_HOST,
 * UMC_SM_DEFER_QUERIES): a full one refuses the request, which the
 * handler drops (a REGISTER: the client sends it again) or answers BUSY.
 */
#include <errno.h>
#include <stdlib.h>

#include "sm.h"

/*
 * The hosts with waiting queries are a circular list; q->ring is its last
 * host, so q->ring->ring_next is the one whose turn it is.
 */
static void ring_add(struct umc_sm_defer *q, struct umc_sm_host *h)
{
	if (!q->ring) {
		h->ring_next = h;
	} else {
		h->ring_next = q->ring->ring_next;
		q->ring->ring_next = h;
	}
	q->ring = h; /* last in this round */
}

static void ring_remove(struct umc_sm_defer *q, struct umc_sm_host *h)
{
	struct umc_sm_host *prev = h;

	while (prev->ring_next != h)
		prev = prev->ring_next;
	if (prev == h) {
		q->ring = NULL;
	} else {
		prev->ring_next = h->ring_next;
		if (q->ring == h)
			q->ring = prev;
	}
	h->ring_next = NULL;
}

/**
 * umc_sm_defer - queue a request to serve later.
 * @sm: the state
 * @d:  the request (copied): d->port set for a query, NULL for a REGISTER
 *
 * Returns: 0; -ENOBUFS when its queue is full (the REGISTER queue, the
 * query's host's queue or all queries together); -ENOMEM.
 */
int umc_sm_defer(struct umc_sm *sm, const struct umc_sm_deferred *d)
{
	struct umc_sm_defer *q = &sm->defer;
	struct umc_sm_host *h = d->port ? d->port->host : NULL;
	struct umc_sm_deferred *c;

	if (h ? h->queued >= UMC_SM_DEFER_QUERIES_PER_HOST || q->nqueries >= UMC_SM_DEFER_QUERIES
	      : q->nreg >= UMC_SM_DEFER_REGISTER)
		return -ENOBUFS;
	c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = *d;
	c->next = NULL;
	if (h) {
		*h->queue_tail = c;
		h->queue_tail = &c->next;
		h->queued++;
		q->nqueries++;
		if (!h->ring_next)
			ring_add(q, h);
	} else {
		if (!q->reg)
			q->reg_tail = &q->reg;
		*q->reg_tail = c;
		q->reg_tail = &c->next;
		q->nreg++;
	}
	sm->cnt.deferred++;
	return 0;
}

static struct umc_sm_deferred *pop_query(struct umc_sm_defer *q)
{
	struct umc_sm_host *h = q->ring->ring_next;
	struct umc_sm_deferred *d = h->queue;

	h->queue = d->next;
	if (!h->queue)
		h->queue_tail = &h->queue;
	h->queued--;
	q->nqueries--;
	if (!h->queued)
		ring_remove(q, h); /* its predecessor is q->ring: O(1) */
	else
		q->ring = h; /* last now: the next host's turn */
	return d;
}

/**
 * umc_sm_defer_next - take the next waiting request.
 * @sm: the state
 *
 * REGISTERs and the hosts' queries take turns; among the hosts, one query
 * each in turn.
 *
 * Returns: the request, which the caller serves and frees, or NULL.
 */
struct umc_sm_deferred *umc_sm_defer_next(struct umc_sm *sm)
{
	struct umc_sm_defer *q = &sm->defer;
	struct umc_sm_deferred *d;

	if (q->reg && (q->reg_next || !q->ring)) {
		d = q->reg;
		q->reg = d->next;
		q->nreg--;
		q->reg_next = false;
		return d;
	}
	q->reg_next = true;
	return q->ring ? pop_query(q) : NULL;
}

/**
 * umc_sm_defer_port_gone - drop the queries of a port that is being
 * removed (they would be answered to a port that no longer exists).
 */
void umc_sm_defer_port_gone(struct umc_sm *sm, struct umc_sm_port *port)
{
	struct umc_sm_host *h = port->host;
	struct umc_sm_deferred **pp = &h->queue, *d;

	if (!h->queued)
		return;
	while ((d = *pp)) {
		if (d->port != port) {
			pp = &d->next;
			continue;
		}
		*pp = d->next;
		free(d);
		h->queued--;
		sm->defer.nqueries--;
	}
	h->queue_tail = pp;
	if (!h->queued)
		ring_remove(&sm->defer, h);
}

/**
 * umc_sm_defer_fini - free every waiting REGISTER (the queries went with
 * their ports).
 */
void umc_sm_defer_fini(struct umc_sm *sm)
{
	struct umc_sm_deferred *d;

	while ((d = sm->defer.reg)) {
		sm->defer.reg = d->next;
		free(d);
	}
	sm->defer.nreg = 0;
}
