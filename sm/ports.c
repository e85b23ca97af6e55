// SPDX-License-Identifier: MIT
/*
 * ports.c - umc-sm's port registry: LIDs, GUIDs, control endpoints and
 * leases.
 *
 * A port is created by REGISTER and identified from then on by the
 * control endpoint (source IPv4 address and UDP port) its datagrams come
 * from, as OpenSM identifies a requester by its SLID.  LIDs are handed out
 * next-fit from 2 (the SM is 1) so that a LID just freed is not given to
 * the next port at once, which would steer a late unicast packet to a
 * stranger.  GUIDs are the asked one if free, else UMC_SM_GUID_BASE + n.
 *
 * Leases all have the same length, so renewing a port moves it to the
 * tail of one list and the head is always the next to expire: renewal and
 * expiry are O(1).  A lease starts when the datagram that renews it
 * arrived, not when umc-sm got round to it (a new port's, when its REGISTER
 * is answered: its client counts from then); the list stays in order
 * because a renewal never ends a lease before the tail's.
 *
 * Each port counts against its source host (hosts.c): at most
 * cfg.max_ports_per_host ports per host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"

static uint32_t ep_hash(const struct sockaddr_in *a)
{
	return umc_hash_mix64((uint64_t)a->sin_addr.s_addr << 16 | a->sin_port);
}

static bool ep_equal(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/**
 * umc_sm_ports_init - an empty registry.
 * @p: the registry (zeroed by the caller)
 *
 * Returns: 0 or -ENOMEM.
 */
int umc_sm_ports_init(struct umc_sm_ports *p)
{
	p->lid_slots = UMC_SM_LID_SLOTS_MIN;
	p->by_lid = calloc(p->lid_slots, sizeof(*p->by_lid));
	if (!p->by_lid || umc_hash_init(&p->by_ep, 64) || umc_hash_init(&p->by_guid, 64))
		return -ENOMEM;
	p->next_lid = UMC_SM_FIRST_CLIENT_LID;
	p->next_guid = UMC_SM_GUID_BASE + UMC_SM_FIRST_CLIENT_LID;
	return 0;
}

/**
 * umc_sm_ports_fini - remove every port (their memberships too) and free
 * the registry.
 * @sm: the state
 */
void umc_sm_ports_fini(struct umc_sm *sm)
{
	struct umc_sm_ports *p = &sm->ports;

	while (p->lease_head)
		umc_sm_port_remove(sm, p->lease_head, NULL);
	umc_hash_fini(&p->by_ep);
	umc_hash_fini(&p->by_guid);
	free(p->by_lid);
	p->by_lid = NULL;
}

/**
 * umc_sm_port_by_ep - the port registered from a control endpoint.
 * @sm:   the state
 * @ctrl: source address of a datagram
 *
 * Returns: the port, or NULL.
 */
struct umc_sm_port *umc_sm_port_by_ep(struct umc_sm *sm, const struct sockaddr_in *ctrl)
{
	uint32_t hv = ep_hash(ctrl);
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->ports.by_ep, hv); n; n = n->next) {
		struct umc_sm_port *p = (void *)((char *)n - offsetof(struct umc_sm_port, ep_node));

		if (n->hash == hv && ep_equal(&p->ctrl, ctrl))
			return p;
	}
	return NULL;
}

/**
 * umc_sm_port_by_lid - the port with unicast LID @lid, or NULL.
 */
struct umc_sm_port *umc_sm_port_by_lid(struct umc_sm *sm, uint16_t lid)
{
	return lid < sm->ports.lid_slots ? sm->ports.by_lid[lid] : NULL;
}

/**
 * umc_sm_port_by_guid - the port with GUID @guid, or NULL.
 */
struct umc_sm_port *umc_sm_port_by_guid(struct umc_sm *sm, uint64_t guid)
{
	uint32_t hv = umc_hash_mix64(guid);
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->ports.by_guid, hv); n; n = n->next) {
		struct umc_sm_port *p = (void *)((char *)n - offsetof(struct umc_sm_port, guid_node));

		if (n->hash == hv && p->guid == guid)
			return p;
	}
	return NULL;
}

static void lease_unlink(struct umc_sm_ports *p, struct umc_sm_port *port)
{
	if (port->lease_prev)
		port->lease_prev->lease_next = port->lease_next;
	else
		p->lease_head = port->lease_next;
	if (port->lease_next)
		port->lease_next->lease_prev = port->lease_prev;
	else
		p->lease_tail = port->lease_prev;
	port->lease_prev = port->lease_next = NULL;
}

/* Last on the list; a lease ending before the tail's is made to end with it. */
static void lease_append(struct umc_sm_ports *p, struct umc_sm_port *port)
{
	if (p->lease_tail && p->lease_tail->expires > port->expires)
		port->expires = p->lease_tail->expires;
	port->lease_prev = p->lease_tail;
	port->lease_next = NULL;
	if (p->lease_tail)
		p->lease_tail->lease_next = port;
	else
		p->lease_head = port;
	p->lease_tail = port;
}

/**
 * umc_sm_port_renew - the port showed life at @now: its lease restarts.
 * @sm:   the state
 * @port: a registered port
 * @now:  ms on the SM's clock
 *
 * Context: O(1): all leases have one length, so the list stays in order
 * (a lease never ends before the tail's: arrival times handed in out of
 * order lengthen a lease by the difference, never shorten one).
 */
void umc_sm_port_renew(struct umc_sm *sm, struct umc_sm_port *port, uint64_t now)
{
	lease_unlink(&sm->ports, port);
	port->expires = now + sm->cfg.lease_ms;
	lease_append(&sm->ports, port);
}

static uint16_t lid_alloc(struct umc_sm_ports *p)
{
	unsigned tries;
	uint16_t lid = p->next_lid;

	for (tries = 0; tries < UMC_SM_MAX_PORTS; tries++) {
		if (lid < UMC_SM_FIRST_CLIENT_LID || lid > UMC_SM_MAX_UCAST_LID)
			lid = UMC_SM_FIRST_CLIENT_LID;
		if (lid >= p->lid_slots || !p->by_lid[lid]) {
			p->next_lid = (uint16_t)(lid + 1);
			return lid;
		}
		lid++;
	}
	return 0;
}

/*
 * Room in the LID index for @lid: it doubles (up to every unicast LID) as
 * ports come, so a small subnet does not pay for 48 K slots.
 * Returns 0 or -ENOMEM.
 */
static int lid_room(struct umc_sm_ports *p, uint16_t lid)
{
	unsigned n = p->lid_slots;
	struct umc_sm_port **t;

	if (lid < n)
		return 0;
	while (n <= lid)
		n *= 2;
	if (n > UMC_SM_MAX_UCAST_LID + 1)
		n = UMC_SM_MAX_UCAST_LID + 1;
	t = realloc(p->by_lid, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + p->lid_slots, 0, (n - p->lid_slots) * sizeof(*t));
	p->by_lid = t;
	p->lid_slots = n;
	return 0;
}

static uint64_t guid_alloc(struct umc_sm *sm)
{
	struct umc_sm_ports *p = &sm->ports;

	while (umc_sm_port_by_guid(sm, p->next_guid))
		p->next_guid++;
	return p->next_guid++;
}

static bool guid_reserved(const struct umc_sm *sm, uint64_t guid)
{
	/* the SM's own port, and the all-ones "permissive" value */
	return guid == UMC_SM_GUID_BASE + UMC_SM_LID || guid == UINT64_MAX;
}

static int port_new(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *ctrl,
		    uint64_t host_key, const struct umc_sm_register *reg, struct umc_sm_port **out)
{
	const struct umc_sm_host *h = umc_sm_host_find(sm, host_key);
	struct umc_sm_ports *p = &sm->ports;
	struct umc_sm_port *port;
	uint16_t lid;

	if (reg->port_guid && guid_reserved(sm, reg->port_guid))
		return UMC_SM_INVALID;
	if (reg->port_guid && umc_sm_port_by_guid(sm, reg->port_guid))
		return UMC_SM_GUID_IN_USE;
	if (h && h->ports >= sm->cfg.max_ports_per_host) {
		sm->cnt.cap_ports++;
		return UMC_SM_NO_RESOURCES;
	}
	lid = lid_alloc(p);
	if (!lid || lid_room(p, lid))
		return UMC_SM_NO_RESOURCES;
	port = calloc(1, sizeof(*port));
	if (!port)
		return UMC_SM_NO_RESOURCES;
	port->host = umc_sm_host_get(sm, host_key);
	if (!port->host) {
		free(port);
		return UMC_SM_NO_RESOURCES;
	}
	port->lid = lid;
	port->guid = reg->port_guid ? reg->port_guid : guid_alloc(sm);
	port->nonce = reg->nonce;
	port->ctrl = *ctrl;
	port->data_addr = reg->data_addr;
	port->data_port = reg->data_port;
	port->mtu = sm->cfg.port_mtu;
	port->rate = UMC_SM_PORT_RATE;
	port->npkeys = 1;
	port->pkeys[0] = UMC_DEFAULT_PKEY;
	p->by_lid[lid] = port;
	umc_hash_insert(&p->by_ep, &port->ep_node, ep_hash(ctrl));
	umc_hash_insert(&p->by_guid, &port->guid_node, umc_hash_mix64(port->guid));
	p->count++;
	port->expires = now + sm->cfg.lease_ms;
	lease_append(p, port);
	*out = port;
	return UMC_SM_OK;
}

/**
 * umc_sm_port_register - handle a REGISTER from control endpoint @ctrl.
 * @sm:       the state
 * @now:      ms on the SM's clock
 * @ctrl:     the datagram's source
 * @host_key: its source host (umc_sm_host_key())
 * @reg:      the request
 * @port:     the registered port, on success
 *
 * A REGISTER from an endpoint that holds a port with the same nonce is a
 * retransmission: the same port is returned and its lease renewed.  With
 * another nonce the old port is removed first (its client restarted).  A
 * requested GUID must be free and not reserved.
 *
 * Returns: UMC_SM_OK, UMC_SM_GUID_IN_USE, UMC_SM_NO_RESOURCES (no LID, the
 * host's cfg.max_ports_per_host reached, or no memory) or UMC_SM_INVALID
 * (a reserved GUID).
 */
int umc_sm_port_register(struct umc_sm *sm, uint64_t now, const struct sockaddr_in *ctrl,
			 uint64_t host_key, const struct umc_sm_register *reg,
			 struct umc_sm_port **port)
{
	struct umc_sm_port *old = umc_sm_port_by_ep(sm, ctrl);
	char addr[INET_ADDRSTRLEN];
	int st;

	if (old && old->nonce == reg->nonce) {
		sm->cnt.reg_repeat++;
		umc_sm_port_renew(sm, old, now);
		*port = old;
		return UMC_SM_OK;
	}
	if (old)
		umc_sm_port_remove(sm, old, "re-registered with a new nonce");
	st = port_new(sm, now, ctrl, host_key, reg, port);
	if (st != UMC_SM_OK) {
		/* no LID or a cap: a flood's refusals would flood the log */
		int level = st == UMC_SM_NO_RESOURCES ? UMC_SM_LOG_DEBUG : UMC_SM_LOG_INFO;
		char host[32];

		sm->cnt.reg_refused++;
		if (umc_sm_log_on(sm, level)) {
			inet_ntop(AF_INET, &ctrl->sin_addr, addr, sizeof(addr));
			umc_sm_log(sm, level, "REGISTER from %s:%u (%s) refused: %s", addr,
				   ntohs(ctrl->sin_port), umc_sm_host_str(host_key, host),
				   umc_sm_status_str((uint16_t)st));
		}
		return st;
	}
	sm->cnt.reg_new++;
	if (umc_sm_log_on(sm, UMC_SM_LOG_INFO)) {
		struct in_addr d = { htonl((*port)->data_addr) };
		char data[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &ctrl->sin_addr, addr, sizeof(addr));
		inet_ntop(AF_INET, &d, data, sizeof(data));
		umc_sm_log(sm, UMC_SM_LOG_INFO,
			   "port LID %u GUID 0x%016llx registered from %s:%u, data %s:%u", (*port)->lid,
			   (unsigned long long)(*port)->guid, addr, ntohs(ctrl->sin_port), data,
			   (*port)->data_port);
	}
	return UMC_SM_OK;
}

/**
 * umc_sm_port_remove - take a port out of the subnet.
 * @sm:   the state
 * @port: the port; freed on return
 * @why:  for the log ("lease expired", "unregistered"); NULL logs nothing
 *
 * Every membership is deleted as by an SA Delete with JoinState 0xF
 * (OpenSM osm_mgrp_delete_port), so groups left without a full member are
 * deleted; GetTable transfers to the port and its waiting queries are
 * dropped.
 */
void umc_sm_port_remove(struct umc_sm *sm, struct umc_sm_port *port, const char *why)
{
	struct umc_sm_ports *p = &sm->ports;

	if (why)
		umc_sm_log(sm, UMC_SM_LOG_INFO, "port LID %u GUID 0x%016llx removed: %s", port->lid,
			   (unsigned long long)port->guid, why);
	while (port->members)
		umc_sm_member_leave(sm, port->members, 0xF);
	umc_sm_fwd_port_gone(sm, port);
	umc_sm_rmpp_port_gone(sm, port);
	umc_sm_defer_port_gone(sm, port);
	umc_sm_host_put(sm, port->host);
	lease_unlink(p, port);
	umc_hash_remove(&p->by_ep, &port->ep_node);
	umc_hash_remove(&p->by_guid, &port->guid_node);
	p->by_lid[port->lid] = NULL;
	p->count--;
	free(port);
}

/**
 * umc_sm_ports_expire - remove every port whose lease has passed.
 * @sm:  the state
 * @now: ms on the SM's clock before which every datagram that arrived has
 *       been handled (a later one cannot renew a lease that ended before)
 *
 * Returns: when the next lease passes, or UMC_SM_NO_DEADLINE.
 */
uint64_t umc_sm_ports_expire(struct umc_sm *sm, uint64_t now)
{
	struct umc_sm_port *port;

	while ((port = sm->ports.lease_head) && port->expires <= now) {
		sm->cnt.lease_expired++;
		umc_sm_port_remove(sm, port, "lease expired");
	}
	return port ? port->expires : UMC_SM_NO_DEADLINE;
}

/**
 * umc_sm_port_has_pkey - whether @port's P_Key table holds @pkey's partition.
 * @port: the port
 * @pkey: a P_Key; membership (bit 15) is not compared
 *
 * An invalid P_Key (base 0) counts as held, as OpenSM's osm_physp_has_pkey
 * treats it.
 */
bool umc_sm_port_has_pkey(const struct umc_sm_port *port, uint16_t pkey)
{
	unsigned i;

	if (!(pkey & 0x7fff))
		return true;
	for (i = 0; i < port->npkeys; i++)
		if ((port->pkeys[i] & 0x7fff) == (pkey & 0x7fff))
			return true;
	return false;
}

/**
 * umc_sm_ports_share_pkey - whether two ports can talk: a partition in both
 * tables where at least one of them is a full member (IBA 10.9.3).
 */
bool umc_sm_ports_share_pkey(const struct umc_sm_port *a, const struct umc_sm_port *b)
{
	unsigned i, j;

	if (a == b)
		return true;
	for (i = 0; i < a->npkeys; i++)
		for (j = 0; j < b->npkeys; j++)
			if ((a->pkeys[i] & 0x7fff) && (a->pkeys[i] & 0x7fff) == (b->pkeys[j] & 0x7fff) &&
			    ((a->pkeys[i] | b->pkeys[j]) & 0x8000))
				return true;
	return false;
}

/**
 * umc_sm_port_gid - GID index 0 of a port: the subnet prefix, then the GUID.
 */
void umc_sm_port_gid(const struct umc_sm *sm, const struct umc_sm_port *port, uint8_t gid[16])
{
	int i;

	for (i = 0; i < 8; i++) {
		gid[i] = (uint8_t)(sm->cfg.subnet_prefix >> (56 - 8 * i));
		gid[8 + i] = (uint8_t)(port->guid >> (56 - 8 * i));
	}
}
