// SPDX-License-Identifier: MIT
/*
 * mcmember.c - the SA's MCMemberRecord rules: SubnAdmSet (join, create),
 * SubnAdmDelete (leave), SubnAdmGet and SubnAdmGetTable (IBA 15.2.5.17,
 * o15-0.1.x / o15-0.2.x), as OpenSM 3.3.23's osm_sa_mcmember_record.c
 * applies them (its answers, seen live on ibsim, are the ones recorded in
 * tests/integ/sa_diff/matrix.seq), without these defects of it:
 *   - ProxyJoin is bit 7 of byte 49 on output and ignored in requests (the
 *     SA decides what is a proxy join: the PortGID's port is not the
 *     requester);
 *   - a group is deleted when its last full member (JoinState 0x1 or
 *     0x8) leaves, also when a port holding 0x9 clears 0x1 and later 0x8;
 *   - a Delete reply's JoinState is what the port still holds after the
 *     whole operation (0 when the group went with it).
 * Plus umc-sm's own rules: with --no-sendonly a Set with JoinState bit 0x8
 * is refused with ERR_REQ_INVALID (after the component-mask, PortGID and
 * P_Key checks); only the port itself changes its membership: a proxy Set
 * or another port's Delete needs the SM key umc-sm was started with
 * (--sm-key), else ERR_REQ_DENIED, and a port's own Set of a membership
 * made by proxy takes it over (ProxyJoin cleared).
 *
 * Every request is a pure function of the state and the requester: no
 * clock, no I/O; a rejected Set changes nothing (a group is only created
 * once every check has passed).
 */
#include <stdlib.h>
#include <string.h>

#include "sm.h"

struct req {
	struct umc_sm *sm;
	struct umc_sm_port *requester;
	const uint8_t *mad;
	const struct umc_sa_hdr *h;
	uint64_t comp;
	struct umc_mcmember rec;
	struct umc_sm_sa_reply *reply;
};

static void reject(struct req *r, uint16_t status, const char *why)
{
	umc_sm_sa_error(r->sm, r->requester, r->mad, r->h, status, why, r->reply);
}

static uint64_t gid_half(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static bool is_zero16(const uint8_t *p)
{
	static const uint8_t zero[16];

	return !memcmp(p, zero, 16);
}

/* Rate and MTU given with both selector and value must be valid codes (OpenSM rate/mtu_is_valid). */
static bool rate_mtu_valid(const struct req *r)
{
	uint64_t c = r->comp;

	if ((c & UMC_MCM_COMP_RATE_SEL) && (c & UMC_MCM_COMP_RATE) && !umc_sa_rate_valid(r->rec.rate))
		return false;
	if ((c & UMC_MCM_COMP_MTU_SEL) && (c & UMC_MCM_COMP_MTU) && !umc_sa_mtu_valid(r->rec.mtu))
		return false;
	return true;
}

/*
 * The components that must equal the group's when their bit is set
 * (OpenSM validate_other_comp_fields): Q_Key, P_Key (same partition, one of
 * the two a full member), TClass, SL, FlowLabel, HopLimit.
 * Returns: NULL if they match, else what differs.
 */
static const char *fields_differ(uint64_t comp, const struct umc_mcmember *q,
				 const struct umc_mcmember *g)
{
	if ((comp & UMC_MCM_COMP_QKEY) && q->qkey != g->qkey)
		return "Q_Key differs from the group's";
	if (comp & UMC_MCM_COMP_PKEY) {
		if (!((q->pkey | g->pkey) & 0x8000))
			return "both P_Keys are limited members";
		if ((q->pkey & 0x7fff) != (g->pkey & 0x7fff))
			return "P_Key differs from the group's";
	}
	if ((comp & UMC_MCM_COMP_TCLASS) && q->tclass != g->tclass)
		return "TClass differs from the group's";
	if ((comp & UMC_MCM_COMP_SL) && q->sl != g->sl)
		return "SL differs from the group's";
	if ((comp & UMC_MCM_COMP_FLOW) && q->flow_label != g->flow_label)
		return "FlowLabel differs from the group's";
	if ((comp & UMC_MCM_COMP_HOP) && q->hop_limit != g->hop_limit)
		return "HopLimit differs from the group's";
	return NULL;
}

/* A selector (IBA 15.2.5.16) between a group's value and a requested one, by rank. */
static bool selector_met(unsigned sel, int group_rank, int req_rank)
{
	switch (sel) {
	case UMC_SA_SEL_GT:
		return group_rank > req_rank;
	case UMC_SA_SEL_LT:
		return group_rank < req_rank;
	case UMC_SA_SEL_EXACT:
		return group_rank == req_rank;
	}
	return true;
}

/* MTU and Rate selectors the group must satisfy (OpenSM validate_more_comp_fields). */
static bool selectors_met(uint64_t comp, const struct umc_mcmember *q, const struct umc_mcmember *g)
{
	if ((comp & UMC_MCM_COMP_MTU_SEL) && !selector_met(q->mtu_sel, g->mtu, q->mtu))
		return false;
	if ((comp & UMC_MCM_COMP_RATE_SEL) &&
	    !selector_met(q->rate_sel, umc_sa_rate_order(g->rate), umc_sa_rate_order(q->rate)))
		return false;
	return true;
}

/* The joining port can carry the group's MTU and rate (OpenSM validate_port_caps). */
static bool port_caps_met(const struct umc_sm_port *port, const struct umc_mcmember *g)
{
	return port->mtu >= g->mtu && umc_sa_rate_order(port->rate) >= umc_sa_rate_order(g->rate);
}

/*
 * MTU and rate of a new group (OpenSM mgrp_request_is_realizable): the
 * port's, unless both selector and value are given; then "exactly" takes
 * the value, "greater than" the port's if it is greater, "less than" one
 * step below the value (or the port's if that is lower), "best" the port's.
 */
static bool realize(const struct req *r, const struct umc_sm_port *port, struct umc_mcmember *g)
{
	const struct umc_mcmember *q = &r->rec;
	unsigned mtu = port->mtu, rate = port->rate;

	if ((r->comp & UMC_MCM_COMP_MTU) && (r->comp & UMC_MCM_COMP_MTU_SEL) &&
	    q->mtu_sel != UMC_SA_SEL_BEST) {
		mtu = q->mtu;
		if (q->mtu_sel == UMC_SA_SEL_GT) {
			if (q->mtu >= port->mtu)
				return false;
			mtu = port->mtu;
		} else if (q->mtu_sel == UMC_SA_SEL_LT) {
			mtu = q->mtu > port->mtu ? port->mtu : q->mtu - 1u;
		}
		if (!umc_sa_mtu_valid(mtu))
			return false;
	}
	if ((r->comp & UMC_MCM_COMP_RATE) && (r->comp & UMC_MCM_COMP_RATE_SEL) &&
	    q->rate_sel != UMC_SA_SEL_BEST) {
		int want = umc_sa_rate_order(q->rate), have = umc_sa_rate_order(port->rate);

		rate = q->rate;
		if (q->rate_sel == UMC_SA_SEL_GT) {
			if (want >= have)
				return false;
			rate = port->rate;
		} else if (q->rate_sel == UMC_SA_SEL_LT) {
			rate = want > have ? port->rate : umc_sa_rate_step(q->rate, -1);
		}
		if (!umc_sa_rate_valid(rate))
			return false;
	}
	g->mtu = (uint8_t)mtu;
	g->rate = (uint8_t)rate;
	return true;
}

/*
 * A requested MGID (OpenSM validate_requested_mgid, o15-0.1.5): multicast,
 * no reserved flag bits, the SA signature 0xA01B not with link-local
 * scope.  IPoIB-signed MGIDs (0x401B, 0x601B) skip those checks, but their
 * partition's IPv4 broadcast group must exist and agree in Q_Key, P_Key,
 * TClass, SL, FlowLabel and HopLimit (OpenSM ERR 1B1B / 1B1C).
 * Returns: NULL if valid, else why not.
 */
static const char *mgid_invalid(struct req *r)
{
	const uint8_t *mgid = r->rec.mgid;
	unsigned sig = (unsigned)mgid[2] << 8 | mgid[3];
	uint8_t bcast[16] = { 0xff, 0x10, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff };
	struct umc_sm_group *bg;

	if (mgid[0] != 0xff)
		return "MGID is not a multicast GID";
	if (sig == 0x401B || sig == 0x601B) {
		bcast[1] |= mgid[1] & 0x0f;
		bcast[4] = mgid[4];
		bcast[5] = mgid[5];
		if (sig == 0x401B && !memcmp(bcast, mgid, 16))
			return NULL;
		bg = umc_sm_group_by_mgid(r->sm, bcast);
		if (!bg)
			return "no IPoIB broadcast group for this IPoIB MGID's partition and scope";
		if (fields_differ(r->comp, &r->rec, &bg->rec))
			return "fields differ from the IPoIB broadcast group's";
		return NULL;
	}
	if (mgid[1] & 0xe0)
		return "MGID has reserved flag bits set";
	if (sig == 0xA01B && (mgid[1] & 0x0f) == UMC_MGID_SCOPE_LINK)
		return "MGID has the SA signature 0xA01B with link-local scope";
	return NULL;
}

/*
 * An SA-assigned MGID (OpenSM build_new_mgid): ff1S:a01b, the subnet
 * prefix, with bytes 10..13 replaced by a counter, least significant byte
 * first (what OpenSM's host-order copy gives on x86, so the two SAs assign
 * the same MGIDs); S is the request's Scope if its bit is set, else 2.
 * Returns: 0, or -1 if UMC_SM_MGID_TRIES candidates are all taken.
 */
static int assign_mgid(struct req *r, uint8_t mgid[16])
{
	struct umc_sm_groups *g = &r->sm->groups;
	unsigned scope = (r->comp & UMC_MCM_COMP_SCOPE) ? r->rec.scope : UMC_MGID_SCOPE_LINK;
	uint64_t prefix = r->sm->cfg.subnet_prefix;
	int i;

	mgid[0] = 0xff;
	mgid[1] = (uint8_t)(0x10 | (scope & 0xf));
	mgid[2] = 0xa0;
	mgid[3] = 0x1b;
	for (i = 0; i < 8; i++)
		mgid[4 + i] = (uint8_t)(prefix >> (56 - 8 * i));
	for (i = 0; i < UMC_SM_MGID_TRIES; i++) {
		uint32_t n = g->mgid_counter++;

		mgid[10] = (uint8_t)n;
		mgid[11] = (uint8_t)(n >> 8);
		mgid[12] = (uint8_t)(n >> 16);
		mgid[13] = (uint8_t)(n >> 24);
		if (!umc_sm_group_by_mgid(r->sm, mgid))
			return 0;
	}
	return -1;
}

/*
 * May the requester modify @m (o15-0.2.1, OpenSM validate_modify)?  A
 * membership made by its own port only by that port; a proxy membership
 * by any port of the group's partition.
 */
static bool modify_allowed(const struct req *r, const struct umc_sm_member *m)
{
	if (!m->proxy)
		return r->requester == m->port;
	return umc_sm_port_has_pkey(r->requester, m->grp->rec.pkey);
}

/*
 * umc-sm's own rule on top: a request that changes another port's
 * membership (a proxy Set, another port's Delete) must carry the SM key
 * umc-sm was started with (--sm-key).  Every local process is an SA
 * client here, where on a fabric only privileged ones are.
 */
static bool may_touch(const struct req *r, const struct umc_sm_port *port)
{
	return port == r->requester || (r->sm->cfg.sm_key_set && r->h->sm_key == r->sm->cfg.sm_key);
}

static void respond(struct req *r, const struct umc_mcmember *rec)
{
	umc_mcmember_encode(umc_sm_sa_respond(r->h, UMC_MCMEMBER_ATTR_OFFSET, r->reply), rec);
}

static void exact_selectors(struct umc_mcmember *rec)
{
	rec->mtu_sel = rec->rate_sel = rec->pkt_life_sel = UMC_SA_SEL_EXACT;
}

/*
 * The Set reply: the request with the group's MGID, Q_Key, MLID, TClass,
 * P_Key, SL, FlowLabel, HopLimit, Scope, MTU, Rate and PacketLifeTime
 * (OpenSM copy_from_create_mc_rec), which leaves only the PortGID of the
 * request, and the port's OR-ed JoinState and ProxyJoin.
 */
static void respond_join(struct req *r, const struct umc_sm_group *grp,
			 const struct umc_sm_member *m)
{
	struct umc_mcmember rec = grp->rec;

	memcpy(rec.port_gid, r->rec.port_gid, 16);
	rec.join_state = m->join_state;
	rec.proxy_join = m->proxy;
	exact_selectors(&rec);
	respond(r, &rec);
}

/* Checks a Set and a Delete share (OpenSM osm_mcmr_rcv_process and the PortGID prefix). */
static bool common_checks(struct req *r, const char *method)
{
	if ((r->comp & UMC_MCM_JOIN_MASK) != UMC_MCM_JOIN_MASK) {
		reject(r, UMC_SA_STATUS_INSUF_COMPS,
		       !strcmp(method, "Set") ? "Set needs MGID, PortGID and JoinState"
					      : "Delete needs MGID, PortGID and JoinState");
		return false;
	}
	if (!rate_mtu_valid(r)) {
		reject(r, UMC_SA_STATUS_REQ_INVALID, "invalid Rate or MTU code");
		return false;
	}
	if (gid_half(r->rec.port_gid) != r->sm->cfg.subnet_prefix) {
		reject(r, UMC_SA_STATUS_INVALID_GID, "PortGID prefix is not the subnet prefix");
		return false;
	}
	return true;
}

/* Validation of a new group; fills @g (its record) and picks its MGID and MLID. */
static const char *new_group(struct req *r, const struct umc_sm_port *port,
			     struct umc_mcmember *g, uint16_t *status)
{
	const char *why;

	*status = UMC_SA_STATUS_REQ_INVALID;
	if (!(r->rec.join_state & UMC_JOIN_ANY_FULL))
		return "creating a group needs FullMember or SendOnlyFullMember";
	if ((r->comp & UMC_MCM_CREATE_MASK) != UMC_MCM_CREATE_MASK) {
		*status = UMC_SA_STATUS_INSUF_COMPS;
		return "creating a group needs MGID, PortGID, Q_Key, TClass, P_Key, SL, "
		       "FlowLabel and JoinState";
	}
	*g = r->rec;
	if (is_zero16(r->rec.mgid)) {
		if (assign_mgid(r, g->mgid)) {
			*status = UMC_SA_STATUS_NO_RESOURCES;
			return "no unique MGID to assign";
		}
	} else if ((why = mgid_invalid(r))) {
		return why;
	}
	if (!realize(r, port, g))
		return "MTU or rate cannot be realised for this port";
	g->mlid = umc_sm_mlid_pick(r->sm, r->rec.mlid);
	if (!g->mlid) {
		*status = UMC_SA_STATUS_NO_RESOURCES;
		return "no free MLID";
	}
	exact_selectors(g);
	memset(g->port_gid, 0, 16);
	g->proxy_join = false;
	return NULL;
}

static void mcmr_set(struct req *r)
{
	struct umc_sm *sm = r->sm;
	struct umc_sm_port *port;
	struct umc_sm_group *grp;
	struct umc_sm_member *m;
	struct umc_mcmember cand;
	const struct umc_mcmember *g;
	const char *why;
	uint16_t status;
	bool proxy;

	if (!common_checks(r, "Set"))
		return;
	port = umc_sm_port_by_guid(sm, gid_half(r->rec.port_gid + 8));
	if (!port)
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "PortGID is no port of this subnet");
	proxy = port != r->requester;
	if (!may_touch(r, port))
		return reject(r, UMC_SA_STATUS_DENIED,
			      "a proxy join needs the SM key umc-sm was started with");
	if (proxy && !umc_sm_ports_share_pkey(port, r->requester))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "proxy join: ports share no P_Key");
	if ((r->comp & UMC_MCM_COMP_PKEY) && !(r->rec.pkey & 0x7fff))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "invalid P_Key");
	if (!sm->cfg.sendonly && (r->rec.join_state & UMC_JOIN_SENDONLY_FULL))
		return reject(r, UMC_SA_STATUS_REQ_INVALID,
			      "SendOnlyFullMember is not supported (--no-sendonly)");
	grp = umc_sm_group_by_mgid(sm, r->rec.mgid);
	if (!grp) {
		why = new_group(r, port, &cand, &status);
		if (why)
			return reject(r, status, why);
		g = &cand;
	} else {
		why = fields_differ(r->comp, &r->rec, &grp->rec);
		if (why)
			return reject(r, UMC_SA_STATUS_REQ_INVALID, why);
		g = &grp->rec;
	}
	if (!selectors_met(r->comp, &r->rec, g))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "the group's MTU or rate fails a selector");
	if (!port_caps_met(port, g))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "the port's MTU or rate is below the group's");
	if (!r->rec.join_state)
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "JoinState is 0");
	if (!umc_sm_port_has_pkey(port, g->pkey))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "the port is not in the group's partition");
	m = grp ? umc_sm_member_find(sm, grp, port) : NULL;
	if (m && !modify_allowed(r, m))
		return reject(r, UMC_SA_STATUS_REQ_INVALID,
			      "only the member's own port may change a non-proxy membership");
	if (!m && (port->nmembers >= sm->cfg.max_groups_per_port ||
		   port->host->members >= sm->cfg.max_groups_per_host)) {
		sm->cnt.cap_groups++;
		return reject(r, UMC_SA_STATUS_NO_RESOURCES,
			      port->nmembers >= sm->cfg.max_groups_per_port
				      ? "the port is in --max-groups-per-port groups"
				      : "the port's host is in --max-groups-per-host groups");
	}
	if (!grp) {
		grp = umc_sm_group_create(sm, &cand, false);
		if (!grp)
			return reject(r, UMC_SA_STATUS_NO_RESOURCES, "out of memory");
	}
	m = umc_sm_member_join(sm, grp, port, r->rec.join_state, proxy);
	if (!m) {
		if (!grp->nmembers && !grp->well_known)
			umc_sm_group_delete(sm, grp);
		return reject(r, UMC_SA_STATUS_NO_RESOURCES, "out of memory");
	}
	sm->cnt.joins++;
	respond_join(r, grp, m);
}

static void mcmr_delete(struct req *r)
{
	struct umc_sm *sm = r->sm;
	struct umc_sm_group *grp;
	struct umc_sm_port *port;
	struct umc_sm_member *m = NULL;
	struct umc_mcmember rec = r->rec;
	uint8_t js = r->rec.join_state;
	bool proxy;

	if (!common_checks(r, "Delete"))
		return;
	grp = umc_sm_group_by_mgid(sm, r->rec.mgid);
	if (!grp)
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "no such group");
	port = umc_sm_port_by_guid(sm, gid_half(r->rec.port_gid + 8));
	if (port)
		m = umc_sm_member_find(sm, grp, port);
	if (!m)
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "PortGID is not a member of the group");
	if (!(js & m->join_state))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "JoinState has no bit the member holds");
	if (js & ~m->join_state)
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "JoinState has bits the member does not hold");
	if (!modify_allowed(r, m))
		return reject(r, UMC_SA_STATUS_REQ_INVALID,
			      "only the member's own port may change a non-proxy membership");
	if (!may_touch(r, port))
		return reject(r, UMC_SA_STATUS_DENIED,
			      "deleting another port's membership needs the SM key umc-sm was started with");
	rec.scope = grp->rec.scope;
	proxy = m->proxy;
	rec.join_state = umc_sm_member_leave(sm, m, js);
	rec.proxy_join = rec.join_state && proxy;
	exact_selectors(&rec);
	sm->cnt.leaves++;
	respond(r, &rec);
}

/* ------------------------------------------------------------------------- */
/* Queries.                                                                  */

static uint8_t *table_slot(struct umc_sm *sm, uint32_t n)
{
	size_t need = ((size_t)n + 1) * UMC_MCMEMBER_STRIDE;

	if (need > sm->table_cap) {
		size_t cap = sm->table_cap ? sm->table_cap * 2 : 64 * UMC_MCMEMBER_STRIDE;
		uint8_t *t;

		while (cap < need)
			cap *= 2;
		t = realloc(sm->table, cap);
		if (!t)
			return NULL;
		sm->table = t;
		sm->table_cap = cap;
	}
	return sm->table + (size_t)n * UMC_MCMEMBER_STRIDE;
}

struct query {
	struct req *r;
	bool trusted;
	uint8_t mask;	  /* Scope/JoinState nibbles compared */
	uint8_t req_ss;	  /* the request's Scope << 4 | JoinState */
	uint32_t n;	  /* records */
	bool oom;
};

static void emit(struct query *q, const struct umc_sm_group *grp, uint8_t js,
		 const struct umc_sm_port *port, bool proxy)
{
	uint8_t *slot = table_slot(q->r->sm, q->n);
	struct umc_mcmember rec = grp->rec;

	if (!slot) {
		q->oom = true;
		return;
	}
	rec.join_state = js;
	rec.proxy_join = proxy;
	memset(rec.port_gid, 0, 16);
	if (port)
		umc_sm_port_gid(q->r->sm, port, rec.port_gid);
	if (!q->trusted) { /* p923: PortGID, JoinState and ProxyJoin only for trusted requests */
		memset(rec.port_gid, 0, 16);
		rec.join_state = 0;
		rec.proxy_join = false;
	}
	umc_mcmember_encode(slot, &rec);
	q->n++;
}

static bool nibbles_match(const struct query *q, uint8_t scope, uint8_t js)
{
	return (q->mask & q->req_ss) == (q->mask & (uint8_t)(scope << 4 | js));
}

/* One group against the query (OpenSM mcmr_by_comp_mask). */
static void query_group(struct query *q, const struct umc_sm_group *grp)
{
	struct req *r = q->r;
	const struct umc_mcmember *g = &grp->rec;
	const struct umc_sm_member *m;
	const struct umc_sm_port *port = NULL;

	if ((r->comp & UMC_MCM_COMP_MGID) && memcmp(r->rec.mgid, g->mgid, 16))
		return;
	if ((r->comp & UMC_MCM_COMP_MLID) && r->rec.mlid != g->mlid)
		return;
	if (!umc_sm_port_has_pkey(r->requester, g->pkey) || fields_differ(r->comp, &r->rec, g))
		return;
	if ((r->comp & UMC_MCM_COMP_PROXY) && r->rec.proxy_join != g->proxy_join)
		return;
	if (!selectors_met(r->comp, &r->rec, g))
		return;
	if (r->comp & UMC_MCM_COMP_PORT_GID) {
		const struct umc_sm_port *p;

		p = umc_sm_port_by_guid(r->sm, gid_half(r->rec.port_gid + 8));
		m = p ? umc_sm_member_find(r->sm, grp, p) : NULL;
		if (!m || !nibbles_match(q, g->scope, m->join_state))
			return;
		emit(q, grp, m->join_state, m->port, m->proxy);
		return;
	}
	if (q->trusted) { /* one record per member */
		for (m = grp->members; m; m = m->grp_next)
			if (nibbles_match(q, g->scope, m->join_state))
				emit(q, grp, m->join_state, m->port, m->proxy);
		return;
	}
	if (nibbles_match(q, g->scope, g->join_state))
		emit(q, grp, g->join_state, port, false);
}

static int record_cmp(const void *a, const void *b)
{
	return memcmp(a, b, 32); /* MGID, then PortGID */
}

/*
 * At most how many records a query can match, from counts alone: one per
 * member (trusted, without a PortGID) or one per group, of the one group
 * an MGID or MLID names or of them all.
 */
static size_t query_bound(struct umc_sm *sm, const struct umc_sa_hdr *h,
			  const struct umc_mcmember *rec)
{
	bool per_member = h->sm_key && !(h->comp_mask & UMC_MCM_COMP_PORT_GID);
	const struct umc_sm_group *grp;

	if (h->comp_mask & (UMC_MCM_COMP_MGID | UMC_MCM_COMP_MLID)) {
		grp = h->comp_mask & UMC_MCM_COMP_MGID ? umc_sm_group_by_mgid(sm, rec->mgid)
						       : umc_sm_group_by_mlid(sm, rec->mlid);
		return !grp ? 0 : per_member ? grp->nmembers : 1;
	}
	return per_member ? sm->groups.members.count : sm->groups.count;
}

/**
 * umc_sm_sa_mcmember_fits - could @port get the transfer a GetTable needs?
 * @sm:   the state
 * @port: the requester
 * @h:    the GetTable's header
 * @rec:  its record
 *
 * Judged from counts, before any table is built (umc_sm_rmpp_room() with
 * the most records the query can match), so that a GetTable that would be
 * refused BUSY costs nothing.
 *
 * Returns: true if it may go ahead; false counts cap_rmpp.
 */
bool umc_sm_sa_mcmember_fits(struct umc_sm *sm, struct umc_sm_port *port,
			     const struct umc_sa_hdr *h, const struct umc_mcmember *rec)
{
	size_t len = query_bound(sm, h, rec) * UMC_MCMEMBER_STRIDE;

	if (umc_sm_rmpp_room(sm, port, h->mad.tid, len))
		return true;
	sm->cnt.cap_rmpp++;
	return false;
}

static void mcmr_query(struct req *r)
{
	struct umc_sm *sm = r->sm;
	struct query q = {
		.r = r,
		.trusted = r->h->sm_key != 0, /* a wrong non-zero key never gets here */
		.mask = (uint8_t)((r->comp & UMC_MCM_COMP_SCOPE ? 0xf0 : 0) |
				  (r->comp & UMC_MCM_COMP_JOIN_STATE ? 0x0f : 0)),
		.req_ss = (uint8_t)(r->rec.scope << 4 | r->rec.join_state),
	};
	const struct umc_sm_group *grp;

	if (!rate_mtu_valid(r))
		return reject(r, UMC_SA_STATUS_REQ_INVALID, "invalid Rate or MTU code");
	if (r->h->mad.method == UMC_SA_METHOD_GET_TABLE &&
	    !umc_sm_sa_mcmember_fits(sm, r->requester, r->h, &r->rec))
		return reject(r, UMC_MAD_STATUS_BUSY, "no room for another GetTable transfer");
	if (r->comp & UMC_MCM_COMP_MGID) {
		grp = umc_sm_group_by_mgid(sm, r->rec.mgid);
		if (grp)
			query_group(&q, grp);
	} else if (r->comp & UMC_MCM_COMP_MLID) {
		grp = umc_sm_group_by_mlid(sm, r->rec.mlid);
		if (grp)
			query_group(&q, grp);
	} else {
		for (grp = sm->groups.list; grp; grp = grp->next)
			query_group(&q, grp);
	}
	if (q.oom)
		return reject(r, UMC_SA_STATUS_NO_RESOURCES, "out of memory");
	if (r->h->mad.method == UMC_MAD_METHOD_GET) {
		if (q.n > 1)
			return reject(r, UMC_SA_STATUS_TOO_MANY_RECORDS, "Get matches more than one record");
		if (!q.n)
			return reject(r, UMC_SA_STATUS_NO_RECORDS, "Get matches no record");
		memcpy(umc_sm_sa_respond(r->h, UMC_MCMEMBER_ATTR_OFFSET, r->reply), sm->table,
		       UMC_MCMEMBER_STRIDE);
		return;
	}
	if (q.n > 1)
		qsort(sm->table, q.n, UMC_MCMEMBER_STRIDE, record_cmp);
	umc_sm_sa_respond_table(r->h, sm->table, q.n, r->reply);
}

/**
 * umc_sm_sa_mcmember - an MCMemberRecord Get, Set, GetTable or Delete.
 * @sm:    the state
 * @port:  the requester (the registered port the MAD came from)
 * @mad:   the request, UMC_MAD_SIZE bytes
 * @h:     its decoded header (method and attribute already checked)
 * @reply: the response: one MAD, or for GetTable the records
 *
 * Statuses, in the order of the checks (OpenSM ERR numbers in brackets):
 *   Set/Delete:  0x0600 mask lacks MGID|PortGID|JoinState [1B18, 1B20];
 *                0x0200 invalid Rate or MTU code with selector and value;
 *                0x0500 PortGID prefix not the subnet's [1B40, 1B41]
 *   Set:         0x0200 unknown PortGID; 0x0700 proxy without the SM key
 *                given to umc-sm; 0x0200 proxy without a shared P_Key;
 *                P_Key with base 0; JoinState 0x8 with --no-sendonly
 *     new group: 0x0200 JoinState without 0x1 or 0x8 [1B10];
 *                0x0600 mask lacks 0x130C7 [1B11]; 0x0100 no MGID to
 *                assign [1B23]; 0x0200 invalid MGID [1B01, 1B24, 1B28,
 *                1B1B, 1B1C] or MTU/rate not realisable [1B26];
 *                0x0100 no free MLID [1B19]
 *     new member: 0x0100 the port or its source host at its membership
 *                cap (--max-groups-per-port, --max-groups-per-host)
 *     existing:  0x0200 Q_Key, P_Key, TClass, SL, FlowLabel or HopLimit
 *                differs [1B30..1B36]
 *     both:      0x0200 selector not met, port MTU/rate below the group's,
 *                JoinState 0 [1B12]; port not in the partition [1B14];
 *                proxy rules [1B13]
 *   Delete:      0x0200 no such group; not a member; JoinState shares no
 *                bit or has extra bits; proxy rules [1B25]; 0x0700 another
 *                port's membership without the SM key given to umc-sm
 *   Get:         0x0300 no record, 0x0400 more than one [4C05]
 *   GetTable:    0x0001 (BUSY) when the records it may match would need a
 *                transfer the port cannot have (umc_sm_rmpp_room())
 *
 * Context: pure; the state changes only on success.
 */
void umc_sm_sa_mcmember(struct umc_sm *sm, struct umc_sm_port *port, const uint8_t *mad,
			const struct umc_sa_hdr *h, struct umc_sm_sa_reply *reply)
{
	struct req r = {
		.sm = sm, .requester = port, .mad = mad, .h = h, .comp = h->comp_mask, .reply = reply,
	};
	uint16_t status;

	umc_mcmember_decode(mad + UMC_SA_HDR_LEN, &r.rec);
	switch (h->mad.method) {
	case UMC_MAD_METHOD_SET:
		status = umc_sm_reject_status(sm, r.rec.mgid);
		if (status) {
			sm->cnt.sa_fault_rejected++;
			umc_sm_sa_error(sm, port, mad, h, status, "rejected by umc-ctl", reply);
			break;
		}
		mcmr_set(&r);
		break;
	case UMC_SA_METHOD_DELETE:
		mcmr_delete(&r);
		break;
	default:
		mcmr_query(&r);
		break;
	}
}
