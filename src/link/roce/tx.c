// SPDX-License-Identifier: MIT
/*
 * tx.c - sending RoCEv2.
 *
 * Each QP has one unconnected UDP socket per source address, bound to that
 * address and to the QP's rxe-style source port (0xC000 + hash of the QPN),
 * with IP_PMTUDISC_DO so that Linux writes IPv4 ID 0 and DF, and UDP
 * checksum 0 as rxe does.  The ICRC covers those fields, so it is computed
 * here over exactly what the kernel will put on the wire (docs/design.md,
 * "RoCEv2 fidelity").  A batch goes out in one sendmmsg().
 *
 * A batch to a multicast group that the host's other receivers all read
 * through the same-host path (link/shm/shm.h, shm.c) goes to this
 * process's ring of the group instead, the same encoded datagrams; on lo
 * nothing goes to the kernel then, on another interface it is sent with
 * IP_MULTICAST_LOOP off, for the other hosts only.
 */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/roce/uc/uc.h"

#ifndef IPV6_AUTOFLOWLABEL
#define IPV6_AUTOFLOWLABEL 70
#endif
#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif

struct roce_tx_sock {
	int fd;
	uint16_t sport; /* as bound: the ICRC covers it */
	int hop_limit, tclass;
	int loop; /* IP_MULTICAST_LOOP as set (the kernel's default: 1) */
};

struct roce_tx {
	struct roce_tx_sock sock[UMC_MAX_GIDS];
	struct mmsghdr msg[UMC_TX_BATCH];
	struct iovec iov[UMC_TX_BATCH][UMC_MAX_SGE + 2];
	uint8_t hdr[UMC_TX_BATCH][UMC_UD_HDR_MAX];
	uint8_t tail[UMC_TX_BATCH][8]; /* pad (0-3 zero bytes) and ICRC */
	uint32_t udp_len[UMC_TX_BATCH]; /* bytes of each datagram */
	struct umc_icrc_memo memo;     /* the last packet's ICRC prefix (sq_lock) */
};

static int roce_tx_sock_open(struct umc_device *dev, struct roce_qp *qp, int sgid,
			     struct roce_tx_sock *ts)
{
	unsigned ifindex = to_roce_port(dev)->ifindex;
	struct sockaddr_storage ss;
	socklen_t len = roce_gid_sockaddr(dev, sgid, qp->sport, &ss);
	bool v4 = ss.ss_family == AF_INET;
	int fd = umc_link_socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC);
	int ret;

	if (fd < 0)
		return fd;
	if (v4) {
		struct ip_mreqn mr = {.imr_ifindex = (int)ifindex};

		ret = roce_setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		ret = ret ?: roce_setopt(fd, SOL_SOCKET, SO_NO_CHECK, 1);
		if (!ret && setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)))
			ret = -errno;
	} else {
		ret = roce_setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)ifindex);
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
		ret = ret ?: roce_setopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, 1);
		/* rxe sends flow label 0; Linux would make one up. */
		ret = ret ?: roce_setopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, 0);
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
	atomic_store_explicit(&qp->tx_sport[sgid], ts->sport, memory_order_relaxed);
	ts->hop_limit = ts->tclass = -1;
	ts->loop = 1;
	return 0;
err:
	umc_fd_close(fd); /* under sq_lock: not a cancellation point */
	return ret;
}

static struct roce_tx *roce_tx_get(struct roce_qp *qp)
{
	struct roce_tx *tx = qp->tx;

	if (umc_likely(tx))
		return tx;
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return NULL;
	for (int i = 0; i < UMC_MAX_GIDS; i++)
		tx->sock[i].fd = -1;
	qp->tx = tx;
	return tx;
}

/*
 * TOS/traffic class come from the AH, and so does a multicast datagram's
 * TTL/hop limit (as rxe_net.c prepare4() and prepare6() take them from the
 * AV).  A unicast datagram's is the
 * route's, whatever the AH says: Linux replaces a RoCE unicast AH's hop
 * limit with its route's when the AH is created
 * (ib_resolve_unicast_gid_dmac), and the socket's default (IP_TTL and
 * IPV6_UNICAST_HOPS left unset) is that same route hop limit.
 */
static int roce_tx_set_ip(struct roce_tx_sock *ts, const struct roce_ah *ah)
{
	bool v4 = ah->ip.family == 4;
	int ret = 0;

	if (ts->hop_limit != ah->ip.hop_limit) {
		ret = v4 ? roce_setopt(ts->fd, IPPROTO_IP, IP_MULTICAST_TTL, ah->ip.hop_limit)
			 : roce_setopt(ts->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, ah->ip.hop_limit);
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
	const struct roce_ah *ah = to_roce_ah(p->ah);
	struct umc_ip_ctx ip = ah->ip;
	struct iovec *iov = tx->iov[k];
	int niov = 0;
	uint32_t crc;

	ip.sport = sport;
	crc = umc_icrc_start_memo(&tx->memo, &ip, udp_len, hdr, hl);
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
	if (umc_unlikely(p->corrupt)) /* corrupt= (fault/stage.h): the receiver finds the ICRC bad */
		tail[pad] ^= 1;
	iov[niov++] = (struct iovec){tail, pad + UMC_ICRC_LEN};
	tx->udp_len[k] = (uint32_t)udp_len;

	struct msghdr *mh = &tx->msg[k].msg_hdr;

	mh->msg_name = (void *)&ah->dst;
	mh->msg_namelen = ah->dst_len;
	mh->msg_iov = iov;
	mh->msg_iovlen = (size_t)niov;
	mh->msg_control = NULL;
	mh->msg_controllen = 0;
}

/*
 * The same-host path for packets [@start, @end) of @tx, all to group file
 * @g from socket @ts with AH @ah: into the ring when every local receiver
 * reads it.  Returns whether the kernel still gets them (for other hosts,
 * or for everyone here); IP_MULTICAST_LOOP is set to match.
 */
static bool roce_tx_shm(struct umc_device *dev, struct roce_tx *tx, struct roce_tx_sock *ts,
			const struct roce_ah *ah, struct umc_shm_grp *g, int start, int end)
{
	struct roce_port *rp = to_roce_port(dev);
	struct umc_shm_rec h;
	uint64_t gen;
	bool ring, only;
	unsigned gave_up;
	int loop;

	umc_shm_send_lock(g);
	ring = umc_shm_ring_mode(g, &gen);
	/* On lo the ring is the only way out: its datagrams count as sent there. */
	only = ring && rp->loopback;
	if (ring) {
		memset(&h, 0, sizeof(h));
		h.gen = gen;
		h.family = ah->ip.family;
		h.sport = ts->sport;
		h.tclass = ah->ip.tclass;
		h.hop_limit = ah->ip.hop_limit;
		h.flow_label = ah->ip.flow_label;
		memcpy(h.src, ah->ip.src, sizeof(h.src));
		for (int k = start; k < end; k++) {
			const struct msghdr *mh = &tx->msg[k].msg_hdr;

			if (umc_shm_send(g, &h, mh->msg_iov, (int)mh->msg_iovlen, tx->udp_len[k])) {
				CNT(dev, tx_errors);
				continue;
			}
			CNT(dev, tx_shm);
			if (only)
				CNT(dev, tx_packets);
		}
		gave_up = umc_shm_send_done(g);
		if (umc_unlikely(gave_up))
			CNTN(dev, tx_shm_overrun, gave_up);
	}
	umc_shm_send_unlock(g);
	if (only)
		return false;
	/* lo loops everything back anyway; elsewhere the ring's readers must get no copy. */
	loop = !ring;
	if (!rp->loopback && ts->loop != loop &&
	    !roce_setopt(ts->fd, ah->ip.family == 4 ? IPPROTO_IP : IPPROTO_IPV6,
			 ah->ip.family == 4 ? IP_MULTICAST_LOOP : IPV6_MULTICAST_LOOP, loop))
		ts->loop = loop;
	return true;
}

UMC_HOT
int roce_xmit(struct umc_qp *uqp, struct umc_tx_pkt *pkts, int n)
{
	struct roce_qp *qp = to_roce_qp(uqp);
	struct umc_device *dev = uqp->dev;
	struct roce_tx *tx = roce_tx_get(qp);
	int start = 0;

	if (umc_unlikely(!tx)) {
		CNTN(dev, tx_errors, n);
		return -ENOMEM;
	}
	/* One sendmmsg per run of packets with the same socket and IP options. */
	while (start < n) {
		struct roce_ah *ah = to_roce_ah(pkts[start].ah);
		struct roce_tx_sock *ts = &tx->sock[ah->sgid_index];
		struct umc_shm_grp *g = roce_shm_tx_of(dev, ah);
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
		/* A run shares the socket, the IP options and the same-host path's group. */
		while (end < n && to_roce_ah(pkts[end].ah)->sgid_index == ah->sgid_index &&
		       to_roce_ah(pkts[end].ah)->ip.hop_limit == ah->ip.hop_limit &&
		       to_roce_ah(pkts[end].ah)->ip.tclass == ah->ip.tclass &&
		       (end == start || roce_shm_tx_of(dev, to_roce_ah(pkts[end].ah)) == g)) {
			roce_tx_build(tx, end, &pkts[end], ts->sport);
			end++;
		}
		if (!g || roce_tx_shm(dev, tx, ts, ah, g, start, end))
			umc_link_sendmmsg(dev, ts->fd, tx->msg, start, end);
		start = end;
	}
	return 0;
}

int roce_qp_init(struct umc_qp *uqp)
{
	struct roce_qp *qp = to_roce_qp(uqp);
	/* The number is this process's alone on the host (uc/qpn.c) ... */
	int ret = roce_qpn_hold(qp);

	if (ret)
		return ret;
	qp->sport = umc_roce_sport(uqp->ibqp.qp_num);
	/* ... and unicast to it must reach this process (uc/). */
	ret = roce_uc_qp_add(qp);
	if (ret)
		roce_qpn_release(qp);
	return ret;
}

void roce_qp_cleanup(struct umc_qp *uqp)
{
	struct roce_qp *qp = to_roce_qp(uqp);
	struct roce_tx *tx = qp->tx;

	/* Steered here no more, then the number goes back to the host. */
	roce_uc_qp_del(qp);
	roce_qpn_release(qp);
	if (!tx)
		return;
	for (int i = 0; i < UMC_MAX_GIDS; i++)
		if (tx->sock[i].fd >= 0)
			umc_fd_close(tx->sock[i].fd);
	free(tx);
	qp->tx = NULL;
}
