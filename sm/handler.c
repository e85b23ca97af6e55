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
 */
#include <errno.h>
#include <string.h>

#include "sm.h"
#include "wire/ib_rmpp.h"

/* A reply without a body: a status, or a reply type that has none. */
static void reply_status(struct umc_sm *sm, const struct sockaddr_in *to,
			 const struct umc_sm_hdr *req, uint16_t status, uint16_t lid)
{
	struct umc_sm_msg m = {
		.hdr = {
			.type = (uint8_t)(req->type | UMC_SM_TYPE_REPLY),
			.status = status,
			.epoch = sm->epoch,
			.lid = lid,
			.tid = req->tid,
		},
	};

	umc_sm_send_msg(sm, to, &m);
}

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
	pi->sm_flags = sm->cfg.sendonly ? UMC_SM_FLAG_SENDONLY_FULL : 0;
}

static void do_register(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
			const struct umc_sm_msg *req)
{
	struct umc_sm_port *port = NULL;
	struct umc_sm_msg m = {
		.hdr = {
			.type = UMC_SM_REGISTER_REPLY,
			.epoch = sm->epoch,
			.tid = req->hdr.tid,
		},
	};

	m.hdr.status = (uint16_t)umc_sm_port_register(sm, now, src, &req->reg, &port);
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
		return reply_status(sm, &port->ctrl, &req->hdr, UMC_SM_NOT_FOUND, port->lid);
	}
	sm->cnt.resolve_ok++;
	m.resolved.lid = t->lid;
	m.resolved.data_addr = t->data_addr;
	m.resolved.data_port = t->data_port;
	m.resolved.port_guid = t->guid;
	umc_sm_send_msg(sm, &port->ctrl, &m);
}

static void do_sa(struct umc_sm *sm, uint64_t now, struct umc_sm_port *port,
		  const struct umc_sm_msg *req)
{
	struct umc_sm_sa_reply reply;
	struct umc_sa_hdr h;

	umc_sm_sa_process(sm, port, req->mad, now, &reply);
	switch (reply.kind) {
	case UMC_SM_SA_NO_REPLY:
		return;
	case UMC_SM_SA_REPLY_MAD:
		return umc_sm_send_sa(sm, port, req->hdr.tid, reply.mad);
	case UMC_SM_SA_REPLY_TABLE:
		if (!umc_sm_rmpp_send(sm, port, req->hdr.tid, &reply, now))
			return;
		umc_sa_hdr_decode(req->mad, UMC_MAD_SIZE, &h);
		umc_sm_sa_error(sm, port, req->mad, &h, UMC_MAD_STATUS_BUSY,
				"too many GetTable transfers in progress", &reply);
		umc_sm_send_sa(sm, port, req->hdr.tid, reply.mad);
		return;
	}
}

/**
 * umc_sm_handle - handle one datagram.
 * @sm:  the state
 * @now: ms on the SM's monotonic clock
 * @src: the datagram's source (the control endpoint)
 * @buf: the datagram
 * @len: its length
 *
 * Context: never fails; replies go through sm->out.
 */
void umc_sm_handle(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *src,
		   const uint8_t *buf, size_t len)
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
		return reply_status(sm, src, &m.hdr, UMC_SM_BAD_VERSION, 0);
	}
	if (rc || (m.hdr.type & UMC_SM_TYPE_REPLY)) {
		sm->cnt.rx_malformed++;
		return;
	}
	if (m.hdr.type == UMC_SM_REGISTER)
		return do_register(sm, now, src, &m);
	port = umc_sm_port_by_ep(sm, src);
	if (!port || port->lid != m.hdr.lid || m.hdr.epoch != sm->epoch) {
		sm->cnt.rx_unknown_port++;
		umc_sm_log(sm, UMC_SM_LOG_DEBUG, "%s from an unknown port (LID %u): re-register",
			   umc_sm_type_str(m.hdr.type), m.hdr.lid);
		return reply_status(sm, src, &m.hdr, UMC_SM_UNKNOWN_PORT, m.hdr.lid);
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
		return umc_sm_send_msg(sm, src, &r);
	}
	case UMC_SM_UNREGISTER:
		sm->cnt.unregister++;
		reply_status(sm, src, &m.hdr, UMC_SM_OK, port->lid);
		return umc_sm_port_remove(sm, port, "unregistered");
	case UMC_SM_RESOLVE:
		return do_resolve(sm, port, &m);
	case UMC_SM_SA:
		return do_sa(sm, now, port, &m);
	}
}

/**
 * umc_sm_tick - run what is due: lease expiries and RMPP resends.
 * @sm:  the state
 * @now: ms on the SM's monotonic clock
 *
 * Returns: when to call again at the latest, or UMC_SM_NO_DEADLINE.
 */
uint64_t umc_sm_tick(struct umc_sm *sm, uint64_t now)
{
	uint64_t a = umc_sm_ports_expire(sm, now), b = umc_sm_rmpp_tick(sm, now);

	return a < b ? a : b;
}
