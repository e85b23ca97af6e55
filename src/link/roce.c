/* SPDX-License-Identifier: MIT */
/*
 * roce.c - the RoCEv2 link layer: RoCEv2 UD packets in ordinary UDP
 * datagrams on port 4791 (IBA Annex A17; shared/reference/rocev2-wire.md).
 *
 * Send: each QP has one unconnected UDP socket per source address, bound
 * to that address and to the QP's rxe-style source port (0xC000 + hash of
 * the QPN), with IP_PMTUDISC_DO so that Linux writes IPv4 ID 0 and DF, and
 * UDP checksum 0 as rxe does.  The ICRC covers those fields, so it is
 * computed here over exactly what the kernel will put on the wire
 * (rocev2-wire.md section 8).  A batch goes out in one sendmmsg().
 *
 * Receive: each group has a socket bound to group:4791 with SO_REUSEADDR,
 * so every process of the host that attached a QP gets its own copy, and
 * bound to the device's interface (SO_BINDTODEVICE), so it only sees what
 * arrived there.  As on an rxe host, it gets the group's datagrams exactly
 * while the host is a member of the group on that interface, whoever
 * joined.  IP membership (IGMP/MLD) is taken on that socket only for full
 * members.  The destination and interface are known from the binding, so
 * the kernel need not look them up per datagram (IP_PKTINFO is asked for
 * only where SO_BINDTODEVICE is refused).
 *
 * The ICRC check on receive: a UDP socket shows addresses, ports, TTL and
 * TOS but never the IPv4 identification and flags, which the ICRC covers.
 * The check assumes DF and ID 0 (umcast's own packets); when that fails,
 * the ID is solved from the ICRC (umc_rocev2_rx_check), which leaves a
 * 16-bit integrity check for packets from senders with other IDs, such as
 * rxe.  Such packets are counted in rx_icrc_id_solved and their GRH shows
 * the solved ID.  IPv6 has no hidden invariant field: the check is the full
 * 32 bits.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "umc_int.h"

#ifndef IPV6_AUTOFLOWLABEL
#define IPV6_AUTOFLOWLABEL 70
#endif
#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif
#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif

#define CNT(dev, name) atomic_fetch_add_explicit(&(dev)->cnt.name, 1, memory_order_relaxed)

static const int one = 1;

static int roce_setopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

/* ------------------------------------------------------------------------- */
/* Group sockets and membership.                                             */

/*
 * One socket per group means up to UMC_MAX_MCAST_GRP descriptors; when the
 * soft RLIMIT_NOFILE runs out, raise it towards the hard limit once.
 */
static int roce_socket(int family, int type)
{
	int fd = socket(family, type, 0);
	struct rlimit rl;

	if (fd >= 0 || errno != EMFILE || getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return fd < 0 ? -errno : fd;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return -EMFILE;
	fd = socket(family, type, 0);
	return fd < 0 ? -errno : fd;
}

static int roce_mcg_open(struct umc_device *dev, const union ibv_gid *mgid)
{
	bool v4 = umc_gid_is_v4mapped(mgid);
	struct sockaddr_storage ss;
	socklen_t len = umc_gid_to_sockaddr(mgid, UMC_ROCEV2_UDP_PORT, &ss);
	int fd = roce_socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	int ret = 0, buf = UMC_RX_SOCKBUF;

	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A bigger buffer than rmem_max needs privilege; fall back quietly. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	/* Without the device binding, filter by IP_PKTINFO's interface. */
	bool pktinfo = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev->ifname,
				  (socklen_t)strlen(dev->ifname)) != 0;

	if (v4) {
		ret = pktinfo ? roce_setopt(fd, IPPROTO_IP, IP_PKTINFO, 1) : 0;
		ret = ret ?: roce_setopt(fd, IPPROTO_IP, IP_RECVTTL, 1);
		ret = ret ?: roce_setopt(fd, IPPROTO_IP, IP_RECVTOS, 1);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (IN6_IS_ADDR_MC_LINKLOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_MC_NODELOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = dev->ifindex;
		ret = roce_setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		ret = ret ?: pktinfo ? roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1) : 0;
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_FLOWINFO, 1);
		/* rxe and NICs send UDP checksum 0, which IPv6 drops by default. */
		ret = ret ?: roce_setopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
	}
	if (!ret && bind(fd, (struct sockaddr *)&ss, len))
		ret = -errno;
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

static int roce_membership(struct umc_device *dev, int fd, const union ibv_gid *mgid, bool join)
{
	int ret;

	if (umc_gid_is_v4mapped(mgid)) {
		struct ip_mreqn mr = {.imr_ifindex = (int)dev->ifindex};

		memcpy(&mr.imr_multiaddr, mgid->raw + 12, 4);
		ret = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &mr,
				 sizeof(mr));
	} else {
		struct ipv6_mreq mr = {.ipv6mr_interface = dev->ifindex};

		memcpy(&mr.ipv6mr_multiaddr, mgid->raw, 16);
		ret = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP,
				 &mr, sizeof(mr));
	}
	if (!ret)
		return 0;
	/* cma_igmp_send: an interface that cannot join is ENODEV. */
	return errno == EADDRNOTAVAIL || errno == ENODEV ? -ENODEV : -errno;
}

/* ------------------------------------------------------------------------- */
/* Receive.                                                                  */

struct roce_rx {
	struct mmsghdr msg[UMC_RX_BATCH];
	struct iovec iov[UMC_RX_BATCH];
	struct sockaddr_storage name[UMC_RX_BATCH];
	uint64_t cmsg[UMC_RX_BATCH][16];
	uint8_t buf[UMC_RX_BATCH][UMC_RX_SLOT];
};

/* Make receive slots [0, n) ready for recvmmsg() again. */
static void roce_rx_reset(struct roce_rx *rx, int n)
{
	for (int i = 0; i < n; i++) {
		struct msghdr *mh = &rx->msg[i].msg_hdr;

		mh->msg_name = &rx->name[i];
		mh->msg_namelen = sizeof(rx->name[i]);
		mh->msg_control = rx->cmsg[i];
		mh->msg_controllen = sizeof(rx->cmsg[i]);
		mh->msg_flags = 0;
	}
}

static struct roce_rx *roce_rx_get(struct umc_device *dev)
{
	struct roce_rx *rx = dev->link_priv;

	if (umc_likely(rx))
		return rx;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	for (int i = 0; i < UMC_RX_BATCH; i++) {
		rx->iov[i] = (struct iovec){rx->buf[i], UMC_RX_SLOT};
		rx->msg[i].msg_hdr.msg_iov = &rx->iov[i];
		rx->msg[i].msg_hdr.msg_iovlen = 1;
	}
	roce_rx_reset(rx, UMC_RX_BATCH);
	dev->link_priv = rx;
	return rx;
}

/*
 * Fill the IP context of a datagram received on @mcg's socket from its name
 * and control messages; returns the interface it arrived on.
 */
static unsigned roce_rx_ctx(struct umc_device *dev, const struct umc_mcg *mcg, struct msghdr *mh,
			    struct umc_ip_ctx *ip)
{
	const struct sockaddr_storage *from = mh->msg_name;
	unsigned ifindex = dev->ifindex; /* the socket is bound to it ... */

	memset(ip, 0, sizeof(*ip));
	ip->dport = UMC_ROCEV2_UDP_PORT;
	/* ... and to the group address (IP_PKTINFO, when asked for, says the same). */
	umc_gid_to_ip(&mcg->mgid, ip->dst);
	if (from->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)from;

		ip->family = 4;
		ip->df = true;
		memcpy(ip->src, &s->sin_addr, 4);
		ip->sport = ntohs(s->sin_port);
	} else {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)from;

		ip->family = 6;
		memcpy(ip->src, &s->sin6_addr, 16);
		ip->sport = ntohs(s->sin6_port);
	}
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		const void *d = CMSG_DATA(c);
		int v;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			const struct in_pktinfo *pi = d;

			memcpy(ip->dst, &pi->ipi_addr, 4);
			ifindex = (unsigned)pi->ipi_ifindex;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			memcpy(&v, d, sizeof(v));
			ip->hop_limit = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			ip->tclass = *(const uint8_t *)d;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			const struct in6_pktinfo *pi = d;

			memcpy(ip->dst, &pi->ipi6_addr, 16);
			ifindex = pi->ipi6_ifindex;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, d, sizeof(v));
			ip->hop_limit = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, d, sizeof(v));
			ip->tclass = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_FLOWINFO) {
			uint32_t fi;

			memcpy(&fi, d, sizeof(fi));
			ip->flow_label = ntohl(fi) & 0xfffff;
		}
	}
	return ifindex;
}

/* Check one datagram; fill @pkt and return true if it is to be delivered. */
static bool roce_rx_one(struct umc_device *dev, const struct umc_mcg *mcg, struct mmsghdr *m,
			struct umc_rx_pkt *pkt)
{
	const uint8_t *p = m->msg_hdr.msg_iov->iov_base;
	size_t len = m->msg_len, off, plen;
	unsigned ifindex;
	bool id_solved;
	int ret;

	CNT(dev, rx_packets);
	if (umc_unlikely(m->msg_hdr.msg_flags & MSG_TRUNC)) {
		CNT(dev, rx_too_long);
		return false;
	}
	ifindex = roce_rx_ctx(dev, mcg, &m->msg_hdr, &pkt->ip);
	if (umc_unlikely(ifindex != dev->ifindex)) {
		/* Another interface's copy: that interface's device takes it. */
		CNT(dev, rx_other_if);
		return false;
	}
	ret = umc_rocev2_rx_check(&pkt->ip, p, len, &pkt->hdr, &off, &plen, &id_solved);
	if (umc_unlikely(ret)) {
		if (ret == -EILSEQ)
			CNT(dev, rx_bad_icrc);
		else
			CNT(dev, rx_malformed);
		return false;
	}
	if (umc_unlikely(id_solved))
		CNT(dev, rx_icrc_id_solved);
	pkt->payload = p + off;
	pkt->len = (uint32_t)plen;
	pkt->udp_len = (uint32_t)len;
	return true;
}

static int roce_rx_burst(struct umc_device *dev, struct umc_mcg *mcg, struct umc_rx_pkt *pkts,
			 int max, bool *more)
{
	struct roce_rx *rx = roce_rx_get(dev);
	int n, out = 0;

	*more = false;
	if (umc_unlikely(!rx))
		return 0;
	if (max > UMC_RX_BATCH)
		max = UMC_RX_BATCH;
	do
		n = recvmmsg(mcg->fd, rx->msg, (unsigned)max, MSG_DONTWAIT, NULL);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 0;
	*more = n == max;
	for (int i = 0; i < n; i++)
		if (roce_rx_one(dev, mcg, &rx->msg[i], &pkts[out]))
			out++;
	/* Only the slots recvmmsg() filled changed: an empty poll costs no reset. */
	roce_rx_reset(rx, n);
	return out;
}

/* ------------------------------------------------------------------------- */
/* Send.                                                                     */

struct roce_tx_sock {
	int fd;
	uint16_t sport; /* as bound: the ICRC covers it */
	int hop_limit, tclass;
};

struct roce_tx {
	struct roce_tx_sock sock[UMC_MAX_GIDS];
	struct mmsghdr msg[UMC_TX_BATCH];
	struct iovec iov[UMC_TX_BATCH][UMC_MAX_SGE + 2];
	uint8_t hdr[UMC_TX_BATCH][UMC_UD_HDR_MAX];
	uint8_t tail[UMC_TX_BATCH][8]; /* pad (0-3 zero bytes) and ICRC */
};

static int roce_tx_sock_open(struct umc_device *dev, struct umc_qp *qp, int sgid,
			     struct roce_tx_sock *ts)
{
	struct sockaddr_storage ss = dev->gids[sgid].addr;
	bool v4 = ss.ss_family == AF_INET;
	socklen_t len = v4 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = roce_socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC);
	int ret;

	if (fd < 0)
		return fd;
	if (v4) {
		struct ip_mreqn mr = {.imr_ifindex = (int)dev->ifindex};

		ret = roce_setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		ret = ret ?: roce_setopt(fd, SOL_SOCKET, SO_NO_CHECK, 1);
		if (!ret && setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)))
			ret = -errno;
		((struct sockaddr_in *)&ss)->sin_port = htons(qp->sport);
	} else {
		ret = roce_setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)dev->ifindex);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
		ret = ret ?: roce_setopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, 1);
		/* rxe sends flow label 0; Linux would make one up. */
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 0);
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(qp->sport);
	}
	if (ret)
		goto err;
	/*
	 * The port is bound exclusively (no SO_REUSEADDR/SO_REUSEPORT), so the
	 * address and port name this QP's socket on the host.  It is only
	 * entropy to receivers: when another process holds ours, take any.
	 */
	if (bind(fd, (struct sockaddr *)&ss, len)) {
		((struct sockaddr_in *)&ss)->sin_port = 0;
		if (bind(fd, (struct sockaddr *)&ss, len)) {
			ret = -errno;
			goto err;
		}
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
		ret = -errno;
		goto err;
	}
	ts->fd = fd;
	ts->sport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	qp->tx_sport[sgid] = ts->sport;
	ts->hop_limit = ts->tclass = -1;
	return 0;
err:
	close(fd);
	return ret;
}

static struct roce_tx *roce_tx_get(struct umc_qp *qp)
{
	struct roce_tx *tx = qp->link_priv;

	if (umc_likely(tx))
		return tx;
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return NULL;
	for (int i = 0; i < UMC_MAX_GIDS; i++)
		tx->sock[i].fd = -1;
	qp->link_priv = tx;
	return tx;
}

/* TTL/hop limit and TOS/traffic class come from the AH (rocev2-wire 1.2, 1.3). */
static int roce_tx_set_ip(struct roce_tx_sock *ts, const struct umc_ah *ah)
{
	bool v4 = ah->ip.family == 4;
	int ret = 0;

	if (ts->hop_limit != ah->ip.hop_limit) {
		ret = v4 ? roce_setopt(ts->fd, IPPROTO_IP, IP_MULTICAST_TTL, ah->ip.hop_limit)
			 : roce_setopt(ts->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, ah->ip.hop_limit);
		ret = ret ?: v4 ? roce_setopt(ts->fd, IPPROTO_IP, IP_TTL, ah->ip.hop_limit ?: 1)
				: roce_setopt(ts->fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS,
					      ah->ip.hop_limit ?: 1);
		if (!ret)
			ts->hop_limit = ah->ip.hop_limit;
	}
	if (!ret && ts->tclass != ah->ip.tclass) {
		ret = v4 ? roce_setopt(ts->fd, IPPROTO_IP, IP_TOS, ah->ip.tclass)
			 : roce_setopt(ts->fd, IPPROTO_IPV6, IPV6_TCLASS, ah->ip.tclass);
		if (!ret)
			ts->tclass = ah->ip.tclass;
	}
	return ret;
}

/* Encode packet @p into slot @k: header, ICRC and the iovec list. */
static void roce_tx_build(struct roce_tx *tx, int k, const struct umc_tx_pkt *p, uint16_t sport)
{
	static const uint8_t zeros[4];
	uint8_t *hdr = tx->hdr[k], *tail = tx->tail[k];
	size_t hl = umc_ud_hdr_encode(hdr, &p->hdr);
	unsigned pad = p->hdr.bth.pad_cnt;
	size_t udp_len = hl + p->len + pad + UMC_ICRC_LEN;
	struct umc_ip_ctx ip = p->ah->ip;
	struct iovec *iov = tx->iov[k];
	int niov = 0;
	uint32_t crc;

	ip.sport = sport;
	crc = umc_icrc_start(&ip, udp_len, hdr, hl);
	iov[niov++] = (struct iovec){hdr, hl};
	for (int i = 0; i < p->num_sge; i++) {
		void *a = (void *)(uintptr_t)p->sge[i].addr;

		if (!p->sge[i].length)
			continue;
		crc = umc_icrc_update(crc, a, p->sge[i].length);
		iov[niov++] = (struct iovec){a, p->sge[i].length};
	}
	crc = umc_icrc_update(crc, zeros, pad);
	memset(tail, 0, pad);
	umc_icrc_put(tail + pad, umc_icrc_final(crc));
	iov[niov++] = (struct iovec){tail, pad + UMC_ICRC_LEN};

	struct msghdr *mh = &tx->msg[k].msg_hdr;

	mh->msg_name = (void *)&p->ah->dst;
	mh->msg_namelen = p->ah->dst_len;
	mh->msg_iov = iov;
	mh->msg_iovlen = (size_t)niov;
	mh->msg_control = NULL;
	mh->msg_controllen = 0;
}

/* sendmmsg() slots [from, to) on @fd; a datagram the kernel refuses is counted and skipped. */
static void roce_tx_flush(struct umc_device *dev, struct roce_tx *tx, int fd, int from, int to)
{
	while (from < to) {
		int n = sendmmsg(fd, &tx->msg[from], (unsigned)(to - from), 0);

		if (n > 0) {
			atomic_fetch_add_explicit(&dev->cnt.tx_packets, n, memory_order_relaxed);
			from += n;
		} else if (errno != EINTR) {
			CNT(dev, tx_errors);
			from++;
		}
	}
}

static int roce_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n)
{
	struct umc_device *dev = qp->dev;
	struct roce_tx *tx = roce_tx_get(qp);
	int start = 0;

	if (umc_unlikely(!tx)) {
		atomic_fetch_add_explicit(&dev->cnt.tx_errors, n, memory_order_relaxed);
		return -ENOMEM;
	}
	/* One sendmmsg per run of packets with the same socket and IP options. */
	while (start < n) {
		const struct umc_ah *ah = pkts[start].ah;
		struct roce_tx_sock *ts = &tx->sock[ah->sgid_index];
		int end = start;

		if (umc_unlikely(ts->fd < 0) && roce_tx_sock_open(dev, qp, ah->sgid_index, ts)) {
			CNT(dev, tx_errors);
			start++;
			continue;
		}
		if (umc_unlikely(roce_tx_set_ip(ts, ah))) {
			CNT(dev, tx_errors);
			start++;
			continue;
		}
		while (end < n && pkts[end].ah->sgid_index == ah->sgid_index &&
		       pkts[end].ah->ip.hop_limit == ah->ip.hop_limit &&
		       pkts[end].ah->ip.tclass == ah->ip.tclass) {
			roce_tx_build(tx, end, &pkts[end], ts->sport);
			end++;
		}
		roce_tx_flush(dev, tx, ts->fd, start, end);
		start = end;
	}
	return 0;
}

static void roce_qp_cleanup(struct umc_qp *qp)
{
	struct roce_tx *tx = qp->link_priv;

	if (!tx)
		return;
	for (int i = 0; i < UMC_MAX_GIDS; i++)
		if (tx->sock[i].fd >= 0)
			close(tx->sock[i].fd);
	free(tx);
	qp->link_priv = NULL;
}

const struct umc_link_ops umc_roce_link_ops = {
	.name = "roce",
	.transport = IBV_TRANSPORT_IB,
	.link_layer = IBV_LINK_LAYER_ETHERNET,
	.mcg_open = roce_mcg_open,
	.membership = roce_membership,
	.rx_burst = roce_rx_burst,
	.xmit = roce_xmit,
	.qp_cleanup = roce_qp_cleanup,
};
