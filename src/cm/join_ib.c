// SPDX-License-Identifier: MIT
/*
 * join_ib.c - the CM's join code for InfiniBand ports: MGIDs, MCMemberRecord
 * Set and Delete through the SA, the per-port aggregation of JoinStates,
 * the IPoIB broadcast group's record and the port's events (the kernel's
 * drivers/infiniband/core/cma.c cma_set_mgid() and cma_join_ib_multicast(),
 * and drivers/infiniband/core/multicast.c).
 *
 * A port keeps one group per MGID it joined (an all-zero MGID, which asks
 * the SA for one, always makes a group of its own), holding the record
 * the SA returned with the JoinState bits this port holds at the SA, and
 * per bit how many joins of this process need it.  Joins of one group are
 * handled one at a time, in order:
 *
 *   - a join whose bits the port already holds completes locally, without
 *     the SA, if the held record matches what the join asks for (the
 *     fields of its component mask); otherwise it fails with -EINVAL;
 *   - otherwise it sends an SA Set with its own bits and the kernel's
 *     component mask; the reply's record becomes the group's, and the join
 *     completes as above; a MAD status fails it with -EINVAL, no answer
 *     within 3 s (the SA client's retries included) with -ETIMEDOUT;
 *   - when no join pending remains, bits held at the SA that no join needs
 *     any more are given back with one SA Delete (retried at most 3 times
 *     per group); a group with no joins and no bits is freed.
 *
 * A re-registration of the port (umc-sm restarted, or the port's lease
 * lost) ends every completed join with MULTICAST_ERROR -ENETRESET and
 * clears the bits held; nothing rejoins by itself (multicast.c
 * mcast_event_handler() and process_group_error()).
 *
 * The JOIN event's ah_attr comes from the SA's record: dlid = MLID, SL,
 * rate, and a GRH with the MGID, flow label, hop limit and traffic class.
 *
 * Locking (ranked in umc_lock.h; docs/design.md, "Locking"): idp->lock,
 * then cm_ib_init_lock (making a port's state, the first bind), then
 * port->lock (struct cm_ib_port), then the SA client's or the channel's
 * lock.  SA replies and port events arrive on the SA client's thread and
 * take only port->lock (then the channel lock, to queue an event).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm_int.h"
#include "sa/sa_client.h"
#include "wire/be.h"
#include "wire/ib_mad.h"

/* kernel cma_join_ib_multicast: what every join constrains. */
enum {
	CM_IB_COMP_MASK = UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID | UMC_MCM_COMP_PKEY |
			  UMC_MCM_COMP_JOIN_STATE | UMC_MCM_COMP_QKEY | UMC_MCM_COMP_SL |
			  UMC_MCM_COMP_FLOW | UMC_MCM_COMP_TCLASS,
	CM_IB_COMP_IPOIB = UMC_MCM_COMP_RATE | UMC_MCM_COMP_RATE_SEL | UMC_MCM_COMP_MTU_SEL |
			   UMC_MCM_COMP_MTU | UMC_MCM_COMP_HOP,
	CM_IB_LEAVE_MASK = UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID | UMC_MCM_COMP_JOIN_STATE,
	CM_IB_LEAVE_RETRIES = 3,
	CM_IB_NBITS = 4, /* JoinState bits */
};

struct cm_ib_group;

/* One join (an umc_cm_mc) as the port's group sees it. */
struct cm_ib_member {
	struct umc_cm_mc *mc; /* holds a reference */
	struct umc_mcmember rec;
	uint64_t comp_mask;
	bool counted;		   /* completed: its bits are in the group's members[] */
	struct cm_ib_group *group; /* NULL once done (failed, reset or left) */
	struct cm_ib_member *next; /* pending or active list */
};

struct cm_ib_group {
	struct umc_mcmember rec; /* what the SA returned; join_state = the bits held */
	bool mgid0;		 /* asked the SA for an MGID: never shared */
	bool busy;		 /* an SA Set or Delete is in flight */
	bool setting;		 /* ... and it is a Set */
	int retries;		 /* Delete resends left (whole lifetime) */
	int members[CM_IB_NBITS];
	struct cm_ib_member *pending, **pending_tail, *active;
	struct cm_ib_member *last_join; /* the member whose Set is in flight, unless it left */
	uint8_t leaving;		/* the bits of the Delete in flight */
	struct cm_ib_group *next;
	struct cm_ib_port *port;
};

/* The CM's InfiniBand state of one port (dev->cm_priv). */
struct cm_ib_port {
	pthread_mutex_t lock;
	struct umc_device *dev;
	struct cm_ib_group *groups;
	/*
	 * The IPoIB broadcast group's record, read from the SA when the port
	 * comes up (the kernel's cached IPoIB group, which
	 * ib_sa_get_mcmember_rec finds): joins inherit its fields and
	 * RDMA_PS_IPOIB its Q_Key.  Under @lock.
	 */
	struct umc_mcmember bcast;
	bool bcast_valid;
	struct umc_event_handler events; /* the port's events (cm_ib_port_event) */
};

/* ------------------------------------------------------------------------- */
/* The IPoIB broadcast group's record.                                       */

/* The IPv4 broadcast group of the default partition's IPoIB link (RFC 4391 4). */
static const uint8_t cm_ib_bcast_mgid[16] = {0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0,
					     0,	   0,	 0,    0,    0xff, 0xff, 0xff, 0xff};

/* The record from a Get reply with MAD @status and SA data @data (200 bytes). */
static void cm_ib_bcast_set(struct cm_ib_port *port, uint16_t status, const uint8_t *data)
{
	struct umc_mcmember rec;

	if (status)
		return;
	umc_mcmember_decode(data, &rec);
	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	port->bcast = rec;
	port->bcast_valid = true;
	umc_mutex_unlock(&port->lock);
}

static void cm_ib_bcast_done(void *ctx, int err, const struct umc_sa_reply *reply)
{
	if (!err)
		cm_ib_bcast_set(ctx, reply->status, reply->data);
}

/*
 * Read the record: SubnAdmGet(MCMemberRecord) of the broadcast MGID, waited
 * for when @wait (not from an SA callback), otherwise answered on the SA
 * client's thread.  Nothing while the port has no SA client.
 */
static void cm_ib_bcast_read(struct cm_ib_port *port, bool wait)
{
	struct umc_device *dev = port->dev;
	struct umc_sa_client *sa = dev->link->sa(dev);
	struct umc_mcmember rec = {0};
	uint8_t mad[UMC_MAD_SIZE];
	struct umc_sa_result res;

	if (!sa)
		return;
	memcpy(rec.mgid, cm_ib_bcast_mgid, 16);
	umc_sa_request_encode(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
			      UMC_MCM_COMP_MGID, 0, &rec);
	if (!wait) {
		(void)umc_sa_send(sa, mad, 0, UMC_SA_RETRIES, cm_ib_bcast_done, port, NULL);
		return;
	}
	if (umc_sa_call(sa, mad, 0, UMC_SA_RETRIES, &res) == 0) {
		cm_ib_bcast_set(port, res.status, res.data);
		umc_sa_result_free(&res);
	}
}

/* ------------------------------------------------------------------------- */
/* The port.                                                                 */

static pthread_mutex_t cm_ib_init_lock = PTHREAD_MUTEX_INITIALIZER;

static void cm_ib_port_event(struct umc_event_handler *h, enum umc_event_type event);

/*
 * The CM's state of port @dev, made on first use (kernel mcast_add_one):
 * registered for the port's events, and with the broadcast record read if
 * the port is up, so that the first join need not wait for it; later
 * records come with UMC_EVENT_PORT_ACTIVE.  Context: not from an SA
 * callback; the first call may wait for the SA (UMC_SA_TIMEOUT_MS).
 * Returns NULL when out of memory.
 */
static struct cm_ib_port *cm_ib_port_get(struct umc_device *dev)
{
	struct cm_ib_port *p = __atomic_load_n((struct cm_ib_port **)&dev->cm_priv,
					       __ATOMIC_ACQUIRE);
	struct ibv_port_attr attr = {0};

	if (p)
		return p;
	umc_mutex_lock(&cm_ib_init_lock, UMC_LOCK_CM_IB_INIT);
	p = dev->cm_priv;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (p) {
			pthread_mutex_init(&p->lock, NULL);
			p->dev = dev;
			p->events.dev = dev;
			p->events.handler = cm_ib_port_event;
			umc_dev_event_register(&p->events);
			dev->link->query_port(dev, &attr);
			if (attr.state == IBV_PORT_ACTIVE)
				cm_ib_bcast_read(p, true);
			__atomic_store_n((struct cm_ib_port **)&dev->cm_priv, p, __ATOMIC_RELEASE);
		}
	}
	umc_mutex_unlock(&cm_ib_init_lock);
	return p;
}

/* ------------------------------------------------------------------------- */
/* MGIDs (the kernel's cma_set_mgid(), drivers/infiniband/core/cma.c).      */

/*
 * cma_any_addr for IB joins: 0.0.0.0/8, 127/8, ::, ::1 and an all-zero
 * AF_IB address all ask the SA for an MGID.
 */
static bool cm_ib_wildcard(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET &&
	    ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24 == 127)
		return true;
	if (sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr))
		return true;
	return umc_cm_zero_addr(sa); /* 0.0.0.0/8, ::, an all-zero AF_IB address */
}

/*
 * The MGID of a join: IPv4 -> ff1S:401b:PPPP::(ip & 0x0fffffff), IPv6 ->
 * ff1S:601b:PPPP + address bytes 6..15 (an SA-assigned ff1x:a01b MGID
 * verbatim), AF_IB verbatim; RDMA_PS_UDP writes 01 in byte 3 (4001/6001,
 * "the RDMA CM signature").  S and PPPP come from the IPoIB broadcast
 * group's MGID.  A wildcard address gives MGID 0.
 */
static void cm_ib_mgid(const struct umc_cm_id *idp, const struct sockaddr *sa,
		       const uint8_t *bcast_mgid, uint8_t mgid[16])
{
	memset(mgid, 0, 16);
	if (cm_ib_wildcard(sa))
		return;
	if (sa->sa_family == AF_IB) {
		memcpy(mgid, &((const struct sockaddr_ib *)sa)->sib_addr, 16);
		return;
	}
	if (sa->sa_family == AF_INET6) {
		const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;

		if ((get_be32(a) & 0xfff0ffff) == 0xff10a01b) {
			memcpy(mgid, a, 16);
			return;
		}
		mgid[2] = 0x60;
		memcpy(mgid + 6, a + 6, 10);
	} else {
		uint32_t ip = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		mgid[2] = 0x40;
		put_be32(mgid + 12, ip & 0x0fffffff);
	}
	mgid[0] = 0xff;
	mgid[1] = (uint8_t)(0x10 | (bcast_mgid[1] & 0x0f));
	mgid[3] = idp->id.ps == RDMA_PS_UDP ? 0x01 : 0x1b;
	mgid[4] = bcast_mgid[4]; /* P_Key: the broadcast MGID's bytes 4-5 */
	mgid[5] = bcast_mgid[5];
}

/* ------------------------------------------------------------------------- */
/* Events.                                                                   */

/* The JOIN event from the group's record (cma_make_mc_event); port->lock held. */
static void __cm_ib_event(struct cm_ib_member *m, int status)
{
	struct umc_cm_mc *mc = m->mc;
	struct umc_cm_id *idp = mc->idp;
	const struct umc_mcmember *rec = &m->group->rec;
	struct umc_cm_event *evt;
	struct rdma_ud_param *ud;

	if (mc->left)
		return;
	evt = umc_cm_event_new(idp, mc, status ? RDMA_CM_EVENT_MULTICAST_ERROR
					       : RDMA_CM_EVENT_MULTICAST_JOIN, status);
	if (!evt)
		return;
	if (status)
		goto queue;
	/* cma_set_qkey: a group whose Q_Key is not the id's gets no event at all. */
	if (idp->qkey != rec->qkey) {
		umc_cm_event_free(evt);
		return;
	}
	ud = &evt->ev.param.ud;
	ud->qp_num = UMC_MCAST_QPN;
	ud->qkey = idp->qkey;
	memcpy(ud->ah_attr.grh.dgid.raw, rec->mgid, 16);
	ud->ah_attr.grh.flow_label = rec->flow_label;
	ud->ah_attr.grh.hop_limit = rec->hop_limit;
	ud->ah_attr.grh.traffic_class = rec->tclass;
	ud->ah_attr.grh.sgid_index = 0; /* rec.port_gid: the port's GID 0 */
	ud->ah_attr.dlid = rec->mlid;
	ud->ah_attr.sl = rec->sl;
	ud->ah_attr.static_rate = rec->rate;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.port_num = UMC_PORT_NUM;
queue:
	umc_cm_event_queue(evt);
}

/* ------------------------------------------------------------------------- */
/* The group's work: one SA transaction at a time.                           */

static void cm_ib_sa_done(void *ctx, int err, const struct umc_sa_reply *reply);

static void adjust_members(struct cm_ib_group *g, uint8_t bits, int delta)
{
	for (int i = 0; i < CM_IB_NBITS; i++)
		if (bits & (1u << i))
			g->members[i] += delta;
}

/* kernel get_leave_state: bits held at the SA that no completed join needs. */
static uint8_t leave_bits(const struct cm_ib_group *g)
{
	uint8_t leave = 0;

	for (int i = 0; i < CM_IB_NBITS; i++)
		if (!g->members[i] && (g->rec.join_state & (1u << i)))
			leave |= (uint8_t)(1u << i);
	return leave;
}

/*
 * kernel cmp_rec: does the held record match what a join asked for, field
 * by field as far as its component mask goes?
 */
static bool cm_ib_rec_matches(const struct umc_mcmember *held, const struct umc_mcmember *want,
			      uint64_t mask)
{
	if ((mask & UMC_MCM_COMP_PORT_GID) && memcmp(held->port_gid, want->port_gid, 16))
		return false;
	if ((mask & UMC_MCM_COMP_QKEY) && held->qkey != want->qkey)
		return false;
	if ((mask & UMC_MCM_COMP_MLID) && held->mlid != want->mlid)
		return false;
	if ((mask & UMC_MCM_COMP_MTU) && held->mtu != want->mtu)
		return false;
	if ((mask & UMC_MCM_COMP_TCLASS) && held->tclass != want->tclass)
		return false;
	if ((mask & UMC_MCM_COMP_PKEY) && held->pkey != want->pkey)
		return false;
	if ((mask & UMC_MCM_COMP_RATE) && held->rate != want->rate)
		return false;
	if ((mask & UMC_MCM_COMP_PKT_LIFE) && held->pkt_life != want->pkt_life)
		return false;
	if ((mask & UMC_MCM_COMP_SL) && held->sl != want->sl)
		return false;
	if ((mask & UMC_MCM_COMP_FLOW) && held->flow_label != want->flow_label)
		return false;
	if ((mask & UMC_MCM_COMP_HOP) && held->hop_limit != want->hop_limit)
		return false;
	if ((mask & UMC_MCM_COMP_SCOPE) && held->scope != want->scope)
		return false;
	return true;
}

/* Send an SA MCMemberRecord @method of @rec with @mask; port->lock held. */
static int __cm_ib_sa_send(struct cm_ib_group *g, uint8_t method, const struct umc_mcmember *rec,
			   uint64_t mask)
{
	struct umc_device *dev = g->port->dev;
	struct umc_sa_client *sa = dev->link->sa(dev);
	uint8_t mad[UMC_MAD_SIZE];
	int ret;

	if (!sa)
		return -ENETDOWN;
	umc_sa_request_encode(mad, method, UMC_SA_ATTR_MCMEMBER_RECORD, mask, 0, rec);
	/* The reply takes port->lock, held here: marking the group after the send is in time. */
	ret = umc_sa_send(sa, mad, UMC_SA_TIMEOUT_MS, UMC_SA_RETRIES, cm_ib_sa_done, g, NULL);
	g->busy = !ret;
	g->setting = !ret && method == UMC_MAD_METHOD_SET;
	return ret;
}

/*
 * A member is done (failed, reset): off every list, no count, and it no
 * longer refers to its group, which may go when nothing else holds it.
 */
static void __cm_ib_done(struct cm_ib_member *m)
{
	m->counted = false;
	m->group = NULL;
}

/* Take the head pending member off the queue; port->lock held. */
static struct cm_ib_member *__cm_ib_pending_pop(struct cm_ib_group *g)
{
	struct cm_ib_member *m = g->pending;

	g->pending = m->next;
	if (!g->pending)
		g->pending_tail = &g->pending;
	return m;
}

/* Fail the head pending member with @status; port->lock held. */
static void __cm_ib_join_fail(struct cm_ib_group *g, int status)
{
	struct cm_ib_member *m = __cm_ib_pending_pop(g);

	__cm_ib_event(m, status);
	__cm_ib_done(m);
}

/* Complete (or refuse) the head pending member @m from the held record. */
static void __cm_ib_join_local(struct cm_ib_group *g, struct cm_ib_member *m)
{
	if (!cm_ib_rec_matches(&g->rec, &m->rec, m->comp_mask)) {
		__cm_ib_join_fail(g, -EINVAL);
		return;
	}
	__cm_ib_pending_pop(g);
	m->counted = true;
	adjust_members(g, m->rec.join_state, +1);
	m->next = g->active;
	g->active = m;
	__cm_ib_event(m, 0);
}

static void __cm_ib_group_free(struct cm_ib_group *g)
{
	for (struct cm_ib_group **pp = &g->port->groups; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	free(g);
}

/* Members that are done no longer reach the group: release them. */
static void cm_ib_member_put(struct cm_ib_member *m)
{
	umc_cm_mc_put(m->mc);
	free(m);
}

/*
 * kernel mcast_work_handler: advance the group until it waits for the SA
 * or has nothing to do (then free it if nothing holds it).  port->lock held.
 */
static void __cm_ib_group_run(struct cm_ib_group *g)
{
	while (!g->busy) {
		struct cm_ib_member *m = g->pending;

		if (m) {
			if (!(m->rec.join_state & ~g->rec.join_state)) {
				__cm_ib_join_local(g, m);
				continue;
			}
			if (__cm_ib_sa_send(g, UMC_MAD_METHOD_SET, &m->rec, m->comp_mask))
				__cm_ib_join_fail(g, -EIO);
			else
				g->last_join = m;
			continue;
		}
		uint8_t leave = leave_bits(g);

		if (leave) {
			struct umc_mcmember rec = g->rec;

			g->rec.join_state &= (uint8_t)~leave;
			g->leaving = leave;
			rec.join_state = leave;
			/* A Delete that cannot be sent: nothing more to do for these bits. */
			__cm_ib_sa_send(g, UMC_SA_METHOD_DELETE, &rec, CM_IB_LEAVE_MASK);
			continue;
		}
		if (!g->active)
			__cm_ib_group_free(g);
		return;
	}
}

/* An SA reply (or failure) for group @ctx, on the SA client's thread. */
static void cm_ib_sa_done(void *ctx, int err, const struct umc_sa_reply *reply)
{
	struct cm_ib_group *g = ctx;
	struct cm_ib_port *port = g->port;

	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	g->busy = false;
	if (!err && reply->status)
		err = -EINVAL; /* any MAD status (kernel sa_query: -EINVAL) */
	if (!g->setting) {
		if (err && g->retries-- > 0)
			g->rec.join_state |= g->leaving; /* send the Delete again */
		g->leaving = 0;
	} else {
		/* Recorded even if the joiner left: the bits are held at the SA. */
		if (!err)
			umc_mcmember_decode(reply->data, &g->rec);
		else if (g->last_join) /* still the head of the queue */
			__cm_ib_join_fail(g, err);
		g->last_join = NULL;
	}
	__cm_ib_group_run(g);
	umc_mutex_unlock(&port->lock);
}

/* ------------------------------------------------------------------------- */
/* Link ops.                                                                 */

/*
 * cma_set_default_qkey on IB: RDMA_UDP_QKEY for RDMA_PS_UDP and RDMA_PS_IB;
 * RDMA_PS_IPOIB the IPoIB broadcast group's, from record @bcast
 * (-EADDRNOTAVAIL while it is unknown: NULL).
 */
static int cm_ib_ps_qkey(enum rdma_port_space ps, const struct umc_mcmember *bcast,
			 uint32_t *qkey)
{
	switch (ps) {
	case RDMA_PS_UDP:
	case RDMA_PS_IB:
		*qkey = RDMA_UDP_QKEY;
		return 0;
	case RDMA_PS_IPOIB:
		if (!bcast)
			return -EADDRNOTAVAIL;
		*qkey = bcast->qkey;
		return 0;
	default:
		return -EINVAL;
	}
}

static void ib_port_add(struct umc_device *dev)
{
	(void)cm_ib_port_get(dev); /* a failure is the join's (-ENOMEM) */
}

static int ib_default_qkey(struct umc_cm_id *idp, uint32_t *qkey)
{
	struct cm_ib_port *port = cm_ib_port_get(idp->dev);
	int ret;

	if (!port)
		return -ENOMEM;
	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	ret = cm_ib_ps_qkey(idp->id.ps, port->bcast_valid ? &port->bcast : NULL, qkey);
	umc_mutex_unlock(&port->lock);
	return ret;
}

static int ib_join(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
	struct umc_device *dev = idp->dev;
	struct cm_ib_port *port = cm_ib_port_get(dev);
	struct cm_ib_member *m;
	struct cm_ib_group *g;
	struct umc_mcmember bcast;
	int ret;

	if (!port)
		return -ENOMEM;
	/* ib_sa_get_mcmember_rec: the IPoIB broadcast group must be known. */
	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	ret = port->bcast_valid ? 0 : -EADDRNOTAVAIL;
	bcast = port->bcast;
	umc_mutex_unlock(&port->lock);
	if (ret)
		return ret;
	/* The Q_Key from the same broadcast record as the join's. */
	if (!idp->qkey) {
		ret = cm_ib_ps_qkey(idp->id.ps, &bcast, &idp->qkey);
		if (ret)
			return ret;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->rec = bcast; /* mlid, MTU, rate, SL, flow label, ... inherited */
	cm_ib_mgid(idp, (const struct sockaddr *)&mc->addr, bcast.mgid, m->rec.mgid);
	memcpy(m->rec.port_gid, dev->gids[idp->gid_index].raw, 16);
	m->rec.qkey = idp->qkey;
	m->rec.join_state = mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				    ? UMC_JOIN_SENDONLY_FULL
				    : UMC_JOIN_FULL;
	m->rec.proxy_join = false;
	m->comp_mask = CM_IB_COMP_MASK | (idp->id.ps == RDMA_PS_IPOIB ? CM_IB_COMP_IPOIB : 0);
	m->mc = mc;
	atomic_fetch_add(&mc->refcnt, 1);
	mc->link_priv = m;

	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	static const uint8_t zero[16];
	bool mgid0 = !memcmp(m->rec.mgid, zero, 16);

	for (g = mgid0 ? NULL : port->groups; g; g = g->next)
		if (!g->mgid0 && !memcmp(g->rec.mgid, m->rec.mgid, 16))
			break;
	if (!g) {
		g = calloc(1, sizeof(*g));
		if (!g) {
			umc_mutex_unlock(&port->lock);
			mc->link_priv = NULL;
			cm_ib_member_put(m);
			return -ENOMEM;
		}
		memcpy(g->rec.mgid, m->rec.mgid, 16);
		g->mgid0 = mgid0;
		g->retries = CM_IB_LEAVE_RETRIES;
		g->pending_tail = &g->pending;
		g->port = port;
		g->next = port->groups;
		port->groups = g;
	}
	m->group = g;
	*g->pending_tail = m;
	g->pending_tail = &m->next;
	__cm_ib_group_run(g);
	umc_mutex_unlock(&port->lock);
	return 0;
}

/* Take @m off whichever list it is on; port->lock held. */
static void __cm_ib_unlink(struct cm_ib_group *g, struct cm_ib_member *m)
{
	struct cm_ib_member **pp;

	for (pp = &g->pending; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			if (g->pending_tail == &m->next)
				g->pending_tail = pp;
			return;
		}
	}
	for (pp = &g->active; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			return;
		}
	}
}

/*
 * kernel ib_sa_free_multicast: a completed join gives its bits back (the
 * group's work sends the Delete when no other join needs them); a pending
 * one is dropped from the queue, its Set, if in flight, completes for the
 * group and is then undone the same way.  Never waits for the SA.
 */
static void ib_leave(struct umc_cm_id *idp, struct umc_cm_mc *mc)
{
	struct cm_ib_member *m = mc->link_priv;
	struct cm_ib_port *port;
	struct cm_ib_group *g;

	if (!m)
		return;
	port = idp->dev->cm_priv; /* made by the join */
	umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
	g = m->group;
	if (g) { /* not done yet: give back what it holds */
		if (m->counted)
			adjust_members(g, m->rec.join_state, -1);
		__cm_ib_unlink(g, m);
		if (g->last_join == m)
			g->last_join = NULL; /* the reply updates the group, fails no one */
		__cm_ib_done(m);
		__cm_ib_group_run(g);
	}
	umc_mutex_unlock(&port->lock);
	mc->link_priv = NULL;
	cm_ib_member_put(m);
}

/*
 * The port lost its memberships at the SM (kernel mcast_groups_event with
 * MCAST_GROUP_ERROR): every completed join ends with MULTICAST_ERROR
 * -ENETRESET, the bits held are forgotten (the SA has none any more), and
 * joins still pending carry on with a fresh Set.  Context: port->lock held.
 */
static void __cm_ib_port_reset(struct cm_ib_port *port)
{
	for (struct cm_ib_group *g = port->groups, *next; g; g = next) {
		next = g->next;
		while (g->active) {
			struct cm_ib_member *m = g->active;

			g->active = m->next;
			adjust_members(g, m->rec.join_state, -1);
			__cm_ib_event(m, -ENETRESET);
			__cm_ib_done(m);
		}
		g->rec.join_state = 0;
		__cm_ib_group_run(g);
	}
}

/*
 * A port event (umc_dev_event), on the thread that raised it: the link's
 * or the SA client's.  After the events core/multicast.c's
 * mcast_event_handler takes as the end of every group, the SA holds none
 * of the port's memberships: umcast's IB link raises UMC_EVENT_PORT_ERR
 * when umc-sm lost the port (restarted, or the lease passed), and the
 * broadcast record is not trusted either.  UMC_EVENT_PORT_ACTIVE: the port
 * is registered (again); the record is read anew, as IPoIB joins its
 * broadcast group again, and joins fail with -EADDRNOTAVAIL until it is
 * known.
 */
static void cm_ib_port_event(struct umc_event_handler *h, enum umc_event_type event)
{
	struct cm_ib_port *port = container_of(h, struct cm_ib_port, events);

	switch (event) {
	case UMC_EVENT_PORT_ERR:
	case UMC_EVENT_LID_CHANGE:
	case UMC_EVENT_SM_CHANGE:
	case UMC_EVENT_CLIENT_REREGISTER:
		umc_mutex_lock(&port->lock, UMC_LOCK_CM_IB_PORT);
		port->bcast_valid = false;
		__cm_ib_port_reset(port);
		umc_mutex_unlock(&port->lock);
		break;
	case UMC_EVENT_PORT_ACTIVE:
		cm_ib_bcast_read(port, false);
		break;
	default:
		break;
	}
}

const struct umc_cm_join_ops umc_cm_join_ib = {
	.name = "ib",
	.port_add = ib_port_add,
	.default_qkey = ib_default_qkey,
	.join = ib_join,
	.leave = ib_leave,
};
