// SPDX-License-Identifier: MIT
/*
 * sa_txn.c - the SA client's MAD transactions: send, resend, time out,
 * match responses, reassemble RMPP, call back, cancel (sa_client.h).
 *
 * A transaction is found by its TransactionID in a hash of
 * UMC_SA_TXN_BUCKETS chains (the low bits of our TIDs count up, so they
 * spread evenly) and sits on one of two lists: c->sent, which the timer
 * walks, or c->queue.  A callback runs with the transaction already
 * unlinked and c->calling set to its id, the lock dropped; umc_sa_cancel()
 * waits on c->cond for that mark to clear.
 *
 * The window.  The responses to what is sent land in one socket buffer,
 * and whatever does not fit is dropped by the kernel: the default
 * (net.core.rmem_default, 212992 bytes) holds 166 of umc-sm's datagrams.
 * umc-sm answers a burst of requests faster than a busy client thread
 * reads, so a process that starts thousands of joins at once lost most of
 * the responses, and the resends, sent together again, were lost
 * together again until the joins timed out.  So the transactions sent
 * may bring at most UMC_SA_WINDOW response datagrams between them: each
 * weighs 1, or UMC_SA_RMPP_WINDOW when its response comes by RMPP (the
 * segments we let the SM send per ACK).  The others wait on c->queue, in
 * order, and are sent as responses make room (as the kernel's MAD layer
 * holds sends beyond its queue on an overflow list, ib_mad.c).  A sent
 * transaction has its whole timeout from the moment it is sent; a queued
 * one is not timed while the SA answers others, but fails with -ETIMEDOUT
 * once both its own timeout since umc_sa_send() and the timeout since the
 * SA's last response have passed.  A timeout makes room for the next
 * only if the SA answered something after the request went out (it
 * ignored that one request, as umc-sm does one with a wrong SM_Key);
 * otherwise the SA may be gone, and the queue's head is sent only once
 * nothing else is in flight, as a probe.  So a silent SA fails every
 * transaction within its timeout, as before, and a storm never fails one
 * the SA would answer in time.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_int.h"
#include "umc_int.h"
#include "wire/be.h"

static struct umc_sa_txn **bucket(struct umc_sa_client *c, uint64_t tid)
{
	return &c->buckets[tid & (UMC_SA_TXN_BUCKETS - 1)];
}

static struct umc_sa_txn *txn_find(struct umc_sa_client *c, uint64_t tid)
{
	struct umc_sa_txn *t;

	for (t = *bucket(c, tid); t; t = t->hnext)
		if (t->tid == tid)
			return t;
	return NULL;
}

static void list_append(struct umc_sa_txn_list *l, struct umc_sa_txn *t)
{
	t->next = NULL;
	t->prev = l->tail;
	if (l->tail)
		l->tail->next = t;
	else
		l->head = t;
	l->tail = t;
}

static void list_remove(struct umc_sa_txn_list *l, struct umc_sa_txn *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		l->head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		l->tail = t->prev;
}

static void txn_link(struct umc_sa_client *c, struct umc_sa_txn *t)
{
	struct umc_sa_txn **b = bucket(c, t->tid);

	t->hnext = *b;
	*b = t;
	c->ntxns++;
}

static void txn_unlink(struct umc_sa_client *c, struct umc_sa_txn *t)
{
	struct umc_sa_txn **pp = bucket(c, t->tid);

	while (*pp != t)
		pp = &(*pp)->hnext;
	*pp = t->hnext;
	if (t->queued) {
		list_remove(&c->queue, t);
	} else {
		list_remove(&c->sent, t);
		c->window -= t->weight;
	}
	c->ntxns--;
}

static void txn_free(struct umc_sa_txn *t)
{
	umc_rmpp_rx_free(&t->rx);
	free(t);
}

static void xmit_mad(struct umc_sa_client *c, const uint8_t *mad)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA }, .mad = mad };

	umc_sa_xmit(c, &m);
}

/*
 * Send @t's request, unless an injected fault (umc_sa_open_args.fault)
 * loses it, or answers it: then it completes at once, on the thread, with
 * the request echoed as a GetResp carrying the fault's status (the timers
 * find it due).
 */
static void txn_send(struct umc_sa_client *c, struct umc_sa_txn *t)
{
	bool first = !t->sent;

	if (!c->attr.active)
		return;
	t->sent = true;
	if (umc_unlikely(c->fault)) {
		switch (c->fault(c->fault_ctx, t->mad, first, &t->reject)) {
		case UMC_SA_FAULT_NONE:
			break;
		case UMC_SA_FAULT_REJECT:
			t->resend_at = 0;
			return;
		default:
			return;
		}
	}
	xmit_mad(c, t->mad);
}

/* Every SA response so far. */
static uint64_t heard(const struct umc_sa_client *c)
{
	return c->cnt.responses + c->cnt.stale;
}

/* @t's next timer is due at @when: make the thread look then. */
static void timer_at(struct umc_sa_client *c, uint64_t when)
{
	if (when < c->next_timer) {
		c->next_timer = when;
		umc_sa_wake(c);
	}
}

/* Send @t, linked, not on any list, now: it has its whole timeout from here. */
static void txn_start(struct umc_sa_client *c, struct umc_sa_txn *t, uint64_t now)
{
	t->queued = false;
	list_append(&c->sent, t);
	c->window += t->weight;
	c->cnt.sent++;
	t->heard = heard(c);
	t->deadline = now + t->timeout;
	t->resend_at = now + t->interval;
	txn_send(c, t);
	timer_at(c, t->resend_at);
}

static bool window_has_room(const struct umc_sa_client *c, const struct umc_sa_txn *t)
{
	return !c->window || c->window + t->weight <= UMC_SA_WINDOW;
}

/*
 * Send what waits, in order, while the window has room; a @probe only
 * while nothing is in flight.  Lock held.
 */
static void pump(struct umc_sa_client *c, uint64_t now, bool probe)
{
	struct umc_sa_txn *t;

	while ((t = c->queue.head) && window_has_room(c, t) && (!probe || !c->window)) {
		list_remove(&c->queue, t);
		txn_start(c, t, now);
	}
}

/* When queued @t fails: its own timeout, and the SA's silence, both past. */
static uint64_t queued_expiry(const struct umc_sa_client *c, const struct umc_sa_txn *t)
{
	uint64_t silent = c->last_reply + t->timeout;

	return t->deadline > silent ? t->deadline : silent;
}

void umc_sa_txn_init(struct umc_sa_client *c)
{
	c->next_timer = UINT64_MAX;
	c->queue_check = UINT64_MAX;
}

/* Run @t's callback and free it.  Lock held; dropped during the callback. */
static void complete(struct umc_sa_client *c, struct umc_sa_txn *t, int err,
		     const struct umc_sa_reply *reply)
{
	bool queued = t->queued, silent = err == -ETIMEDOUT && heard(c) == t->heard;

	txn_unlink(c, t);
	if (!queued) /* room in the window: the next request goes out before the callback runs */
		pump(c, umc_sa_now_ms(), silent);
	if (err == -ETIMEDOUT)
		c->cnt.timeouts++;
	c->calling = t->tid;
	umc_mutex_unlock(&c->lock);
	t->cb(t->ctx, err, reply);
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	c->calling = 0;
	pthread_cond_broadcast(&c->cond);
	txn_free(t);
}

int umc_sa_send(struct umc_sa_client *c, const uint8_t *mad, unsigned timeout_ms,
		unsigned retries, umc_sa_cb cb, void *ctx, uint64_t *id)
{
	struct umc_sa_txn *t;
	uint64_t now = umc_sa_now_ms();

	if (!mad || !cb)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (!timeout_ms)
		timeout_ms = UMC_SA_TIMEOUT_MS;
	t->cb = cb;
	t->ctx = ctx;
	t->timeout = timeout_ms;
	t->interval = timeout_ms / (retries + 1);
	if (!t->interval)
		t->interval = 1;
	t->weight = umc_sa_method_uses_rmpp(mad[offsetof(struct umc_sa_mad_wire, method)])
			    ? UMC_SA_RMPP_WINDOW
			    : 1;
	memcpy(t->mad, mad, UMC_MAD_SIZE);
	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	do
		t->tid = (uint64_t)c->tid_hi << 32 | ++c->tid_lo;
	while (!t->tid || txn_find(c, t->tid));
	put_be64(((struct umc_sa_mad_wire *)(void *)t->mad)->tid, t->tid);
	txn_link(c, t);
	if (!c->queue.head && window_has_room(c, t)) {
		txn_start(c, t, now);
	} else {
		t->queued = true;
		t->deadline = now + timeout_ms;
		list_append(&c->queue, t);
		c->cnt.waited++;
		if (t->deadline < c->queue_check)
			c->queue_check = t->deadline;
		timer_at(c, c->queue_check);
	}
	if (id)
		*id = t->tid;
	umc_mutex_unlock(&c->lock);
	return 0;
}

int umc_sa_cancel(struct umc_sa_client *c, uint64_t id)
{
	struct umc_sa_txn *t;
	int rc = -ENOENT;

	umc_mutex_lock(&c->lock, UMC_LOCK_SA_CLIENT);
	t = id ? txn_find(c, id) : NULL;
	if (t) {
		txn_unlink(c, t);
		txn_free(t);
		pump(c, umc_sa_now_ms(), false);
		rc = 0;
	} else if (c->thread_started && !pthread_equal(pthread_self(), c->thread)) {
		while (c->calling == id && id)
			pthread_cond_wait(&c->cond, &c->lock);
	}
	umc_mutex_unlock(&c->lock);
	return rc;
}

/* An RMPP control MAD back to the SM for the transfer of segment header @h. */
static void send_ctl(struct umc_sa_client *c, const struct umc_sa_hdr *h, uint8_t type,
		     uint8_t status, uint32_t seg, uint32_t newwin)
{
	struct umc_sa_hdr back = *h;
	uint8_t mad[UMC_MAD_SIZE];

	back.mad.method &= (uint8_t)~UMC_MAD_METHOD_RESP; /* the receiver's direction */
	umc_rmpp_ctl_encode(mad, &back, type, status, seg, newwin);
	xmit_mad(c, mad);
}

static void on_segment(struct umc_sa_client *c, struct umc_sa_txn *t, const uint8_t *mad,
		       const struct umc_sa_hdr *h, uint64_t now)
{
	struct umc_rmpp_rx_out o;
	uint32_t before = t->rx.last;
	uint8_t first[UMC_MAD_SIZE];
	struct umc_sa_reply r;
	int act;

	act = umc_rmpp_rx_feed(&t->rx, mad, h, UMC_SA_RMPP_WINDOW, UMC_SA_RMPP_MAX_BYTES, &o);
	if (t->rx.last > before) { /* progress: the SM is sending, stop resending the request */
		t->deadline = now + t->timeout;
		t->resend_at = t->deadline;
	}
	switch (act) {
	case UMC_RMPP_RX_ACK:
		send_ctl(c, h, UMC_RMPP_TYPE_ACK, 0, o.seg_num, o.newwin);
		return;
	case UMC_RMPP_RX_DONE:
		send_ctl(c, h, UMC_RMPP_TYPE_ACK, 0, o.seg_num, o.newwin);
		memcpy(first, t->rx.hdr, UMC_SA_HDR_LEN);
		memset(first + UMC_SA_HDR_LEN, 0, UMC_SA_DATA_LEN);
		memcpy(first + UMC_SA_HDR_LEN, t->rx.data,
		       t->rx.total < UMC_SA_DATA_LEN ? t->rx.total : UMC_SA_DATA_LEN);
		r.status = h->mad.status;
		r.mad = first;
		r.data = t->rx.data;
		r.data_len = t->rx.total;
		complete(c, t, 0, &r);
		return;
	case UMC_RMPP_RX_ABORT:
	case UMC_RMPP_RX_STOP:
		send_ctl(c, h, act == UMC_RMPP_RX_ABORT ? UMC_RMPP_TYPE_ABORT : UMC_RMPP_TYPE_STOP,
			 o.status, 0, 0);
		complete(c, t, -ECONNABORTED, NULL);
		return;
	}
}

/**
 * umc_sa_txn_on_reply - an SA response MAD arrived.
 * @c:   the client, lock held (dropped while a callback runs)
 * @mad: UMC_MAD_SIZE bytes
 * @now: ms
 *
 * Any response shows the SA at work (c->last_reply: queued transactions
 * wait on).  Responses of no pending transaction (late, cancelled) are
 * dropped and counted (stale), and so is an RMPP-active MAD (a DATA
 * segment, an ABORT, a STOP) for a request whose method does not use RMPP
 * (umc_sa_method_uses_rmpp()): a Get, Set or Delete is answered by one
 * MAD, so such a reply always carries the whole 200 bytes of SA data its
 * consumer decodes.
 */
void umc_sa_txn_on_reply(struct umc_sa_client *c, const uint8_t *mad, uint64_t now)
{
	struct umc_sa_reply r;
	struct umc_sa_txn *t;
	struct umc_sa_hdr h;

	if (umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h) || !umc_mad_is_response(h.mad.method))
		return;
	c->last_reply = now;
	t = txn_find(c, h.mad.tid);
	if (!t || t->queued) {
		c->cnt.stale++;
		return;
	}
	c->cnt.responses++;
	if (h.rmpp.version && (h.rmpp.flags & UMC_RMPP_FLAG_ACTIVE)) {
		if (!umc_sa_method_uses_rmpp(t->mad[offsetof(struct umc_sa_mad_wire, method)]))
			return;
		if (h.rmpp.type == UMC_RMPP_TYPE_DATA)
			on_segment(c, t, mad, &h, now);
		else if (h.rmpp.type == UMC_RMPP_TYPE_ABORT || h.rmpp.type == UMC_RMPP_TYPE_STOP)
			complete(c, t, -ECONNABORTED, NULL);
		return;
	}
	r.status = h.mad.status;
	r.mad = mad;
	r.data = mad + UMC_SA_HDR_LEN;
	r.data_len = UMC_SA_DATA_LEN;
	complete(c, t, 0, &r);
}

/* Complete @t as the SA would have rejected it: its request back as a GetResp with t->reject. */
static void reject(struct umc_sa_client *c, struct umc_sa_txn *t)
{
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_sa_mad_wire *w = (struct umc_sa_mad_wire *)(void *)mad;
	struct umc_sa_reply r = {
		.status = t->reject, .mad = mad, .data = mad + UMC_SA_HDR_LEN,
		.data_len = UMC_SA_DATA_LEN,
	};

	memcpy(mad, t->mad, UMC_MAD_SIZE);
	w->method = UMC_MAD_METHOD_GET_RESP;
	put_be16(w->status, t->reject);
	complete(c, t, 0, &r);
}

/**
 * umc_sa_txn_timers - resend what is due, time out what is over.
 * @c:   the client, lock held (dropped while a callback runs)
 * @now: ms
 *
 * Returns: the next time a transaction needs the thread (also c->next_timer).
 */
uint64_t umc_sa_txn_timers(struct umc_sa_client *c, uint64_t now)
{
	struct umc_sa_txn *t;
	uint64_t next = UINT64_MAX, at;

	if (now < c->next_timer)
		return c->next_timer;
	for (t = c->sent.head; t;) {
		if (t->reject) {
			reject(c, t);
			t = c->sent.head;
			continue;
		}
		if (now >= t->deadline) {
			complete(c, t, -ETIMEDOUT, NULL);
			t = c->sent.head; /* the list may have changed while unlocked */
			continue;
		}
		if (now >= t->resend_at) {
			txn_send(c, t);
			c->cnt.resent++;
			t->resend_at = t->reject ? now : now + t->interval;
			if (t->resend_at > t->deadline)
				t->resend_at = t->deadline;
		}
		t = t->next;
	}
	if (now >= c->queue_check) {
		c->queue_check = UINT64_MAX;
		for (t = c->queue.head; t;) {
			at = queued_expiry(c, t);
			if (now >= at) {
				complete(c, t, -ETIMEDOUT, NULL);
				t = c->queue.head;
				continue;
			}
			if (at < c->queue_check)
				c->queue_check = at;
			t = t->next;
		}
	}
	for (t = c->sent.head; t; t = t->next) {
		if (t->resend_at < next)
			next = t->resend_at;
		if (t->deadline < next)
			next = t->deadline;
	}
	if (c->queue_check < next)
		next = c->queue_check;
	c->next_timer = next;
	return next;
}

/**
 * umc_sa_txn_resend_all - the port is registered again: send every pending
 * request now (an RMPP transfer in progress starts over); queued ones wait on.
 * @c:   the client, lock held
 * @now: ms
 */
void umc_sa_txn_resend_all(struct umc_sa_client *c, uint64_t now)
{
	struct umc_sa_txn *t;

	for (t = c->sent.head; t; t = t->next) {
		umc_rmpp_rx_free(&t->rx);
		txn_send(c, t);
		c->cnt.resent++;
		t->resend_at = t->reject ? now : now + t->interval;
		if (t->resend_at > t->deadline)
			t->resend_at = t->deadline;
		if (t->resend_at < c->next_timer)
			c->next_timer = t->resend_at;
	}
}

/** umc_sa_txn_free_all - drop every transaction without calling back (close). */
void umc_sa_txn_free_all(struct umc_sa_client *c)
{
	struct umc_sa_txn *t;

	while ((t = c->queue.head) || (t = c->sent.head)) {
		txn_unlink(c, t);
		txn_free(t);
	}
}

struct call_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int err;
	struct umc_sa_result *res;
};

static void call_cb(void *ctx, int err, const struct umc_sa_reply *reply)
{
	struct call_wait *w = ctx;

	if (!err && reply) {
		w->res->status = reply->status;
		memcpy(w->res->mad, reply->mad, UMC_MAD_SIZE);
		w->res->data = malloc(reply->data_len ? reply->data_len : 1);
		if (w->res->data) {
			memcpy(w->res->data, reply->data, reply->data_len);
			w->res->data_len = reply->data_len;
		} else {
			err = -ENOMEM;
		}
	}
	umc_mutex_lock(&w->lock, UMC_LOCK_SA_CALL);
	w->err = err;
	w->done = true;
	pthread_cond_signal(&w->cond);
	umc_mutex_unlock(&w->lock);
}

int umc_sa_call(struct umc_sa_client *c, const uint8_t *mad, unsigned timeout_ms,
		unsigned retries, struct umc_sa_result *res)
{
	struct call_wait w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER,
			       .res = res };
	int rc, cancel;

	memset(res, 0, sizeof(*res));
	if (c->thread_started && pthread_equal(pthread_self(), c->thread))
		return -EDEADLK;
	/*
	 * The transaction writes @w, on this stack, when it ends: a cancel
	 * must not end the wait first (pthread_cond_wait is a cancellation
	 * point).  The wait is bounded by the transaction's timeout.
	 */
	cancel = umc_cancel_off();
	rc = umc_sa_send(c, mad, timeout_ms, retries, call_cb, &w, NULL);
	if (rc) {
		umc_cancel_restore(cancel);
		return rc;
	}
	umc_mutex_lock(&w.lock, UMC_LOCK_SA_CALL);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	umc_mutex_unlock(&w.lock);
	umc_cancel_restore(cancel);
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	if (w.err)
		umc_sa_result_free(res);
	return w.err;
}

void umc_sa_result_free(struct umc_sa_result *res)
{
	free(res->data);
	res->data = NULL;
	res->data_len = 0;
}
