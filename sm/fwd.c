// SPDX-License-Identifier: MIT
/*
 * fwd.c - umc-sm's multicast forwarding: for each MLID, where its packets
 * go, as a subnet manager programs every switch's MulticastForwardingTable
 * (SMP attribute 0x001B, IBA 14.2.5) from the memberships the SA holds.
 *
 * An MLID is forwarded one of two ways (struct umc_sm_mlfwd):
 *   - MULTICAST: to its IP group on the data port, where each receiving
 *     port has a socket that is an IP member (the map of the REGISTER
 *     reply);
 *   - UNICAST: to the data endpoints of its receiving member ports, the
 *     sender sending one copy to each.  Every MLID is so with
 *     --forwarding unicast; in multicast mode an MLID becomes so when one
 *     of its receiving members reports that it cannot bind the group's
 *     socket (SQUATTED: another local socket holds the port), for the
 *     rest of the epoch.
 * Receiving members are those with JoinState FullMember or NonMember
 * (0x1, 0x2), whose ports have a data endpoint.  OpenSM puts every member
 * port in the tree whatever its JoinState (osm_mcast_make_port_list_and_map;
 * the JoinState-aware osm_mcast_mgr_process_single is compiled out), and
 * the HCA of a send-only member drops the copies, no QP being attached:
 * here a copy costs its sender a datagram, so send-only members get none.
 *
 * A port that sends to an MLID subscribes to it (SUBSCRIBE, when the
 * library makes an address handle to it): it gets the forwarding at once,
 * and each new version (one per change of the receiving members, or the
 * switch to unicast) as a FORWARD that it acknowledges (FWD_ACK) once it
 * sends by it.  Versions grow per MLID, so a late or repeated FORWARD
 * never takes a sender back to an older list.  A version not acknowledged
 * is sent again every UMC_SM_FWD_RESEND_MS, UMC_SM_FWD_TRIES times in all,
 * then once more at each RENEW of its port.  Changes made while one batch
 * of datagrams is handled go out together (umc_sm_fwd_flush).
 *
 * OpenSM answers a join or a leave first and reprograms the switches
 * later (osm_mgrp_add_port calls osm_sm_reroute_mlid, which only flags the
 * MLID for the state manager, then mcmr_rcv_respond sends the reply), so a
 * new member misses what is sent before the tree reaches it.  umc-sm
 * holds the reply to a Set or Delete of an MLID forwarded by unicast until
 * every subscriber acknowledged the version that includes the change, at
 * most --forwarding-wait ms: a member whose join completed is in every
 * list, and one whose leave completed in none, for every sender that
 * keeps up.  A subscriber that lets a hold time out is "lagging" and
 * holds no reply until it acknowledges again, so that one stopped or
 * hostile sender delays a join once, not every join.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "wire/be.h"

/* A Set or Delete reply waiting for its MLID's senders. */
struct umc_sm_held {
	struct umc_sm_mlfwd *f;
	struct umc_sm_held *next;	      /* f's, oldest first */
	struct umc_sm_held *all_prev, *all_next; /* every one, soonest deadline first */
	struct umc_sm_port *port;
	uint32_t tid;
	uint32_t version; /* sent once every subscriber acknowledged this one */
	uint64_t deadline;
	uint8_t mad[UMC_MAD_SIZE];
};

enum { RECEIVING = UMC_JOIN_FULL | UMC_JOIN_NON };

static uint32_t sub_key(uint16_t mlid, const struct umc_sm_port *port)
{
	return (uint32_t)mlid << 16 | port->lid;
}

static struct umc_sm_sub *sub_of(struct umc_hnode *n)
{
	return (void *)((char *)n - offsetof(struct umc_sm_sub, node));
}

static struct umc_sm_sub *sub_find(struct umc_sm *sm, uint16_t mlid, const struct umc_sm_port *port)
{
	uint32_t hv = umc_hash_mix64(sub_key(mlid, port));
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->fwd.subs, hv); n; n = n->next)
		if (n->hash == hv && sub_of(n)->port == port && sub_of(n)->f->mlid == mlid)
			return sub_of(n);
	return NULL;
}

/* @mlid's forwarding (made at first use, with @make); NULL outside the map or out of memory. */
static struct umc_sm_mlfwd *mlfwd_get(struct umc_sm *sm, uint16_t mlid, bool make)
{
	struct umc_sm_mlfwd **slot, *f;

	if (mlid < UMC_SM_MLID_BASE || mlid > sm->cfg.mlid_max)
		return NULL;
	slot = &sm->fwd.by_mlid[mlid - UMC_SM_MLID_BASE];
	if (*slot || !make)
		return *slot;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->mlid = mlid;
	f->unicast = sm->cfg.unicast_fwd;
	f->version = 1;
	f->held_tail = &f->held;
	*slot = f;
	return f;
}

/**
 * umc_sm_fwd_init - no forwarding state yet.
 * @sm: the state (sm->fwd zeroed)
 * Returns: 0 or -ENOMEM.
 */
int umc_sm_fwd_init(struct umc_sm *sm)
{
	size_t n = (size_t)(sm->cfg.mlid_max - UMC_SM_MLID_BASE) + 1;

	sm->fwd.by_mlid = calloc(n, sizeof(*sm->fwd.by_mlid));
	if (!sm->fwd.by_mlid || umc_hash_init(&sm->fwd.subs, 256))
		return -ENOMEM;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Lists.                                                                    */

static void rs_remove(struct umc_sm_fwds *w, struct umc_sm_sub *s)
{
	if (!s->on_resend)
		return;
	if (s->rs_prev)
		s->rs_prev->rs_next = s->rs_next;
	else
		w->rs_head = s->rs_next;
	if (s->rs_next)
		s->rs_next->rs_prev = s->rs_prev;
	else
		w->rs_tail = s->rs_prev;
	s->rs_prev = s->rs_next = NULL;
	s->on_resend = false;
}

static void rs_append(struct umc_sm_fwds *w, struct umc_sm_sub *s)
{
	s->rs_prev = w->rs_tail;
	s->rs_next = NULL;
	if (w->rs_tail)
		w->rs_tail->rs_next = s;
	else
		w->rs_head = s;
	w->rs_tail = s;
	s->on_resend = true;
}

static void set_stale(struct umc_sm_sub *s, bool stale)
{
	if (s->stale == stale)
		return;
	s->stale = stale;
	if (stale)
		s->port->nstale++;
	else
		s->port->nstale--;
}

/* Unlink held reply @h from the list of every held reply. */
static void held_unlink_all(struct umc_sm_fwds *w, struct umc_sm_held *h)
{
	if (h->all_prev)
		h->all_prev->all_next = h->all_next;
	else
		w->held_head = h->all_next;
	if (h->all_next)
		h->all_next->all_prev = h->all_prev;
	else
		w->held_tail = h->all_prev;
	w->nheld--;
}

/* Take the oldest held reply off @f's list and the global one; the caller frees it. */
static struct umc_sm_held *held_pop(struct umc_sm *sm, struct umc_sm_mlfwd *f)
{
	struct umc_sm_held *h = f->held;

	f->held = h->next;
	if (!f->held)
		f->held_tail = &f->held;
	held_unlink_all(&sm->fwd, h);
	return h;
}

/* Take held reply @h off both lists, wherever it is on its MLID's; the caller frees it. */
static void held_remove(struct umc_sm *sm, struct umc_sm_held *h)
{
	struct umc_sm_held **pp = &h->f->held;

	while (*pp != h)
		pp = &(*pp)->next;
	*pp = h->next;
	if (h->f->held_tail == &h->next)
		h->f->held_tail = pp;
	held_unlink_all(&sm->fwd, h);
}

/* ------------------------------------------------------------------------- */
/* Sending a forwarding.                                                     */

/*
 * The entries of @f into sm->fwd.list: the IP group and data port, or
 * every receiving member's data endpoint.  Returns their number, or -1
 * when out of memory.
 */
static int build_list(struct umc_sm *sm, const struct umc_sm_mlfwd *f)
{
	const struct umc_sm_group *grp = f->unicast ? umc_sm_group_by_mlid(sm, f->mlid) : NULL;
	size_t need = (grp ? grp->nmembers : 1) * (size_t)UMC_SM_FWD_ENTRY_LEN;
	struct umc_sm_fwd_entry e;
	const struct umc_sm_member *m;
	int n = 0;

	if (need > sm->fwd.list_cap) {
		uint8_t *l = realloc(sm->fwd.list, need);

		if (!l)
			return -1;
		sm->fwd.list = l;
		sm->fwd.list_cap = need;
	}
	if (!f->unicast) {
		e = (struct umc_sm_fwd_entry){ sm->cfg.mcast_base + (uint32_t)(f->mlid - UMC_SM_MLID_BASE),
					       sm->cfg.data_port, 0 };
		umc_sm_fwd_entry_put(sm->fwd.list, &e);
		return 1;
	}
	for (m = grp ? grp->members : NULL; m; m = m->grp_next) {
		if (!(m->join_state & RECEIVING) || !m->port->data_port)
			continue;
		e = (struct umc_sm_fwd_entry){ m->port->data_addr, m->port->data_port, m->port->lid };
		umc_sm_fwd_entry_put(sm->fwd.list + (size_t)n++ * UMC_SM_FWD_ENTRY_LEN, &e);
	}
	return n;
}

/*
 * Send @s the current version of its MLID's forwarding, @total entries in
 * sm->fwd.list (build_list), in segments; with @tid, as the answer to a
 * SUBSCRIBE.  It waits for an acknowledgment on the resend list.
 */
static void push(struct umc_sm *sm, struct umc_sm_sub *s, int total, uint32_t tid, uint64_t now)
{
	const struct umc_sm_mlfwd *f = s->f;
	struct umc_sm_msg m = {
		.hdr = { .type = UMC_SM_FORWARD, .epoch = sm->epoch, .lid = s->port->lid, .tid = tid },
		.fwd = { .mlid = f->mlid,
			 .kind = f->unicast ? UMC_SM_FWD_UNICAST : UMC_SM_FWD_MULTICAST,
			 .version = f->version,
			 .total = (uint16_t)total },
	};

	for (unsigned off = 0;; off += UMC_SM_FWD_SEG) {
		unsigned left = (unsigned)total - off;

		m.fwd.offset = (uint16_t)off;
		m.fwd.count = (uint16_t)(left < UMC_SM_FWD_SEG ? left : UMC_SM_FWD_SEG);
		m.fwd.entries = sm->fwd.list + (size_t)off * UMC_SM_FWD_ENTRY_LEN;
		umc_sm_send_msg(sm, &s->port->ctrl, &m);
		sm->cnt.fwd_sent++;
		if (off + UMC_SM_FWD_SEG >= (unsigned)total)
			break;
	}
	if (s->sent != f->version)
		s->tries = 0;
	s->sent = f->version;
	s->tries++;
	rs_remove(&sm->fwd, s);
	if (s->acked < s->sent) {
		s->resend_at = now + UMC_SM_FWD_RESEND_MS;
		rs_append(&sm->fwd, s);
	}
}

/* Has every subscriber of @f that is not lagging acknowledged version @v? */
static bool all_acked(const struct umc_sm_mlfwd *f, uint32_t v)
{
	for (const struct umc_sm_sub *s = f->subs; s; s = s->f_next)
		if (!s->lagging && s->acked < v)
			return false;
	return true;
}

/* Send @f's held replies whose version every subscriber has (oldest first). */
static void release(struct umc_sm *sm, struct umc_sm_mlfwd *f)
{
	while (f->held && all_acked(f, f->held->version)) {
		struct umc_sm_held *h = held_pop(sm, f);

		umc_sm_send_sa(sm, h->port, h->tid, h->mad);
		free(h);
	}
}

/**
 * umc_sm_fwd_flush - send every version made since the last flush.
 * @sm:  the state
 * @now: ms on the SM's clock
 *
 * Each changed MLID's list is built once and sent to each subscriber that
 * does not have it.  main.c calls it after each batch of datagrams, so
 * that the joins of one batch cost one FORWARD per subscriber.
 */
void umc_sm_fwd_flush(struct umc_sm *sm, uint64_t now)
{
	struct umc_sm_mlfwd *f;

	while ((f = sm->fwd.dirty)) {
		int total = 0;

		if (f->nsubs && (total = build_list(sm, f)) < 0)
			return; /* out of memory: the next flush tries again */
		sm->fwd.dirty = f->dirty_next;
		f->dirty = false;
		for (struct umc_sm_sub *s = f->subs; s; s = s->f_next)
			if (s->sent != f->version)
				push(sm, s, total, 0, now);
	}
}

/**
 * umc_sm_fwd_changed - @mlid's receiving members changed.
 * @sm:   the state
 * @mlid: the group's MLID
 *
 * An MLID forwarded by unicast gets a new version, sent at the next flush.
 */
void umc_sm_fwd_changed(struct umc_sm *sm, uint16_t mlid)
{
	struct umc_sm_mlfwd *f = mlfwd_get(sm, mlid, false);

	if (!f || !f->unicast)
		return;
	f->version++;
	if (!f->dirty) {
		f->dirty = true;
		f->dirty_next = sm->fwd.dirty;
		sm->fwd.dirty = f;
	}
}

/* ------------------------------------------------------------------------- */
/* Requests.                                                                 */

static void sub_free(struct umc_sm *sm, struct umc_sm_sub *s)
{
	struct umc_sm_mlfwd *f = s->f;
	struct umc_sm_port *port = s->port;

	rs_remove(&sm->fwd, s);
	set_stale(s, false);
	umc_hash_remove(&sm->fwd.subs, &s->node);
	if (s->port_prev)
		s->port_prev->port_next = s->port_next;
	else
		port->subs = s->port_next;
	if (s->port_next)
		s->port_next->port_prev = s->port_prev;
	if (s->f_prev)
		s->f_prev->f_next = s->f_next;
	else
		f->subs = s->f_next;
	if (s->f_next)
		s->f_next->f_prev = s->f_prev;
	port->nsubs--;
	port->host->subs--;
	f->nsubs--;
	free(s);
}

/* @port's subscription to @f, made if new and within the caps; NULL if not. */
static struct umc_sm_sub *sub_get(struct umc_sm *sm, struct umc_sm_port *port,
				  struct umc_sm_mlfwd *f)
{
	struct umc_sm_sub *s = sub_find(sm, f->mlid, port);

	if (s || port->nsubs >= sm->cfg.max_groups_per_port ||
	    port->host->subs >= sm->cfg.max_groups_per_host || !(s = calloc(1, sizeof(*s))))
		return s;
	s->port = port;
	s->f = f;
	umc_hash_insert(&sm->fwd.subs, &s->node, umc_hash_mix64(sub_key(f->mlid, port)));
	s->port_next = port->subs;
	if (port->subs)
		port->subs->port_prev = s;
	port->subs = s;
	s->f_next = f->subs;
	if (f->subs)
		f->subs->f_prev = s;
	f->subs = s;
	port->nsubs++;
	port->host->subs++;
	f->nsubs++;
	return s;
}

static void subscribe(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m,
		      uint64_t now)
{
	bool in_map = m->mlid >= UMC_SM_MLID_BASE && m->mlid <= sm->cfg.mlid_max;
	struct umc_sm_mlfwd *f = mlfwd_get(sm, m->mlid, true);
	struct umc_sm_sub *s = f ? sub_get(sm, port, f) : NULL;
	uint16_t status = in_map ? UMC_SM_NO_RESOURCES : UMC_SM_INVALID;
	int total;

	/* A SUBSCRIBE sent again is answered again, with the version current now. */
	if (!s || (total = build_list(sm, f)) < 0) {
		sm->cnt.fwd_refused++;
		if (umc_sm_log_on(sm, UMC_SM_LOG_DEBUG))
			umc_sm_log(sm, UMC_SM_LOG_DEBUG, "SUBSCRIBE of MLID 0x%04x from LID %u refused: %s",
				   m->mlid, port->lid, umc_sm_status_str(status));
		return umc_sm_send_status(sm, &port->ctrl, &m->hdr, status, port->lid);
	}
	sm->cnt.fwd_subscribed++;
	push(sm, s, total, m->hdr.tid, now);
}

static void unsubscribe(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m)
{
	struct umc_sm_sub *s = sub_find(sm, m->mlid, port);

	if (s) {
		struct umc_sm_mlfwd *f = s->f;

		sub_free(sm, s);
		release(sm, f); /* it may have been the one they waited for */
	}
	umc_sm_send_status(sm, &port->ctrl, &m->hdr, UMC_SM_OK, port->lid);
}

static void acknowledged(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m)
{
	struct umc_sm_sub *s = sub_find(sm, m->ack.mlid, port);

	if (!s || m->ack.version > s->sent) {
		sm->cnt.fwd_stale++; /* not subscribed, or a version it was never sent */
		return;
	}
	sm->cnt.fwd_acks++;
	if (m->ack.version > s->acked)
		s->acked = m->ack.version;
	if (s->acked == s->sent) {
		rs_remove(&sm->fwd, s);
		set_stale(s, false);
	}
	if (s->acked == s->f->version)
		s->lagging = false;
	release(sm, s->f);
}

static void squatted(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m)
{
	struct umc_sm_group *grp = umc_sm_group_by_mlid(sm, m->mlid);
	struct umc_sm_member *mb = grp ? umc_sm_member_find(sm, grp, port) : NULL;
	struct umc_sm_mlfwd *f;
	char ip[INET_ADDRSTRLEN];
	struct in_addr a;

	if (!mb || !(mb->join_state & RECEIVING))
		return umc_sm_send_status(sm, &port->ctrl, &m->hdr, UMC_SM_INVALID, port->lid);
	f = mlfwd_get(sm, m->mlid, true);
	if (!f)
		return umc_sm_send_status(sm, &port->ctrl, &m->hdr, UMC_SM_NO_RESOURCES, port->lid);
	if (!f->unicast) {
		f->unicast = true;
		umc_sm_fwd_changed(sm, f->mlid); /* a new version: the list */
		sm->cnt.fwd_squatted++;
		a.s_addr = htonl(sm->cfg.mcast_base + (uint32_t)(f->mlid - UMC_SM_MLID_BASE));
		umc_sm_log(sm, UMC_SM_LOG_INFO,
			   "MLID 0x%04x: port LID %u cannot bind %s:%u (another socket holds it): "
			   "forwarded by unicast from now on",
			   f->mlid, port->lid, inet_ntop(AF_INET, &a, ip, sizeof(ip)),
			   sm->cfg.data_port);
	}
	umc_sm_send_status(sm, &port->ctrl, &m->hdr, UMC_SM_OK, port->lid);
}

/**
 * umc_sm_fwd_request - SUBSCRIBE, UNSUBSCRIBE, FWD_ACK or SQUATTED from a
 * registered port.
 * @sm:   the state
 * @port: the port it came from
 * @m:    the request (decoded: its MLID is 0xC000..0xFFFE)
 * @now:  ms on the SM's clock
 *
 * SUBSCRIBE: answered with a FORWARD (status INVALID for an MLID beyond
 * --max-mlid, NO_RESOURCES beyond --max-groups-per-port subscriptions);
 * UNSUBSCRIBE: OK whether or not it was subscribed; FWD_ACK: no answer;
 * SQUATTED: OK, or INVALID when the port receives no group on the MLID.
 */
void umc_sm_fwd_request(struct umc_sm *sm, struct umc_sm_port *port, const struct umc_sm_msg *m,
			uint64_t now)
{
	switch (m->hdr.type) {
	case UMC_SM_SUBSCRIBE:
		return subscribe(sm, port, m, now);
	case UMC_SM_UNSUBSCRIBE:
		return unsubscribe(sm, port, m);
	case UMC_SM_FWD_ACK:
		return acknowledged(sm, port, m);
	case UMC_SM_SQUATTED:
		return squatted(sm, port, m);
	}
}

/* ------------------------------------------------------------------------- */
/* Held replies.                                                             */

/**
 * umc_sm_fwd_mlid_of - the MLID of the group an MCMemberRecord Set or
 * Delete names by its MGID, or 0 (another MAD, no such group).
 * @sm:  the state
 * @mad: the request, UMC_MAD_SIZE bytes
 */
uint16_t umc_sm_fwd_mlid_of(struct umc_sm *sm, const uint8_t *mad)
{
	const struct umc_sa_mad_wire *w = (const void *)mad;
	const struct umc_sm_group *grp;

	if (w->mgmt_class != UMC_MGMT_CLASS_SUBN_ADM ||
	    (w->method != UMC_MAD_METHOD_SET && w->method != UMC_SA_METHOD_DELETE) ||
	    get_be16(w->attr_id) != UMC_SA_ATTR_MCMEMBER_RECORD)
		return 0;
	grp = umc_sm_group_by_mgid(sm, mad + UMC_SA_HDR_LEN); /* the record's MGID comes first */
	return grp ? grp->rec.mlid : 0;
}

/**
 * umc_sm_fwd_hold - keep an SA reply until @mlid's senders have its list.
 * @sm:   the state
 * @port: the requester
 * @tid:  its datagram's tid
 * @mlid: the MLID the request was about (umc_sm_fwd_mlid_of)
 * @mad:  the reply, UMC_MAD_SIZE bytes
 * @now:  ms on the SM's clock
 *
 * A successful reply about an MLID forwarded by unicast waits while a
 * subscriber that is not lagging has not acknowledged the current version,
 * at most cfg.fwd_wait_ms (umc_sm_fwd_tick; 0: never); at most
 * UMC_SM_FWD_HELD_MAX wait.
 *
 * Returns: true if it was kept (it is sent later), false to send it now.
 */
bool umc_sm_fwd_hold(struct umc_sm *sm, struct umc_sm_port *port, uint32_t tid, uint16_t mlid,
		     const uint8_t *mad, uint64_t now)
{
	struct umc_sm_mlfwd *f = mlfwd_get(sm, mlid, false);
	struct umc_sm_fwds *w = &sm->fwd;
	struct umc_sm_held *h;

	if (!f || !f->unicast || !sm->cfg.fwd_wait_ms || w->nheld >= UMC_SM_FWD_HELD_MAX ||
	    get_be16(mad + offsetof(struct umc_sa_mad_wire, status)) || all_acked(f, f->version))
		return false;
	h = malloc(sizeof(*h));
	if (!h)
		return false;
	h->f = f;
	h->port = port;
	h->tid = tid;
	h->version = f->version;
	h->deadline = now + sm->cfg.fwd_wait_ms;
	memcpy(h->mad, mad, UMC_MAD_SIZE);
	h->next = NULL;
	*f->held_tail = h;
	f->held_tail = &h->next;
	h->all_next = NULL;
	h->all_prev = w->held_tail;
	if (w->held_tail)
		w->held_tail->all_next = h;
	else
		w->held_head = h;
	w->held_tail = h;
	w->nheld++;
	sm->cnt.fwd_held++;
	return true;
}

/**
 * umc_sm_fwd_tick - what is due: pending versions, held replies whose
 * time passed (their laggards become lagging), resends.
 * @sm:  the state
 * @now: ms on the SM's clock
 *
 * Returns: the next deadline, or UMC_SM_NO_DEADLINE.
 */
uint64_t umc_sm_fwd_tick(struct umc_sm *sm, uint64_t now)
{
	struct umc_sm_fwds *w = &sm->fwd;
	struct umc_sm_held *h;
	struct umc_sm_sub *s;
	uint64_t next = UMC_SM_NO_DEADLINE;

	umc_sm_fwd_flush(sm, now);
	while ((h = w->held_head) && h->deadline <= now) {
		struct umc_sm_mlfwd *f = h->f;

		for (s = f->subs; s; s = s->f_next) {
			if (s->lagging || s->acked >= h->version)
				continue;
			s->lagging = true;
			sm->cnt.fwd_lagging++;
			umc_sm_log(sm, UMC_SM_LOG_INFO,
				   "MLID 0x%04x: port LID %u did not acknowledge version %u within %u ms",
				   f->mlid, s->port->lid, h->version, sm->cfg.fwd_wait_ms);
		}
		sm->cnt.fwd_hold_expired++;
		release(sm, f); /* @h, and any other the laggards held */
		if (w->held_head == h) { /* behind an MLID's reply held later (clock skew) */
			held_remove(sm, h);
			umc_sm_send_sa(sm, h->port, h->tid, h->mad);
			free(h);
		}
	}
	while ((s = w->rs_head) && s->resend_at <= now) {
		int total;

		rs_remove(w, s);
		if (s->tries >= UMC_SM_FWD_TRIES) {
			set_stale(s, true); /* again at its port's next RENEW */
			continue;
		}
		total = build_list(sm, s->f);
		if (total < 0) {
			s->resend_at = now + UMC_SM_FWD_RESEND_MS;
			rs_append(w, s);
			break;
		}
		sm->cnt.fwd_resent++;
		push(sm, s, total, 0, now);
	}
	if (w->held_head)
		next = w->held_head->deadline;
	if (w->rs_head && w->rs_head->resend_at < next)
		next = w->rs_head->resend_at;
	return next;
}

/**
 * umc_sm_fwd_renewed - @port renewed its lease: what it never acknowledged
 * after UMC_SM_FWD_TRIES sends goes once more, UMC_SM_FWD_TRIES times.
 */
void umc_sm_fwd_renewed(struct umc_sm *sm, struct umc_sm_port *port, uint64_t now)
{
	for (struct umc_sm_sub *s = port->subs; s && port->nstale; s = s->port_next) {
		int total;

		if (!s->stale || (total = build_list(sm, s->f)) < 0)
			continue;
		set_stale(s, false);
		s->tries = 0;
		s->sent = 0; /* push() counts the tries afresh */
		push(sm, s, total, 0, now);
	}
}

/**
 * umc_sm_fwd_port_gone - @port goes: its subscriptions end (the replies
 * they held may go) and its held replies are dropped.
 */
void umc_sm_fwd_port_gone(struct umc_sm *sm, struct umc_sm_port *port)
{
	struct umc_sm_held *h, *next;

	while (port->subs) {
		struct umc_sm_mlfwd *f = port->subs->f;

		sub_free(sm, port->subs);
		release(sm, f);
	}
	for (h = sm->fwd.held_head; h; h = next) {
		next = h->all_next;
		if (h->port != port)
			continue;
		held_remove(sm, h);
		free(h);
	}
}

/**
 * umc_sm_fwd_fini - free every MLID's forwarding (the ports, and so every
 * subscription, are gone) and the held replies.
 */
void umc_sm_fwd_fini(struct umc_sm *sm)
{
	struct umc_sm_fwds *w = &sm->fwd;
	struct umc_sm_held *h;

	while ((h = w->held_head)) {
		w->held_head = h->all_next;
		free(h);
	}
	if (w->by_mlid)
		for (unsigned i = 0; i <= (unsigned)(sm->cfg.mlid_max - UMC_SM_MLID_BASE); i++)
			free(w->by_mlid[i]);
	free(w->by_mlid);
	free(w->list);
	umc_hash_fini(&w->subs);
	memset(w, 0, sizeof(*w));
}
