// SPDX-License-Identifier: MIT
/*
 * handler.c - umc-sm's request handler: one datagram of the library <->
 * SM protocol (wire/sm_proto.h) in, its replies out, and the timers.
 *
 * Who asks is the control endpoint the datagram came from; a request that
 * is not REGISTER must come from a registered port's endpoint with that
 * port's LID and the current epoch, else it is answered UNKNOWN_PORT (the
 * client registers again).  Whatever arrives, nothing here can fail: a
 * datagram is answered, or dropped and counted.
 *
 * What keeps registered ports alive and in their groups is served as it
 * is read; a REGISTER of a new port and a query that scans every group
 * wait (defer.c) until umc_sm_work() serves them between reads, so that
 * no flood of them delays a renewal, a join or a leave.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "wire/be.h"
#include "wire/ib_rmpp.h"

static void port_info(const struct umc_sm *sm, const struct umc_sm_port *port,
		      struct umc_sm_port_info *pi)
{
	memset(pi, 0, sizeof(*pi));
	pi->port_guid = port->guid;
	pi->subnet_prefix = sm->cfg.subnet_prefix;
	pi->lid = port->lid;
	pi->sm_lid = UMC_SM_LID;
	pi->sm_sl = UMC_SM_SL;
	pi->active_mtu = port->mtu;
	pi->max_mtu = port->mtu > UMC_SM_PORT_MAX_MTU ? port->mtu : UMC_SM_PORT_MAX_MTU;
	pi->active_width = UMC_SM_PORT_WIDTH;
	pi->active_speed = UMC_SM_PORT_SPEED;
	pi->rate = port->rate;
	pi->pkey_count = port->npkeys;
	memcpy(pi->pkeys, port->pkeys, sizeof(pi->pkeys));
	pi->lease_ms = sm->cfg.lease_ms;
	pi->mcast_base = sm->cfg.mcast_base;
	pi->mlid_base = UMC_SM_MLID_BASE;
	pi->mlid_max = sm->cfg.mlid_max;
	pi->data_port = sm->cfg.data_port;
	pi->sm_flags = (sm->cfg.sendonly ? UMC_SM_FLAG_SENDONLY_FULL : 0) |
		       (sm->cfg.unicast_fwd ? UMC_SM_FLAG_UNICAST_FWD : 0);
}

/* Register (or find again) the port of @src; @host_key: its source host. */
static void do_register(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
			uint64_t host_key, uint32_t tid, const struct umc_sm_register *reg)
{
	struct umc_sm_port *port = NULL;
	struct umc_sm_msg m = {
		.hdr = {
			.type = UMC_SM_REGISTER_REPLY,
			.epoch = sm->epoch,
			.tid = tid,
		},
	};

	m.hdr.status = (uint16_t)umc_sm_port_register(sm, now, src, host_key, reg, &port);
	if (m.hdr.status == UMC_SM_OK) {
		m.hdr.lid = port->lid;
		port_info(sm, port, &m.port);
	}
	umc_sm_send_msg(sm, src, &m);
}

static void do_resolve(struct umc_sm *sm, const struct umc_sm_port *port,
		       const struct umc_sm_msg *req)
{
	const struct umc_sm_port *t = umc_sm_port_by_lid(sm, req->resolve_lid);
	struct umc_sm_msg m = {
		.hdr = {
			.type = UMC_SM_RESOLVE_REPLY,
			.epoch = sm->epoch,
			.lid = port->lid,
			.tid = req->hdr.tid,
		},
	};

	if (!t || !t->data_port) {
		sm->cnt.resolve_miss++;
		return umc_sm_send_status(sm, &port->ctrl, &req->hdr, UMC_SM_NOT_FOUND, port->lid);
	}
	sm->cnt.resolve_ok++;
	m.resolved.lid = t->lid;
	m.resolved.data_addr = t->data_addr;
	m.resolved.data_port = t->data_port;
	m.resolved.port_guid = t->guid;
	umc_sm_send_msg(sm, &port->ctrl, &m);
}

/*
 * An SA reply to @port.  A BUSY one mutes the port's queries for
 * UMC_SM_BUSY_QUIET_MS (on_sa()): a flooder gets one BUSY per period, and
 * refusing the rest of its flood costs umc-sm a read each, not a reply.
 * A client sends again after its own interval, longer than that
 * (UMC_SA_TIMEOUT_MS / (UMC_SA_RETRIES + 1)).
 */
static void send_reply(struct umc_sm *sm, struct umc_sm_port *port, uint64_t now, uint32_t tid,
		       const uint8_t *mad)
{
	if (get_be16(mad + offsetof(struct umc_sa_mad_wire, status)) == UMC_MAD_STATUS_BUSY)
		port->quiet_until = now + UMC_SM_BUSY_QUIET_MS;
	umc_sm_send_sa(sm, port, tid, mad);
}

/* An MCMemberRecord Get or GetTable, from its raw bytes (no decoding). */
static bool is_query(const uint8_t *mad)
{
	const struct umc_sa_mad_wire *w = (const void *)mad;

	return w->mgmt_class == UMC_MGMT_CLASS_SUBN_ADM &&
	       (w->method == UMC_MAD_METHOD_GET || w->method == UMC_SA_METHOD_GET_TABLE) &&
	       get_be16(w->attr_id) == UMC_SA_ATTR_MCMEMBER_RECORD;
}

/*
 * An SA MAD from @port, answered.  The reply to a Set or Delete of an MLID
 * forwarded by unicast may wait until the MLID's senders have its new
 * list (fwd.c); the MLID is read before the request (a Delete may delete
 * the group) or, for a Set that created the group, after it.
 */
static void do_sa(struct umc_sm *sm, uint64_t now, struct umc_sm_port *port, uint32_t tid,
		  const uint8_t *mad)
{
	uint16_t mlid = umc_sm_fwd_mlid_of(sm, mad);
	struct umc_sm_sa_reply reply;
	struct umc_sa_hdr h;

	umc_sm_sa_process(sm, port, mad, now, &reply);
	switch (reply.kind) {
	case UMC_SM_SA_NO_REPLY:
		return;
	case UMC_SM_SA_REPLY_MAD:
		if (!mlid)
			mlid = umc_sm_fwd_mlid_of(sm, mad);
		if (mlid && umc_sm_fwd_hold(sm, port, tid, mlid, reply.mad, now))
			return;
		return send_reply(sm, port, now, tid, reply.mad);
	case UMC_SM_SA_REPLY_TABLE:
		if (!umc_sm_rmpp_send(sm, port, tid, &reply, now))
			return;
		umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &h);
		umc_sm_sa_error(sm, port, mad, &h, UMC_MAD_STATUS_BUSY,
				"too many GetTable transfers in progress", &reply);
		return send_reply(sm, port, now, tid, reply.mad);
	}
}

/*
 * A REGISTER: a repeat from the endpoint of a port with the same nonce is
 * answered at once; a new port waits its turn (its source host is asked
 * for then), or is dropped when too many wait (the client sends again).
 */
static void on_register(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
			const struct sockaddr_in *dst, const struct umc_sm_msg *m)
{
	struct umc_sm_port *old = umc_sm_port_by_ep(sm, src);
	struct umc_sm_deferred d = { .src = *src, .tid = m->hdr.tid, .reg = m->reg };

	if (old && old->nonce == m->reg.nonce)
		return do_register(sm, now, src, old->host->key, m->hdr.tid, &m->reg);
	if (dst)
		d.dst = *dst;
	if (umc_sm_defer(sm, &d))
		sm->cnt.shed_register++;
}

/* An SA MAD from @port: at once, later, or BUSY now (umc_sm_sa_classify). */
static void on_sa(struct umc_sm *sm, uint64_t now, struct umc_sm_port *port,
		  const struct umc_sm_msg *m)
{
	struct umc_sm_deferred d = { .port = port, .tid = m->hdr.tid };
	struct umc_sm_sa_reply busy;
	struct umc_sa_hdr h;

	if (now < port->quiet_until && is_query(m->mad)) {
		sm->cnt.shed_busy++; /* told BUSY just now: dropped unread */
		return;
	}
	switch (umc_sm_sa_classify(sm, port, m->mad, &busy)) {
	case UMC_SM_SA_NOW:
		return do_sa(sm, now, port, m->hdr.tid, m->mad);
	case UMC_SM_SA_BUSY:
		return send_reply(sm, port, now, m->hdr.tid, busy.mad);
	case UMC_SM_SA_LATER:
		memcpy(d.mad, m->mad, UMC_MAD_SIZE);
		if (!umc_sm_defer(sm, &d))
			return;
		sm->cnt.shed_query++;
		umc_sa_hdr_decode(m->mad, UMC_MAD_SIZE, &h);
		umc_sm_sa_error(sm, port, m->mad, &h, UMC_MAD_STATUS_BUSY,
				"too many queries of its host waiting", &busy);
		return send_reply(sm, port, now, m->hdr.tid, busy.mad);
	}
}

/**
 * umc_sm_handle - handle one datagram.
 * @sm:  the state
 * @now: when it arrived, ms on the SM's monotonic clock (a lease it
 *       renews starts then)
 * @src: the datagram's source (the control endpoint)
 * @dst: our address it was sent to, or NULL if not known
 * @buf: the datagram
 * @len: its length
 *
 * Context: never fails; replies go through sm->out.
 */
void umc_sm_handle(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
		   const struct sockaddr_in *dst, const uint8_t *buf, size_t len)
{
	struct umc_sm_port *port;
	struct umc_sm_msg m;
	int rc;

	sm->cnt.rx_datagrams++;
	if (umc_sm_silent(sm, now))
		return;
	rc = umc_sm_msg_decode(buf, len, &m);
	if (rc == -EPROTONOSUPPORT && !(m.hdr.type & UMC_SM_TYPE_REPLY)) {
		sm->cnt.rx_bad_version++;
		return umc_sm_send_status(sm, src, &m.hdr, UMC_SM_BAD_VERSION, 0);
	}
	if (rc || (m.hdr.type & UMC_SM_TYPE_REPLY)) {
		sm->cnt.rx_malformed++;
		return;
	}
	if (m.hdr.type == UMC_SM_REGISTER)
		return on_register(sm, now, src, dst, &m);
	port = umc_sm_port_by_ep(sm, src);
	if (!port || port->lid != m.hdr.lid || m.hdr.epoch != sm->epoch) {
		sm->cnt.rx_unknown_port++;
		umc_sm_log(sm, UMC_SM_LOG_DEBUG, "%s from an unknown port (LID %u): re-register",
			   umc_sm_type_str(m.hdr.type), m.hdr.lid);
		return umc_sm_send_status(sm, src, &m.hdr, UMC_SM_UNKNOWN_PORT, m.hdr.lid);
	}
	umc_sm_port_renew(sm, port, now);
	switch (m.hdr.type) {
	case UMC_SM_RENEW: {
		struct umc_sm_msg r = {
			.hdr = { .type = UMC_SM_RENEW_REPLY, .epoch = sm->epoch, .lid = port->lid,
				 .tid = m.hdr.tid },
			.lease_ms = sm->cfg.lease_ms,
		};

		sm->cnt.renew++;
		umc_sm_send_msg(sm, src, &r);
		return umc_sm_fwd_renewed(sm, port, now);
	}
	case UMC_SM_UNREGISTER:
		sm->cnt.unregister++;
		umc_sm_send_status(sm, src, &m.hdr, UMC_SM_OK, port->lid);
		return umc_sm_port_remove(sm, port, "unregistered");
	case UMC_SM_RESOLVE:
		return do_resolve(sm, port, &m);
	case UMC_SM_SA:
		return on_sa(sm, now, port, &m);
	case UMC_SM_SUBSCRIBE:
	case UMC_SM_UNSUBSCRIBE:
	case UMC_SM_FWD_ACK:
	case UMC_SM_SQUATTED:
		return umc_sm_fwd_request(sm, port, &m, now);
	}
}

/**
 * umc_sm_work - serve the next request that waits.
 * @sm:  the state
 * @now: ms on the SM's monotonic clock
 *
 * A REGISTER's source host is asked for now (umc_sm_host_key()), and the
 * new port's lease starts now, when its client hears of it; a query is
 * served as if it had just arrived (its port's lease was renewed when it
 * did).
 *
 * Returns: true if more requests wait.
 */
bool umc_sm_work(struct umc_sm *sm, uint64_t now)
{
	struct umc_sm_deferred *d = umc_sm_defer_next(sm);

	if (!d)
		return false;
	if (d->port)
		do_sa(sm, now, d->port, d->tid, d->mad);
	else
		do_register(sm, now, &d->src,
			    umc_sm_host_key(sm, &d->src, d->dst.sin_family ? &d->dst : NULL),
			    d->tid, &d->reg);
	free(d);
	return sm->defer.reg || sm->defer.ring;
}

/**
 * umc_sm_tick - run what is due: lease expiries, RMPP resends and limits,
 * forwarding versions not sent yet, their resends, held SA replies.
 * @sm:   the state
 * @now:  ms on the SM's monotonic clock
 * @seen: every datagram that arrived before this (ms, the same clock) has
 *        been handled: leases that ended before it are over, later ones
 *        may still be renewed by a datagram waiting to be read
 *
 * Returns: when to call again at the latest, or UMC_SM_NO_DEADLINE.
 */
uint64_t umc_sm_tick(struct umc_sm *sm, uint64_t now, uint64_t seen)
{
	uint64_t a = umc_sm_ports_expire(sm, seen < now ? seen : now);
	uint64_t b = umc_sm_rmpp_tick(sm, now);
	uint64_t c = umc_sm_fwd_tick(sm, now);

	a = a < b ? a : b;
	return a < c ? a : c;
}
