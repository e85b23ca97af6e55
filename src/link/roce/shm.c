// SPDX-License-Identifier: MIT
/*
 * shm.c - the same-host path (link/shm/shm.h) on a RoCE port.
 *
 * Receiving: a group's endpoint (its socket, rx.c) has a second one, of
 * kind ROCE_EP_SHM, that reads the group's rings; its fd is the reader's
 * wake-up FIFO, so the engine, the completion channels and the
 * background thread poll it as they poll a socket.  A datagram read from
 * a ring is checked as one read from the socket: the same IP context
 * (the ring carries what the socket would show: source address and port,
 * TTL, TOS, flow label; the destination is the group), the same decode
 * and ICRC (roce_rx_check), the same GRH, the same delivery.  It lands
 * in a lent receive as a socket's would (land.c).
 *
 * Sending: a multicast AH finds the group's file at its first send
 * (roce_shm_tx_of: one per group and port, kept for the port's life);
 * tx.c asks it per batch whether the datagrams go to the ring or to the
 * kernel.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "link/roce/roce.h"
#include "wire/sg.h"

/* A group this process sent to: its file, for every AH of the group. */
struct roce_shm_tx {
	union ibv_gid mgid;
	struct umc_shm_grp *g; /* NULL: the file could not be had; the kernel only */
	struct roce_shm_tx *next;
};

static void roce_shm_key(struct roce_port *rp, const union ibv_gid *mgid, struct umc_shm_key *k)
{
	memset(k, 0, sizeof(*k));
	k->ifindex = rp->ifindex;
	k->loopback = rp->loopback;
	k->family = (uint8_t)umc_gid_to_ip(mgid, k->addr);
	k->port = UMC_ROCEV2_UDP_PORT;
}

/* ------------------------------------------------------------------------- */
/* Receiving.                                                                */

/* ep->arm: a thread may sleep on the FIFO from now on. */
static void roce_shm_arm(struct umc_device *dev, struct umc_rx_ep *ep)
{
	struct roce_ep *sm = container_of(ep, struct roce_ep, ep);

	umc_shm_reader_arm(sm->shm, umc_rx_may_sleep(dev));
}

void roce_shm_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, struct roce_ep *rm)
{
	struct umc_shm_key key;
	struct roce_ep *sm;
	int cs;

	if (to_roce_port(dev)->shm_groups >= UMC_SHM_MAX_GROUPS)
		return;
	roce_shm_key(to_roce_port(dev), &mcg->mgid, &key);
	cs = umc_cancel_off(); /* files, under rx_lock */
	rm->shm = umc_shm_open(&key);
	if (!rm->shm)
		goto out;
	to_roce_port(dev)->shm_groups++;
	/* With the path off, only tell the senders that one more socket receives. */
	if (!umc_shm_enabled() || !(sm = calloc(1, sizeof(*sm)))) {
		umc_shm_announce(rm->shm);
		goto out;
	}
	sm->kind = ROCE_EP_SHM;
	sm->shm = rm->shm;
	sm->ep.mcg = mcg;
	sm->ep.arm = roce_shm_arm;
	if (umc_shm_reader_join(rm->shm, rm->ep.fd, &sm->ep.fd)) {
		free(sm);
		umc_shm_announce(rm->shm);
		goto out;
	}
	if (umc_rx_add(dev, &sm->ep)) {
		umc_shm_reader_leave(rm->shm);
		free(sm);
		goto out;
	}
	rm->shm_ep = sm;
out:
	umc_cancel_restore(cs);
}

void roce_shm_mcg_close(struct umc_device *dev, struct roce_ep *rm)
{
	int cs;

	if (!rm->shm)
		return;
	cs = umc_cancel_off();
	to_roce_port(dev)->shm_groups--;
	if (rm->shm_ep) {
		umc_rx_del(dev, &rm->shm_ep->ep);
		umc_shm_reader_leave(rm->shm); /* closes the FIFO */
		free(rm->shm_ep);
		rm->shm_ep = NULL;
	} else {
		umc_shm_announce(rm->shm);
	}
	umc_shm_close(rm->shm);
	rm->shm = NULL;
	umc_cancel_restore(cs);
}

void roce_shm_member(struct roce_ep *rm, bool member)
{
	if (rm->shm_ep)
		umc_shm_reader_member(rm->shm, member);
	else if (rm->shm)
		umc_shm_announce(rm->shm);
}

UMC_HOT
int roce_shm_rx_burst(struct roce_port *rp, struct roce_ep *sm, uint8_t (*slot)[UMC_RX_SLOT],
		      struct umc_rx_pkt *pkts, int max, bool *more, const struct umc_rx_lend *lend)
{
	struct umc_device *dev = &rp->dev;
	struct iovec iov[UMC_MAX_SGE + 2];
	uint64_t lost = 0, corrupt = 0;
	struct umc_ip_ctx ip;
	int i, out = 0;

	umc_shm_reader_woken(sm->shm);
	memset(&ip, 0, sizeof(ip));
	umc_gid_to_ip(&sm->ep.mcg->mgid, ip.dst);
	ip.dport = UMC_ROCEV2_UDP_PORT;
	for (i = 0; i < max; i++) {
		const struct umc_rx_land *land = i < lend->n ? &lend->land[i] : NULL;
		int niov = (int)umc_rx_aim(iov, slot[i], ROCE_LAND_HDR, land);
		struct umc_sg sg = {iov, niov, 0};
		struct umc_shm_dgram d;
		size_t off;

		if (!umc_shm_read(sm->shm, &d, iov, niov, UMC_RX_SLOT, &lost, &corrupt))
			break;
		CNT_RX(dev, rx_packets);
		CNT_RX(dev, rx_shm);
		if (umc_unlikely(d.got == UMC_SHM_TOO_LONG)) {
			CNT(dev, rx_too_long);
			continue;
		}
		if (umc_unlikely(d.h.family != 4 && d.h.family != 6)) {
			CNT(dev, rx_malformed);
			continue;
		}
		ip.family = d.h.family;
		memcpy(ip.src, d.h.src, sizeof(ip.src));
		ip.sport = d.h.sport;
		ip.df = d.h.family == 4;
		ip.tclass = d.h.tclass;
		ip.hop_limit = d.h.hop_limit;
		ip.flow_label = d.h.flow_label & 0xfffff;
		sg.len = d.h.dlen;
		if (!roce_rx_check(rp, sm, &sg, &ip, &pkts[out], &off))
			continue;
		umc_rx_settle(&pkts[out], slot[i], ROCE_LAND_HDR, land, sg.len, off);
		out++;
	}
	*more = i == max;
	umc_shm_reader_publish(sm->shm);
	/* After the reads: what is left (if anything) wakes a sleeper at once. */
	umc_shm_reader_arm(sm->shm, umc_rx_may_sleep(dev));
	if (umc_unlikely(lost))
		CNTN(dev, rx_overrun, lost);
	if (umc_unlikely(corrupt))
		CNTN(dev, rx_malformed, corrupt);
	return out;
}

/* ------------------------------------------------------------------------- */
/* Sending.                                                                  */

static struct umc_shm_grp *roce_shm_tx_find(struct roce_port *rp, const union ibv_gid *mgid)
{
	struct roce_shm_tx *t;
	struct umc_shm_key key;
	int cs;

	pthread_mutex_lock(&rp->shm_lock);
	for (t = rp->shm_tx; t; t = t->next)
		if (!memcmp(&t->mgid, mgid, sizeof(*mgid)))
			break;
	/* As many groups as it receives through the path; the rest to the kernel. */
	if (!t && rp->shm_ntx < UMC_SHM_MAX_GROUPS && (t = calloc(1, sizeof(*t)))) {
		rp->shm_ntx++;
		t->mgid = *mgid;
		roce_shm_key(rp, mgid, &key);
		cs = umc_cancel_off(); /* files, under sq_lock */
		t->g = umc_shm_open(&key);
		umc_cancel_restore(cs);
		t->next = rp->shm_tx;
		rp->shm_tx = t;
	}
	pthread_mutex_unlock(&rp->shm_lock);
	return t ? t->g : NULL;
}

/* What an AH's shm pointer holds once looked up without a file. */
static struct umc_shm_grp *const roce_shm_none = (struct umc_shm_grp *)&roce_shm_none;

UMC_HOT
struct umc_shm_grp *roce_shm_tx_of(struct umc_device *dev, struct roce_ah *ah)
{
	struct umc_shm_grp *g = atomic_load_explicit(&ah->shm, memory_order_acquire);

	if (umc_likely(g))
		return g == roce_shm_none ? NULL : g;
	if (!umc_shm_enabled() || !umc_gid_is_multicast(&ah->ah.attr.grh.dgid))
		g = NULL;
	else
		g = roce_shm_tx_find(to_roce_port(dev), &ah->ah.attr.grh.dgid);
	atomic_store_explicit(&ah->shm, g ? g : roce_shm_none, memory_order_release);
	return g;
}
