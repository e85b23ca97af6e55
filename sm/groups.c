// SPDX-License-Identifier: MIT
/*
 * groups.c - umc-sm's multicast groups: the table by MGID and by MLID,
 * MLID allocation, and memberships.
 *
 * One group per MLID (umc-sm never shares an MLID between MGIDs).  A
 * membership is one (group, port) pair with the port's OR-ed JoinState;
 * it is on its group's list, on its port's list and in a hash keyed by
 * MLID and LID.  A group counts its full members (JoinState 0x1 or 0x8):
 * when that count falls to 0 the group's remaining members are removed
 * and the group is deleted, its MLID free for the next group (OpenSM
 * osm_mgrp_remove_port / osm_mgrp_cleanup, without its 0x9 partial-leave
 * leak), except for a well-known group, which stays with no members.
 * Every change of who receives an MLID (JoinState 0x1 or 0x2 gained or
 * lost) is told to its forwarding (fwd.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"

static uint32_t member_key(const struct umc_sm_group *grp, const struct umc_sm_port *port)
{
	return (uint32_t)grp->rec.mlid << 16 | port->lid;
}

enum { RECEIVING = UMC_JOIN_FULL | UMC_JOIN_NON };

static struct umc_sm_group *grp_of(struct umc_hnode *n)
{
	return (void *)((char *)n - offsetof(struct umc_sm_group, node));
}

static struct umc_sm_member *member_of(struct umc_hnode *n)
{
	return (void *)((char *)n - offsetof(struct umc_sm_member, node));
}

/**
 * umc_sm_groups_init - an empty group table.
 * @g:        the table (zeroed by the caller)
 * @mlid_max: the highest MLID handed out (--mlid-max): the MLID index
 *            covers 0xC000..@mlid_max only
 *
 * Returns: 0 or -ENOMEM.
 */
int umc_sm_groups_init(struct umc_sm_groups *g, uint16_t mlid_max)
{
	g->by_mlid = calloc((size_t)(mlid_max - UMC_SM_MLID_BASE) + 1, sizeof(*g->by_mlid));
	if (!g->by_mlid || umc_hash_init(&g->by_mgid, 256) || umc_hash_init(&g->members, 256))
		return -ENOMEM;
	return 0;
}

static void group_free(struct umc_sm *sm, struct umc_sm_group *grp)
{
	struct umc_sm_groups *g = &sm->groups;
	unsigned idx = grp->rec.mlid - UMC_SM_MLID_BASE;

	umc_hash_remove(&g->by_mgid, &grp->node);
	g->by_mlid[idx] = NULL;
	g->mlid_used[idx / 64] &= ~(1ULL << (idx % 64));
	if (grp->prev)
		grp->prev->next = grp->next;
	else
		g->list = grp->next;
	if (grp->next)
		grp->next->prev = grp->prev;
	g->count--;
	free(grp);
}

static void member_free(struct umc_sm *sm, struct umc_sm_member *m)
{
	struct umc_sm_group *grp = m->grp;
	struct umc_sm_port *port = m->port;

	umc_hash_remove(&sm->groups.members, &m->node);
	if (m->grp_prev)
		m->grp_prev->grp_next = m->grp_next;
	else
		grp->members = m->grp_next;
	if (m->grp_next)
		m->grp_next->grp_prev = m->grp_prev;
	if (m->port_prev)
		m->port_prev->port_next = m->port_next;
	else
		port->members = m->port_next;
	if (m->port_next)
		m->port_next->port_prev = m->port_prev;
	if (m->join_state & UMC_JOIN_ANY_FULL)
		grp->full_members--;
	if (m->join_state & RECEIVING)
		umc_sm_fwd_changed(sm, grp->rec.mlid);
	grp->nmembers--;
	port->nmembers--;
	port->host->members--;
	free(m);
}

/**
 * umc_sm_groups_fini - free every group (ports must be gone, so no
 * memberships are left) and the table.
 * @sm: the state
 */
void umc_sm_groups_fini(struct umc_sm *sm)
{
	struct umc_sm_groups *g = &sm->groups;

	while (g->list) {
		while (g->list->members)
			member_free(sm, g->list->members);
		group_free(sm, g->list);
	}
	umc_hash_fini(&g->by_mgid);
	umc_hash_fini(&g->members);
	free(g->by_mlid);
	g->by_mlid = NULL;
}

/**
 * umc_sm_group_by_mgid - the group with MGID @mgid, or NULL.
 */
struct umc_sm_group *umc_sm_group_by_mgid(struct umc_sm *sm, const uint8_t mgid[16])
{
	uint32_t hv = umc_hash_bytes16(mgid);
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->groups.by_mgid, hv); n; n = n->next)
		if (n->hash == hv && !memcmp(grp_of(n)->rec.mgid, mgid, 16))
			return grp_of(n);
	return NULL;
}

/**
 * umc_sm_group_by_mlid - the group on MLID @mlid, or NULL.
 */
struct umc_sm_group *umc_sm_group_by_mlid(struct umc_sm *sm, uint16_t mlid)
{
	if (mlid < UMC_SM_MLID_BASE || mlid > sm->cfg.mlid_max)
		return NULL;
	return sm->groups.by_mlid[mlid - UMC_SM_MLID_BASE];
}

/**
 * umc_sm_mlid_pick - choose the MLID of a new group.
 * @sm:   the state
 * @want: the request's MLID field: used if non-zero, in range and free
 *        (OpenSM get_new_mlid takes it even without its component bit)
 *
 * Otherwise the lowest free MLID, so a freed MLID goes to the next group.
 *
 * Context: at most UMC_SM_MLID_SPACE / 64 words of the bitmap are read.
 * Returns: the MLID, or 0 if every MLID up to cfg.mlid_max is in use.
 */
uint16_t umc_sm_mlid_pick(struct umc_sm *sm, uint16_t want)
{
	const uint64_t *used = sm->groups.mlid_used;
	unsigned max = sm->cfg.mlid_max - UMC_SM_MLID_BASE, w, idx;

	if (want >= UMC_SM_MLID_BASE && want <= sm->cfg.mlid_max && !umc_sm_group_by_mlid(sm, want))
		return want;
	for (w = 0; w <= max / 64; w++) {
		if (used[w] == ~0ULL)
			continue;
		idx = w * 64 + (unsigned)__builtin_ctzll(~used[w]);
		return idx <= max ? (uint16_t)(UMC_SM_MLID_BASE + idx) : 0;
	}
	return 0;
}

/**
 * umc_sm_group_create - enter a new group into the table.
 * @sm:         the state
 * @rec:        its record; rec->mlid must come from umc_sm_mlid_pick()
 * @well_known: never deleted (the IPoIB broadcast group)
 *
 * Returns: the group, or NULL if out of memory.
 */
struct umc_sm_group *umc_sm_group_create(struct umc_sm *sm, const struct umc_mcmember *rec,
					 bool well_known)
{
	struct umc_sm_groups *g = &sm->groups;
	struct umc_sm_group *grp = calloc(1, sizeof(*grp));
	unsigned idx = rec->mlid - UMC_SM_MLID_BASE;
	char gid[46];

	if (!grp)
		return NULL;
	grp->rec = *rec;
	grp->rec.proxy_join = false;
	memset(grp->rec.port_gid, 0, 16);
	grp->well_known = well_known;
	umc_hash_insert(&g->by_mgid, &grp->node, umc_hash_bytes16(rec->mgid));
	g->by_mlid[idx] = grp;
	g->mlid_used[idx / 64] |= 1ULL << (idx % 64);
	grp->next = g->list;
	if (g->list)
		g->list->prev = grp;
	g->list = grp;
	g->count++;
	sm->cnt.groups_created++;
	/* inet_ntop costs more than the create itself: only when it is printed. */
	if (umc_sm_log_on(sm, UMC_SM_LOG_INFO))
		umc_sm_log(sm, UMC_SM_LOG_INFO,
			   "group %s MLID 0x%04x created (Q_Key 0x%08x P_Key 0x%04x)",
			   umc_sm_gid_str(rec->mgid, gid), rec->mlid, rec->qkey, rec->pkey);
	return grp;
}

/**
 * umc_sm_member_find - @port's membership of @grp, or NULL.
 */
struct umc_sm_member *umc_sm_member_find(struct umc_sm *sm, const struct umc_sm_group *grp,
					 const struct umc_sm_port *port)
{
	uint32_t key = member_key(grp, port), hv = umc_hash_mix64(key);
	struct umc_hnode *n;

	for (n = umc_hash_bucket(&sm->groups.members, hv); n; n = n->next)
		if (n->hash == hv && member_of(n)->grp == grp && member_of(n)->port == port)
			return member_of(n);
	return NULL;
}

/**
 * umc_sm_member_join - add JoinState bits to @port's membership of @grp.
 * @sm:         the state
 * @grp:        the group
 * @port:       the member port
 * @join_state: bits to add (non-zero)
 * @proxy:      the request came from another port
 *
 * A port already a member gets old | new (IBA o15.0.1.11; OpenSM
 * osm_mgrp_add_port).  A membership is a proxy one from a proxy first
 * join until the port joins it itself, which takes it over (OpenSM keeps
 * the first join's ProxyJoin for good).
 *
 * Returns: the membership, or NULL if out of memory.
 */
struct umc_sm_member *umc_sm_member_join(struct umc_sm *sm, struct umc_sm_group *grp,
					 struct umc_sm_port *port, uint8_t join_state, bool proxy)
{
	struct umc_sm_member *m = umc_sm_member_find(sm, grp, port);
	bool was_full;

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (!m)
			return NULL;
		m->grp = grp;
		m->port = port;
		m->proxy = proxy;
		umc_hash_insert(&sm->groups.members, &m->node, umc_hash_mix64(member_key(grp, port)));
		m->grp_next = grp->members;
		if (grp->members)
			grp->members->grp_prev = m;
		grp->members = m;
		m->port_next = port->members;
		if (port->members)
			port->members->port_prev = m;
		port->members = m;
		grp->nmembers++;
		port->nmembers++;
		port->host->members++;
	}
	if (!proxy)
		m->proxy = false;
	was_full = m->join_state & UMC_JOIN_ANY_FULL;
	if (!(m->join_state & RECEIVING) && (join_state & RECEIVING))
		umc_sm_fwd_changed(sm, grp->rec.mlid);
	m->join_state |= join_state & 0xF;
	if (!was_full && (m->join_state & UMC_JOIN_ANY_FULL))
		grp->full_members++;
	return m;
}

/**
 * umc_sm_group_delete - remove every member of a group and the group.
 * @sm:  the state
 * @grp: the group; freed
 */
void umc_sm_group_delete(struct umc_sm *sm, struct umc_sm_group *grp)
{
	char gid[46];

	while (grp->members)
		member_free(sm, grp->members);
	sm->cnt.groups_deleted++;
	if (umc_sm_log_on(sm, UMC_SM_LOG_INFO))
		umc_sm_log(sm, UMC_SM_LOG_INFO, "group %s MLID 0x%04x deleted",
			   umc_sm_gid_str(grp->rec.mgid, gid), grp->rec.mlid);
	group_free(sm, grp);
}

static void group_cleanup(struct umc_sm *sm, struct umc_sm_group *grp)
{
	if (!grp->well_known) {
		umc_sm_group_delete(sm, grp);
		return;
	}
	while (grp->members)
		member_free(sm, grp->members);
}

/**
 * umc_sm_member_leave - remove JoinState bits from a membership.
 * @sm:   the state
 * @m:    the membership; may be freed
 * @bits: JoinState bits to clear (0xF: all, as when a port goes away)
 *
 * New state = old & ~@bits; the membership is removed when it is 0.  When
 * the port was a full member (0x1 or 0x8) and no longer is, and it was the
 * group's last full member, every other member is removed and the group
 * deleted (a well-known group stays, empty).  Unlike OpenSM 3.3.23, a
 * port holding 0x9 that clears 0x1 keeps 0x8 and the group (both still
 * count as full membership), and the group goes when that 0x8 goes.
 *
 * Returns: the JoinState the port holds afterwards (0 if it is no longer a
 * member, including when the group went).
 */
uint8_t umc_sm_member_leave(struct umc_sm *sm, struct umc_sm_member *m, uint8_t bits)
{
	struct umc_sm_group *grp = m->grp;
	uint8_t old = m->join_state, left = old & ~bits & 0xF;
	bool lost_full = (old & UMC_JOIN_ANY_FULL) && !(left & UMC_JOIN_ANY_FULL);

	if (!left) {
		member_free(sm, m); /* counts the full member out, if it was one */
	} else {
		m->join_state = left;
		if (lost_full)
			grp->full_members--;
		if ((old & RECEIVING) && !(left & RECEIVING))
			umc_sm_fwd_changed(sm, grp->rec.mlid);
	}
	if (lost_full && !grp->full_members) {
		group_cleanup(sm, grp);
		return 0;
	}
	return left;
}
