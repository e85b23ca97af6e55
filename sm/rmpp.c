// SPDX-License-Identifier: MIT
/*
 * rmpp.c - umc-sm's RMPP sender (IBA 13.6.3) for GetTable responses.
 *
 * A response that fits one MAD goes out at once as a lone segment (First
 * and Last set), and nothing but its TID is kept (the port's last
 * UMC_SM_RMPP_LONE_TIDS, so that the receiver's ACK of it is known as due,
 * not stale): a lost one is recovered by the client asking again.  A larger one becomes a transfer, keyed by the
 * requesting port and the TransactionID: segment 1 first (a window of
 * one), then whatever each ACK's NewWindowLast allows, at most
 * UMC_SM_RMPP_MAX_WINDOW segments beyond the last ACK.  Loss is repaired
 * two ways: an ACK for less than was sent (the receiver saw a gap, or
 * repeats its last ACK on a resent segment) makes what follows it go
 * again, once per ACK value; and a window with no progress for
 * UMC_SM_RMPP_RESEND_MS is resent, UMC_SM_RMPP_RETRIES times, after which
 * the transfer is aborted (ABORT, status TMR).  Whatever its progress, a
 * transfer still open after cfg.rmpp_time_ms is aborted too (ABORT,
 * status T2L, total time too long): a receiver that ACKs one segment at
 * a time cannot hold it, and its share of UMC_SM_RMPP_MAX_BYTES, for
 * minutes.  The final ACK, a STOP or an ABORT ends a transfer.  A
 * GetTable that repeats the TID of a transfer in progress (the client lost
 * segment 1) starts it over.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "wire/ib_rmpp.h"

static struct umc_sm_rmpp_txn *txn_find(struct umc_sm_port *port, uint64_t tid)
{
	struct umc_sm_rmpp_txn *t;

	for (t = port->txns; t; t = t->next)
		if (t->hdr.mad.tid == tid)
			return t;
	return NULL;
}

static void txn_free(struct umc_sm *sm, struct umc_sm_rmpp_txn *t)
{
	struct umc_sm_rmpp_txn **pp = &t->port->txns;

	while (*pp != t)
		pp = &(*pp)->next;
	*pp = t->next;
	t->port->ntxns--;
	t->port->host->txns--;
	if (t->all_prev)
		t->all_prev->all_next = t->all_next;
	else
		sm->txns = t->all_next;
	if (t->all_next)
		t->all_next->all_prev = t->all_prev;
	sm->ntxns--;
	sm->txn_bytes -= t->len;
	free(t->data);
	free(t);
}

static void send_seg(struct umc_sm *sm, const struct umc_sm_rmpp_txn *t, uint32_t seg)
{
	uint8_t mad[UMC_MAD_SIZE];

	umc_rmpp_seg_encode(mad, &t->hdr, t->data, t->len, seg);
	umc_sm_send_sa(sm, t->port, t->proto_tid, mad);
	sm->cnt.rmpp_segments++;
}

static void send_window(struct umc_sm *sm, struct umc_sm_rmpp_txn *t)
{
	while (t->sent < t->window_last)
		send_seg(sm, t, ++t->sent);
}

static void abort_txn(struct umc_sm *sm, struct umc_sm_rmpp_txn *t, uint8_t status)
{
	uint8_t mad[UMC_MAD_SIZE];

	umc_rmpp_ctl_encode(mad, &t->hdr, UMC_RMPP_TYPE_ABORT, status, 0, 0);
	umc_sm_send_sa(sm, t->port, t->proto_tid, mad);
	txn_free(sm, t);
}

/**
 * umc_sm_rmpp_room - may @port start a transfer?
 * @sm:   the state
 * @port: the requester
 * @tid:  the GetTable's TransactionID
 * @len:  the response's records, in bytes (an upper bound will do)
 *
 * Returns: true if @len fits one MAD (no transfer), or if, without
 * @port's transfer of @tid (which starts over), @port has fewer than
 * cfg.max_rmpp_per_port transfers, its host fewer than
 * cfg.max_rmpp_per_host, and all transfers with this one hold at most
 * UMC_SM_RMPP_MAX_BYTES.
 */
bool umc_sm_rmpp_room(const struct umc_sm *sm, const struct umc_sm_port *port, uint64_t tid,
		      size_t len)
{
	unsigned mine = port->ntxns, host = port->host->txns;
	size_t held = sm->txn_bytes;
	const struct umc_sm_rmpp_txn *t;

	if (umc_rmpp_seg_count(len) <= 1)
		return true;
	for (t = port->txns; t; t = t->next)
		if (t->hdr.mad.tid == tid) { /* it starts over: its share is free */
			mine--, host--;
			held -= t->len;
			break;
		}
	return mine < sm->cfg.max_rmpp_per_port && host < sm->cfg.max_rmpp_per_host &&
	       held + len <= UMC_SM_RMPP_MAX_BYTES;
}

/**
 * umc_sm_rmpp_send - send a GetTable response.
 * @sm:        the state
 * @port:      the requester
 * @proto_tid: the SM-protocol tid of the request datagram (echoed)
 * @r:         the response: r->mad's header and r->table
 * @now:       ms on the SM's clock
 *
 * Returns: 0, or -EBUSY when umc_sm_rmpp_room() says no (the caller
 * answers BUSY), or -ENOMEM.
 */
int umc_sm_rmpp_send(struct umc_sm *sm, struct umc_sm_port *port, uint32_t proto_tid,
		     const struct umc_sm_sa_reply *r, uint64_t now)
{
	struct umc_sm_rmpp_txn *t;
	struct umc_sa_hdr h;
	uint8_t mad[UMC_MAD_SIZE];

	umc_sa_hdr_decode(r->mad, UMC_MAD_SIZE, &h);
	if (umc_rmpp_seg_count(r->table_len) == 1) {
		umc_rmpp_seg_encode(mad, &h, r->table, r->table_len, 1);
		umc_sm_send_sa(sm, port, proto_tid, mad);
		sm->cnt.rmpp_segments++;
		port->lone_tids[port->lone_next] = h.mad.tid;
		port->lone_valid |= (uint8_t)(1u << port->lone_next);
		port->lone_next = (uint8_t)((port->lone_next + 1) % UMC_SM_RMPP_LONE_TIDS);
		return 0;
	}
	if (!umc_sm_rmpp_room(sm, port, h.mad.tid, r->table_len))
		return -EBUSY;
	t = txn_find(port, h.mad.tid);
	if (t)
		txn_free(sm, t);
	t = calloc(1, sizeof(*t));
	if (!t || !(t->data = malloc(r->table_len))) {
		free(t);
		return -ENOMEM;
	}
	memcpy(t->data, r->table, r->table_len);
	t->len = r->table_len;
	t->hdr = h;
	t->port = port;
	t->proto_tid = proto_tid;
	t->nseg = umc_rmpp_seg_count(r->table_len);
	t->window_last = 1;
	t->deadline = now + UMC_SM_RMPP_RESEND_MS;
	t->give_up = now + sm->cfg.rmpp_time_ms;
	t->next = port->txns;
	port->txns = t;
	port->ntxns++;
	port->host->txns++;
	t->all_next = sm->txns;
	if (sm->txns)
		sm->txns->all_prev = t;
	sm->txns = t;
	sm->ntxns++;
	sm->txn_bytes += t->len;
	sm->cnt.rmpp_transfers++;
	send_window(sm, t);
	return 0;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static void take_ack(struct umc_sm *sm, struct umc_sm_rmpp_txn *t, const struct umc_sa_hdr *h,
		     uint64_t now)
{
	uint32_t seg = h->rmpp.seg_num, nwl = h->rmpp.paylen_newwin;
	bool moved = false; /* progress, or something to send: the timer restarts */

	sm->cnt.rmpp_acks++;
	if (seg > t->sent) { /* acknowledges what was never sent */
		sm->cnt.rmpp_aborted++;
		return abort_txn(sm, t, UMC_RMPP_STATUS_S2B);
	}
	if (nwl < seg) {
		sm->cnt.rmpp_aborted++;
		return abort_txn(sm, t, UMC_RMPP_STATUS_W2S);
	}
	if (seg < t->last_ack) /* an old ACK overtaken by a newer one */
		return;
	if (seg == t->nseg)
		return txn_free(sm, t); /* complete */
	if (seg > t->last_ack) {
		t->last_ack = seg;
		t->retries = 0;
		t->resent_for_ack = false;
		moved = true;
	}
	if (seg < t->sent && !t->resent_for_ack) {
		/* the receiver has less than we sent: it lost seg + 1 (once per ACK value) */
		t->resent_for_ack = true;
		t->sent = seg;
		sm->cnt.rmpp_resends++;
		moved = true;
	}
	nwl = min_u32(min_u32(nwl, t->nseg), t->last_ack + UMC_SM_RMPP_MAX_WINDOW);
	if (nwl > t->window_last) {
		t->window_last = nwl;
		moved = true;
	}
	/*
	 * An ACK that neither acknowledges more nor lets anything go leaves the
	 * timer running: else repeating it would keep a stalled transfer (and
	 * its share of UMC_SM_RMPP_MAX_BYTES) alive for good.
	 */
	if (moved)
		t->deadline = now + UMC_SM_RMPP_RESEND_MS;
	send_window(sm, t);
}

static_assert(UMC_SM_RMPP_LONE_TIDS <= 8, "umc_sm_port.lone_valid has a bit for each");

/* Is @h the (first) ACK of a one-MAD answer @port got lately?  It is forgotten then. */
static bool lone_ack(struct umc_sm_port *port, const struct umc_sa_hdr *h)
{
	unsigned i;

	if (h->rmpp.type != UMC_RMPP_TYPE_ACK || h->rmpp.seg_num != 1)
		return false;
	for (i = 0; i < UMC_SM_RMPP_LONE_TIDS; i++)
		if ((port->lone_valid & 1u << i) && port->lone_tids[i] == h->mad.tid) {
			port->lone_valid &= (uint8_t)~(1u << i);
			return true;
		}
	return false;
}

/**
 * umc_sm_rmpp_control - an RMPP ACK, STOP or ABORT from a receiver.
 * @sm:   the state
 * @port: the port it came from
 * @h:    its header (RMPP active, type not DATA)
 * @now:  ms on the SM's clock
 *
 * An ACK for a segment never sent, or whose NewWindowLast is below its
 * SegmentNumber, aborts the transfer (ABORT S2B / W2S, IBA 13.6.3.2).
 */
void umc_sm_rmpp_control(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sa_hdr *h,
			 uint64_t now)
{
	struct umc_sm_rmpp_txn *t = txn_find(port, h->mad.tid);

	if (!t) {
		if (lone_ack(port, h))
			sm->cnt.rmpp_acks++;
		else
			sm->cnt.rmpp_stale++;
		return;
	}
	if (h->rmpp.type == UMC_RMPP_TYPE_ACK)
		return take_ack(sm, t, h, now);
	sm->cnt.rmpp_aborted++;
	txn_free(sm, t);
}

/**
 * umc_sm_rmpp_tick - resend windows without progress, give up on dead ones
 * and on those past their total time limit.
 * @sm:  the state
 * @now: ms on the SM's clock
 *
 * Returns: the earliest deadline of the transfers left, or UMC_SM_NO_DEADLINE.
 */
uint64_t umc_sm_rmpp_tick(struct umc_sm *sm, uint64_t now)
{
	struct umc_sm_rmpp_txn *t, *next;
	uint64_t soonest = UMC_SM_NO_DEADLINE;

	for (t = sm->txns; t; t = next) {
		next = t->all_next;
		if (t->give_up <= now) {
			sm->cnt.rmpp_too_long++;
			abort_txn(sm, t, UMC_RMPP_STATUS_T2L);
			continue;
		}
		if (t->deadline <= now) {
			if (++t->retries > UMC_SM_RMPP_RETRIES) {
				sm->cnt.rmpp_timeouts++;
				abort_txn(sm, t, UMC_RMPP_STATUS_TMR);
				continue;
			}
			sm->cnt.rmpp_resends++;
			t->sent = t->last_ack;
			t->deadline = now + UMC_SM_RMPP_RESEND_MS;
			send_window(sm, t);
		}
		if (t->deadline < soonest)
			soonest = t->deadline;
		if (t->give_up < soonest)
			soonest = t->give_up;
	}
	return soonest;
}

/**
 * umc_sm_rmpp_port_gone - drop every transfer to @port (it is being removed).
 */
void umc_sm_rmpp_port_gone(struct umc_sm *sm, struct umc_sm_port *port)
{
	while (port->txns)
		txn_free(sm, port->txns);
}
