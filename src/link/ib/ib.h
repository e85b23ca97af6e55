/* SPDX-License-Identifier: MIT */
/*
 * ib.h - the simulated InfiniBand link layer's objects (link/ib/ only, and
 * tests).
 *
 * With UMC_SM=ADDR:PORT in the environment, each process has one InfiniBand
 * port, device "umc_ib0", registered with the subnet manager umc-sm (the
 * SA client, sa/): the SM gives it a LID, a port GUID (GID 0 = subnet
 * prefix + GUID), the SM's LID, the P_Key table and port attributes, and
 * the map from MLIDs to the IP multicast groups that play the switches'
 * multicast forwarding tables.  Packets are real InfiniBand packets (LRH,
 * GRH, BTH, DETH, ICRC, VCRC: wire/ib.h), one per UDP datagram:
 *
 *   - to an MLID: where umc-sm forwards it (its multicast forwarding
 *     table, fwd.c): to its IP group on the SM's data port, where every
 *     port with a QP attached to one of the MLID's groups has a socket that
 *     is an IP member (the switch forwarding of a member port); or, with
 *     umc-sm --forwarding unicast or for an MLID a member could not bind,
 *     one copy to the data endpoint of each port that receives it;
 *   - to a unicast LID: to the data endpoint that port registered (an
 *     ephemeral UDP port on the address that reaches the SM), found once
 *     per LID through the SM.
 *
 * The port's IPoIB address (UMC_IB_ADDR, default 127.0.0.2) is what
 * rdma_bind_addr and rdma_resolve_addr select the device by.  Files:
 *
 *   port.c  the port: probe, registration with umc-sm, query_port, ops table
 *   ah.c    address handles: LRH/GRH template and destination endpoint
 *   rx.c    MLID group sockets, the unicast socket, receive checks
 *   tx.c    per-QP send sockets, encoding (ICRC, VCRC), sendmmsg
 *   fwd.c   the forwarding of the MLIDs the port sends to, from umc-sm
 */
#ifndef UMC_LINK_IB_H
#define UMC_LINK_IB_H

#include <netinet/in.h>
#include <pthread.h>

#include "link/driver.h"
#include "wire/ib.h"
#include "wire/sm_proto.h"

struct umc_sa_client;
struct umc_sa_fwd;

/*
 * A receive endpoint of the port: the unicast socket, or one group's, on
 * its MLID.  A group whose MLID is forwarded by unicast has one without a
 * socket (ep.fd -1): its packets come to the unicast socket.
 */
struct ib_ep {
	struct umc_rx_ep ep;
	uint16_t dlid; /* a group's: its MLID, the DLID its packets carry (ep.mcg: the group) */
	bool mlid_lead; /* of the MLID's sockets, the one for packets to groups not its own */
};

/*
 * An MLID the port sends to, and where its packets go as umc-sm forwards
 * it: the IP group and data port, or the receiving ports' data endpoints.
 * Held by the AHs to it (@refs, under fwd_ref_lock); read by the send path
 * under fwd_lock for reading, changed under it for writing.
 */
struct ib_fwd {
	uint16_t mlid;
	unsigned refs;
	uint32_t version;	  /* umc-sm's; 0 until it sent one */
	bool unicast;
	struct sockaddr_in mcast; /* !unicast: the IP group and UDP port */
	struct sockaddr_in *dst;  /* unicast: @n data endpoints */
	unsigned n;
	struct ib_fwd *next;
};

struct ib_port {
	struct umc_device dev;
	struct umc_sa_client *sa;  /* the registration with umc-sm; NULL until it answered */
	struct sockaddr_in sm;	  /* umc-sm's address (UMC_SM) */
	/* As last registered; written with dev->rx_lock and dev->lock held, so
	 * either one is enough to read it (the receive path holds rx_lock). */
	struct umc_sm_port_info pi;
	_Atomic uint16_t lid;	  /* pi.lid, for the data path (SLID of every send) */
	_Atomic int state;	  /* enum ibv_port_state: ACTIVE while registered */
	struct sockaddr_in ipoib; /* the IPoIB address (UMC_IB_ADDR) */
	struct in_addr data_addr; /* local address of the data plane (reaches the SM) */
	unsigned ifindex;	  /* its interface: multicast is sent and joined there */
	struct ib_ep ucast;	  /* unicast socket, bound to data_addr:ephemeral */
	bool ucast_polled;	  /* ucast registered with the receive engine */
	struct ib_rx *rx;	  /* receive buffers (rx.c) */
	/* The MLIDs the port sends to (fwd.c); lock order: fwd_ref_lock, then fwd_lock. */
	pthread_mutex_t fwd_ref_lock;
	pthread_rwlock_t fwd_lock;
	struct ib_fwd *fwds;
};

static inline struct ib_port *to_ib_port(struct umc_device *dev)
{
	return container_of(dev, struct ib_port, dev);
}

/* An AH: the link headers to send and where the datagram goes. */
struct ib_ah {
	struct umc_ah ah;
	struct umc_ib_hdr hdr;	 /* LRH (LNH, SL, DLID, path bits) and GRH template */
	struct sockaddr_in dst;	 /* a unicast LID's data endpoint */
	bool routed;		 /* dst is known (a unicast LID the SM knows) */
	struct ib_fwd *fwd;	 /* an MLID's forwarding (fwd.c), else NULL */
};

static inline struct ib_ah *to_ib_ah(struct umc_ah *ah)
{
	return container_of(ah, struct ib_ah, ah);
}

struct ib_qp {
	struct umc_qp qp;
	struct ib_tx *tx; /* send socket and batch, made on the first send (tx.c) */
};

static inline struct ib_qp *to_ib_qp(struct umc_qp *qp)
{
	return container_of(qp, struct ib_qp, qp);
}

/* port.c */
/*
 * ib_port_sa - the port's SA client: NULL until umc-sm answered a
 * registration (ib_register_thread keeps trying).  Never blocks.
 */
struct umc_sa_client *ib_port_sa(struct ib_port *port);

/* ah.c */
int ib_ah_init(struct umc_device *dev, const struct ibv_ah_attr *attr, struct umc_ah *ah);
void ib_ah_fini(struct umc_device *dev, struct umc_ah *ah);
int ib_init_ah_from_wc(struct umc_device *dev, const struct ibv_wc *wc, const uint8_t *grh,
		       struct ibv_ah_attr *attr);

/* rx.c */
int ib_ucast_open(struct ib_port *port);
int ib_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid);
void ib_mcg_close(struct umc_device *dev, struct umc_mcg *mcg);
int ib_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts, int max,
		bool *more, const struct umc_rx_lend *lend);

/* fwd.c */
void ib_fwd_init(struct ib_port *port);
int ib_fwd_get(struct ib_port *port, uint16_t mlid, struct ib_fwd **out);
void ib_fwd_put(struct ib_port *port, struct ib_fwd *f);
void ib_fwd_update(void *ctx, const struct umc_sa_fwd *f);
void ib_fwd_lost(struct ib_port *port);
void ib_fwd_subscribe_all(struct ib_port *port, struct umc_sa_client *sa);
/* ib_fwd_unicast - does umc-sm forward every MLID by unicast?  dev->lock or rx_lock held. */
static inline bool ib_fwd_unicast(const struct ib_port *port)
{
	return port->pi.sm_flags & UMC_SM_FLAG_UNICAST_FWD;
}

/* tx.c */
int ib_qp_init(struct umc_qp *qp);
void ib_qp_cleanup(struct umc_qp *qp);
int ib_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);

#endif /* UMC_LINK_IB_H */
