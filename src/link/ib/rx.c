// SPDX-License-Identifier: MIT
/*
 * rx.c - receiving on the simulated InfiniBand fabric.
 *
 * A port receives on two kinds of sockets: its unicast socket (the data
 * endpoint it registered with umc-sm), and, for every group with a QP
 * attached, a socket bound to the IP group of the group's MLID on the SM's
 * data port with SO_REUSEADDR and IP membership on the data interface: that
 * membership is the switch forwarding of an MLID to a member port, so a
 * port gets an MLID's packets exactly while one of its QPs is attached,
 * and every port of the host gets its own copy.
 *
 * An MLID forwarded by unicast (umc-sm --forwarding unicast: every one)
 * reaches the port as copies sent to its unicast socket, and its groups
 * open no socket.  Nor does a group whose socket cannot be bound because
 * another socket of the host holds its IP group and data port without
 * SO_REUSEADDR (a bind that fails with EADDRINUSE): the port tells umc-sm
 * (SQUATTED), which forwards that MLID by unicast from then on, and the
 * attach goes ahead.  No local socket can take the unicast socket, which
 * is bound before the port registers.  On the unicast socket a packet to
 * an MLID is taken when a group of the port, one with a QP attached, is
 * on that MLID (its DGID names it; a local packet goes to the MLID's
 * group), else dropped and counted (rx_no_group): a copy that reaches a
 * port after it left is never delivered.
 *
 * Every packet is checked as an HCA checks it (IBA 7.8, 9.6): LRH, GRH and
 * transport headers consistent, VCRC, ICRC (umc_ib_decode), a data VL (VL15
 * carries only subnet management), the DLID this socket is for (the port's
 * LID, or the socket's MLID).  A global packet's DGID picks the group (an
 * MLID may carry several); a local one goes to the socket's group.  Every
 * group has its own socket on its MLID, and every socket on an MLID gets a
 * copy of each packet, so a packet to a group other than the socket's is
 * taken by one of them only (mlid_lead), and not at all when its group's
 * own socket is on the same MLID: an HCA delivers a packet once.  The
 * receive buffer's 40-byte GRH area gets the packet's real GRH.  Each drop
 * is counted by reason.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/ib/ib.h"
#include "sa/sa_client.h"

enum { IB_VL15 = 15 };

/* A non-blocking socket bound to @addr:@port (host order), for receiving. */
static int ib_rx_socket(uint32_t addr, uint16_t port, bool reuse)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(addr)};
	int fd = umc_link_socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;

	if (fd < 0)
		return fd;
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	umc_link_rcvbuf(fd);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int ret = -errno;

		umc_fd_close(fd); /* under rx_lock: not a cancellation point */
		return ret;
	}
	return fd;
}

/* The unicast socket: its port is the data endpoint REGISTER carries. */
int ib_ucast_open(struct ib_port *port)
{
	int fd = ib_rx_socket(ntohl(port->data_addr.s_addr), 0, false);

	if (fd < 0)
		return fd;
	port->ucast.ep.fd = fd;
	port->ucast.ep.mcg = NULL;
	return 0;
}

/* The socket of one of @dev's groups on MLID @mlid, or NULL; caller holds rx_lock. */
static struct ib_ep *ib_mlid_ep(struct umc_device *dev, uint16_t mlid)
{
	for (size_t h = 0; h < sizeof(dev->mcg_hash) / sizeof(dev->mcg_hash[0]); h++)
		for (struct umc_mcg *g = dev->mcg_hash[h]; g; g = g->next)
			if (((struct ib_ep *)g->link_priv)->dlid == mlid)
				return g->link_priv;
	return NULL;
}

/* @mcg is not in @dev's groups yet (mcast.c); caller holds rx_lock and dev->lock. */
int ib_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid)
{
	struct ib_port *port = to_ib_port(dev);
	struct ip_mreqn mr = {.imr_ifindex = (int)port->ifindex};
	uint32_t group = umc_sm_mlid_to_ip(&port->pi, mlid);
	struct umc_sa_client *sa;
	struct ib_ep *e;
	bool copies;
	int fd, ret;

	if (!group)
		return -EINVAL; /* no MLID (a CM membership), or one outside the map */
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->ep.mcg = mcg; /* the group: the engine lends its QPs' receives */
	e->dlid = mlid;
	e->mlid_lead = !ib_mlid_ep(dev, mlid);
	/* Forwarded by unicast: its packets come as copies to the unicast socket. */
	copies = ib_fwd_unicast(port);
	fd = copies ? -1 : ib_rx_socket(group, port->pi.data_port, true);
	if (fd == -EADDRINUSE && (sa = ib_port_sa(port))) {
		umc_sa_squatted(sa, mlid); /* umc-sm forwards it by unicast then */
		copies = true;
	}
	e->ep.fd = -1;
	if (copies) {
		mcg->link_priv = e;
		return 0;
	}
	if (fd < 0) {
		free(e);
		return fd;
	}
	e->ep.fd = fd;
	mr.imr_multiaddr.s_addr = htonl(group);
	mr.imr_address = port->data_addr;
	if (setsockopt(e->ep.fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		ret = errno == EADDRNOTAVAIL || errno == ENODEV ? -ENODEV : -errno;
	else
		ret = umc_rx_add(dev, &e->ep);
	if (ret) {
		umc_fd_close(e->ep.fd);
		free(e);
		return ret;
	}
	mcg->link_priv = e;
	return 0;
}

/* @mcg has left @dev's groups (mcast.c); caller holds rx_lock and dev->lock. */
void ib_mcg_close(struct umc_device *dev, struct umc_mcg *mcg)
{
	struct ib_ep *e = mcg->link_priv, *next;

	if (e->mlid_lead && (next = ib_mlid_ep(dev, e->dlid)))
		next->mlid_lead = true;
	if (e->ep.fd >= 0) {
		umc_rx_del(dev, &e->ep);
		umc_fd_close(e->ep.fd); /* the IP membership goes with the socket */
	}
	free(e);
	mcg->link_priv = NULL;
}

/* ------------------------------------------------------------------------- */
/* Receive.                                                                  */

enum {
	/*
	 * The headers in front of a global UD SEND's payload (LRH, GRH, BTH,
	 * DETH): what goes into scratch when the rest lands in a lent receive
	 * (land.c).  An ImmDt lands in front of the payload; a local packet (no
	 * GRH) lands 40 bytes early and is made whole in the slot instead.
	 */
	IB_LAND_HDR = UMC_LRH_LEN + UMC_GRH_HDR_LEN + UMC_BTH_LEN + UMC_DETH_LEN,
};

struct ib_rx {
	struct mmsghdr msg[UMC_RX_BATCH];
	/* Per datagram: the slot, or scratch headers + a lent receive + the slot's tail. */
	struct iovec iov[UMC_RX_BATCH][UMC_MAX_SGE + 2];
	uint64_t cmsg[UMC_RX_BATCH][4]; /* the socket's drops (SO_RXQ_OVFL), after one */
	uint8_t buf[UMC_RX_BATCH][UMC_RX_SLOT];
};

static struct ib_rx *ib_rx_get(struct ib_port *port)
{
	struct ib_rx *rx = port->rx;

	if (umc_likely(rx))
		return rx;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	for (int i = 0; i < UMC_RX_BATCH; i++) {
		rx->msg[i].msg_hdr.msg_iov = rx->iov[i];
		rx->msg[i].msg_hdr.msg_iovlen = umc_rx_aim(rx->iov[i], rx->buf[i], IB_LAND_HDR, NULL);
		rx->msg[i].msg_hdr.msg_control = rx->cmsg[i];
		rx->msg[i].msg_hdr.msg_controllen = sizeof(rx->cmsg[i]);
	}
	port->rx = rx;
	return rx;
}

/*
 * Check one packet that arrived on @e (@sg: its bytes); fill @pkt but for
 * where its payload is (at *@off) and return true to deliver it.
 */
UMC_HOT
static bool ib_rx_one(struct ib_port *port, struct ib_ep *e, const struct umc_sg *sg,
		      struct umc_rx_pkt *pkt, size_t *off)
{
	struct umc_device *dev = &port->dev;
	struct umc_ib_hdr ib;
	size_t plen;
	int ret;

	ret = umc_ib_decode_sg(sg, &ib, &pkt->hdr, off, &plen);
	if (umc_unlikely(ret)) {
		if (ret == -EIO)
			CNT(dev, rx_bad_vcrc);
		else if (ret == -EILSEQ)
			CNT(dev, rx_bad_icrc);
		else
			CNT(dev, rx_malformed);
		return false;
	}
	if (umc_unlikely(ib.lrh.vl == IB_VL15)) {
		CNT(dev, rx_malformed);
		return false;
	}
	uint16_t lid = atomic_load_explicit(&port->lid, memory_order_relaxed);
	bool copy = !e->ep.mcg && ib.lrh.dlid >= UMC_MLID_FIRST; /* forwarded by unicast */

	if (umc_unlikely(!copy && ib.lrh.dlid != (e->ep.mcg ? e->dlid : lid))) {
		CNT(dev, rx_bad_dlid);
		return false;
	}
	pkt->mcg = e->ep.mcg;
	pkt->has_grh = ib.lrh.lnh == UMC_LNH_IBA_GLOBAL;
	if (pkt->has_grh)
		umc_sg_read(sg, UMC_LRH_LEN, pkt->grh, UMC_GRH_HDR_LEN);
	if (copy) {
		/* The group the DGID names, if it is on this MLID; a local packet: the MLID's. */
		const struct ib_ep *own;

		if (pkt->has_grh) {
			pkt->mcg = __umc_mcg_find(dev, (const union ibv_gid *)ib.grh.dgid);
			own = pkt->mcg ? pkt->mcg->link_priv : NULL;
		} else {
			own = ib_mlid_ep(dev, ib.lrh.dlid); /* a scan: local packets are rare */
		}
		if (!own || own->dlid != ib.lrh.dlid) {
			CNT(dev, rx_no_group); /* not (or no longer) a member here */
			return false;
		}
		pkt->mcg = own->ep.mcg;
	} else if (pkt->has_grh) {
		/* An MLID may carry several groups: the DGID says which. */
		if (e->ep.mcg && memcmp(ib.grh.dgid, e->ep.mcg->mgid.raw, 16) != 0) {
			const struct ib_ep *own;

			if (!e->mlid_lead) { /* another socket on the MLID takes it */
				CNT(dev, rx_other_mcg);
				return false;
			}
			pkt->mcg = __umc_mcg_find(dev, (const union ibv_gid *)ib.grh.dgid);
			own = pkt->mcg ? pkt->mcg->link_priv : NULL;
			if (own && own->dlid == e->dlid) { /* its own socket takes it */
				CNT(dev, rx_other_mcg);
				return false;
			}
		}
	}
	if (!pkt->has_grh)
		memset(pkt->grh, 0, sizeof(pkt->grh));
	pkt->len = (uint32_t)plen;
	pkt->slid = ib.lrh.slid;
	pkt->sl = ib.lrh.sl;
	pkt->sender = umc_unlikely(dev->block_self_qps) && ib.lrh.slid == lid
			      ? __umc_qp_by_num(dev, pkt->hdr.deth.src_qpn)
			      : NULL;
	return true;
}

UMC_HOT
int ib_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts, int max,
		bool *more, const struct umc_rx_lend *lend)
{
	struct ib_port *port = to_ib_port(dev);
	struct ib_ep *e = container_of(ep, struct ib_ep, ep);
	struct ib_rx *rx = ib_rx_get(port);
	int n, out = 0;

	*more = false;
	if (umc_unlikely(!rx))
		return 0;
	if (max > UMC_RX_BATCH)
		max = UMC_RX_BATCH;
	/* Only the slots given a land are aimed, and put back after: an empty poll costs none. */
	int lent = lend->n < max ? lend->n : max;

	for (int i = 0; i < lent; i++)
		rx->msg[i].msg_hdr.msg_iovlen =
		    umc_rx_aim(rx->iov[i], rx->buf[i], IB_LAND_HDR, &lend->land[i]);
	do
		n = umc_sys_recvmmsg(ep->fd, rx->msg, (unsigned)max, MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	*more = n == max;
	for (int i = 0; i < n; i++) {
		const struct umc_rx_land *land = i < lent ? &lend->land[i] : NULL;
		struct mmsghdr *m = &rx->msg[i];
		struct umc_sg sg = {rx->iov[i], (int)m->msg_hdr.msg_iovlen, m->msg_len};
		struct umc_rx_pkt *pkt = &pkts[out];
		size_t off;

		CNT_RX(dev, rx_packets);
		if (umc_unlikely(m->msg_hdr.msg_controllen)) /* the socket has dropped some */
			umc_rx_sock_drops(dev, ep, umc_link_sock_drops(&m->msg_hdr, ep->sk_drops));
		m->msg_hdr.msg_controllen = sizeof(rx->cmsg[i]); /* recvmmsg() set what it used */
		if (umc_unlikely(m->msg_hdr.msg_flags & MSG_TRUNC)) {
			CNT(dev, rx_too_long);
			continue;
		}
		if (!ib_rx_one(port, e, &sg, pkt, &off))
			continue;
		umc_rx_settle(pkt, rx->buf[i], IB_LAND_HDR, land, sg.len, off);
		out++;
	}
	for (int i = 0; i < lent; i++)
		rx->msg[i].msg_hdr.msg_iovlen = umc_rx_aim(rx->iov[i], rx->buf[i], IB_LAND_HDR, NULL);
	return out;
}
