// SPDX-License-Identifier: MIT
/*
 * tx.c - sending on the simulated InfiniBand fabric.
 *
 * Each QP sends from one unconnected UDP socket of its own, bound to the
 * port's data address, with the data interface as multicast interface and
 * multicast loopback on (an HCA delivers its own multicast to its attached
 * QPs unless told not to).  A packet is the LRH and GRH of the AH, then
 * BTH, DETH, [ImmDt] from the core, the payload straight from the SGEs,
 * the pad, the ICRC (IBA 7.8.1 masking) and the VCRC, which covers
 * everything before it (wire/ib.h).  A packet to an MLID goes where its
 * forwarding says (fwd.c): one datagram to the IP group, or, forwarded by
 * unicast, one copy, the same bytes, to each receiving port's data
 * endpoint, read under fwd_lock so that an update waits for the batch.  A
 * batch goes out in one sendmmsg() (more when its copies overflow it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/ib/ib.h"

enum {
	IB_TAIL_MAX = 3 + UMC_ICRC_LEN + UMC_VCRC_LEN, /* pad, ICRC, VCRC */
	IB_MCAST_TTL = 1,			       /* the fabric is one IP subnet */
	IB_TX_MSGS = 4 * UMC_TX_BATCH,		       /* datagrams per sendmmsg, copies included */
};

struct ib_tx {
	int fd;
	struct mmsghdr msg[IB_TX_MSGS];
	struct iovec iov[UMC_TX_BATCH][UMC_MAX_SGE + 2];
	uint8_t hdr[UMC_TX_BATCH][UMC_IB_HDR_MAX];
	uint8_t tail[UMC_TX_BATCH][IB_TAIL_MAX];
};

static int ib_tx_socket(struct ib_port *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = port->data_addr};
	struct ip_mreqn mr = {.imr_address = port->data_addr, .imr_ifindex = (int)port->ifindex};
	int fd = umc_link_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC);
	int ttl = IB_MCAST_TTL, loop = 1, ret = 0;

	if (fd < 0)
		return fd;
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
		ret = -errno;
	if (ret) {
		umc_fd_close(fd); /* under sq_lock: not a cancellation point */
		return ret;
	}
	return fd;
}

int ib_qp_init(struct umc_qp *qp)
{
	struct ib_port *port = to_ib_port(qp->dev);

	/* The port's unicast socket joins the receive engine with its first QP. */
	if (!port->ucast_polled) {
		int ret = umc_rx_add(qp->dev, &port->ucast.ep);

		if (ret)
			return ret;
		port->ucast_polled = true;
	}
	return 0;
}

void ib_qp_cleanup(struct umc_qp *uqp)
{
	struct ib_qp *qp = to_ib_qp(uqp);

	if (!qp->tx)
		return;
	umc_fd_close(qp->tx->fd);
	free(qp->tx);
	qp->tx = NULL;
}

static struct ib_tx *ib_tx_get(struct ib_qp *qp)
{
	struct ib_tx *tx = qp->tx;
	int fd;

	if (umc_likely(tx))
		return tx;
	tx = calloc(1, sizeof(*tx));
	if (!tx)
		return NULL;
	fd = ib_tx_socket(to_ib_port(qp->qp.dev));
	if (fd < 0) {
		free(tx);
		return NULL;
	}
	tx->fd = fd;
	qp->tx = tx;
	return tx;
}

/* Encode packet @p into slot @k: headers, ICRC, VCRC and the iovec list; returns its length. */
UMC_HOT
static size_t ib_tx_build(struct ib_tx *tx, int k, struct umc_tx_pkt *p, uint16_t lid)
{
	static const uint8_t zeros[4];
	struct umc_ib_hdr ib = to_ib_ah(p->ah)->hdr;
	uint8_t *hdr = tx->hdr[k], *tail = tx->tail[k];
	struct iovec *iov = tx->iov[k];
	size_t hl;
	unsigned pad;
	uint32_t icrc;
	uint16_t vcrc;
	int niov = 0;

	ib.lrh.slid |= lid; /* LMC 0: the path bits leave the LID as it is */
	hl = umc_ib_hdr_encode(hdr, &ib, &p->hdr, p->len);
	pad = p->hdr.bth.pad_cnt;
	icrc = umc_ib_icrc_start(hdr, hl);
	vcrc = umc_vcrc_update(0xffff, hdr, hl);
	iov[niov++] = (struct iovec){hdr, hl};
	for (int i = 0; i < p->num_sge; i++) {
		void *a = (void *)(uintptr_t)p->sge[i].addr;
		size_t n = p->sge[i].length;

		if (!n)
			continue;
		icrc = umc_icrc_update(icrc, a, n);
		vcrc = umc_vcrc_update(vcrc, a, n);
		iov[niov++] = (struct iovec){a, n};
	}
	memset(tail, 0, pad);
	icrc = umc_icrc_update(icrc, zeros, pad);
	umc_icrc_put(tail + pad, umc_icrc_final(icrc));
	/*
	 * corrupt= (fault/stage.h): a bit flipped after the ICRC, under the
	 * VCRC, as within a switch, which computes every hop's VCRC afresh
	 * (IBA 7.8.2): the receiver finds the ICRC bad (IBA 7.8.1).
	 */
	if (umc_unlikely(p->corrupt))
		tail[pad] ^= 1;
	vcrc = umc_vcrc_update(vcrc, tail, pad + UMC_ICRC_LEN);
	umc_vcrc_put(tail + pad + UMC_ICRC_LEN, umc_vcrc_final(vcrc));
	iov[niov++] = (struct iovec){tail, pad + UMC_ICRC_LEN + UMC_VCRC_LEN};
	return (size_t)niov;
}

UMC_HOT
int ib_xmit(struct umc_qp *uqp, struct umc_tx_pkt *pkts, int n)
{
	struct ib_qp *qp = to_ib_qp(uqp);
	struct umc_device *dev = uqp->dev;
	struct ib_port *port = to_ib_port(dev);
	struct ib_tx *tx = ib_tx_get(qp);
	uint16_t lid = atomic_load_explicit(&port->lid, memory_order_relaxed);
	bool fwd_locked = false;
	int m = 0;

	if (umc_unlikely(!tx)) {
		CNTN(dev, tx_errors, n);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		struct ib_ah *ah = to_ib_ah(pkts[i].ah);
		const struct sockaddr_in *dst = &ah->dst;
		unsigned ndst = 1;
		size_t niov;

		if (ah->fwd) {
			if (!fwd_locked) {
				umc_rwlock_rdlock(&port->fwd_lock, UMC_LOCK_IB_FWD);
				fwd_locked = true;
			}
			if (ah->fwd->unicast) {
				dst = ah->fwd->dst;
				ndst = ah->fwd->n;
				if (!ndst) {
					CNT(dev, tx_fwd_none); /* no member: a switch drops it */
					continue;
				}
			} else {
				dst = &ah->fwd->mcast;
			}
		} else if (umc_unlikely(!ah->routed)) {
			CNT(dev, tx_no_route); /* the fabric drops it */
			continue;
		}
		niov = ib_tx_build(tx, i, &pkts[i], lid);
		for (unsigned d = 0; d < ndst; d++) {
			struct msghdr *mh = &tx->msg[m].msg_hdr;

			mh->msg_name = (void *)&dst[d];
			mh->msg_namelen = sizeof(dst[d]);
			mh->msg_iov = tx->iov[i];
			mh->msg_iovlen = niov;
			mh->msg_control = NULL;
			mh->msg_controllen = 0;
			if (++m == IB_TX_MSGS) {
				umc_link_sendmmsg(dev, tx->fd, tx->msg, 0, m);
				m = 0;
			}
		}
	}
	umc_link_sendmmsg(dev, tx->fd, tx->msg, 0, m);
	if (fwd_locked)
		umc_rwlock_unlock(&port->fwd_lock);
	return 0;
}
