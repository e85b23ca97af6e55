/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 link layer's objects (link/roce/ only, plus the CM's
 * RoCE join in cm/roce.c and tests).
 *
 * RoCEv2 carries the transport headers in UDP datagrams on port 4791 (IBA
 * Annex A17; shared/reference/rocev2-wire.md).  A port is a network
 * interface that is up and has an IP address, loopback included; its GIDs
 * are the interface's addresses (IPv4 as ::ffff:a.b.c.d).  Files:
 *
 *   port.c  ports (one per interface), query_port, addresses, the ops table
 *   ah.c    address handles: the destination socket address and IP context
 *   rx.c    group sockets, IP membership (IGMP/MLD), receive and its checks
 *   tx.c    per-QP send sockets and sendmmsg
 */
#ifndef UMC_LINK_ROCE_H
#define UMC_LINK_ROCE_H

#include <net/if.h>
#include <netinet/in.h>

#include "umc_int.h"

/* A RoCE port: one network interface. */
struct roce_port {
	struct umc_device dev;
	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	unsigned netdev_mtu;
	struct roce_rx *rx; /* receive buffers, made on first use (rx.c) */
};

static inline struct roce_port *to_roce_port(struct umc_device *dev)
{
	return container_of(dev, struct roce_port, dev);
}

/* An AH: where a datagram goes and the IP context its ICRC covers. */
struct roce_ah {
	struct umc_ah ah;
	struct sockaddr_storage dst; /* group (or host):4791 */
	socklen_t dst_len;
	struct umc_ip_ctx ip;	     /* pseudo-header template; ports filled per QP */
	int sgid_index;		     /* source GID actually used (same family as the DGID) */
};

static inline struct roce_ah *to_roce_ah(struct umc_ah *ah)
{
	return container_of(ah, struct roce_ah, ah);
}

/* A QP's RoCE state: its send sockets, made on the first send (tx.c). */
struct roce_qp {
	struct umc_qp qp;
	uint16_t sport; /* preferred UDP source port (umc_roce_sport) */
	/*
	 * The port each send socket is bound to, per source GID index (0:
	 * none yet).  Bound exclusively, so (address, port) names this QP on
	 * the host: how IBV_QP_CREATE_BLOCK_SELF_MCAST_LB recognises its
	 * packets (rx.c).
	 */
	uint16_t tx_sport[UMC_MAX_GIDS];
	struct roce_tx *tx;
};

static inline struct roce_qp *to_roce_qp(struct umc_qp *qp)
{
	return container_of(qp, struct roce_qp, qp);
}

/* port.c */
int roce_socket(int family, int type);
int roce_setopt(int fd, int level, int name, int val);
/* The device's first GID of @v4's family (IPv4-mapped or not), or -1. */
int roce_gid_of_family(const struct umc_device *dev, bool v4);
/* The socket address of GID @gid_index, with @port (host order) and the interface's scope. */
socklen_t roce_gid_sockaddr(struct umc_device *dev, int gid_index, uint16_t port,
			    struct sockaddr_storage *ss);

/* ah.c */
int roce_ah_init(struct umc_device *dev, const struct ibv_ah_attr *attr, struct umc_ah *ah);
int roce_init_ah_from_wc(struct umc_device *dev, const struct ibv_wc *wc, const uint8_t *grh,
			 struct ibv_ah_attr *attr);

/* rx.c */
int roce_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid);
void roce_mcg_close(struct umc_device *dev, struct umc_mcg *mcg);
int roce_membership(struct umc_device *dev, struct umc_mcg *mcg, bool join);
int roce_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts, int max,
		  bool *more);

/* tx.c */
int roce_qp_init(struct umc_qp *qp);
void roce_qp_cleanup(struct umc_qp *qp);
int roce_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);

/* ------------------------------------------------------------------------- */
/* What the CM's RoCE join needs of a port (cm/roce.c).                      */

/*
 * umc_mtu_from_netdev - a RoCE port's active MTU as rxe derives it: the
 * interface MTU less UMC_ROCE_MTU_OVERHEAD, rounded down to an IB MTU
 * (1500 -> IBV_MTU_1024, 4176 and above -> IBV_MTU_4096).
 */
enum ibv_mtu umc_mtu_from_netdev(unsigned netdev_mtu);

/*
 * umc_roce_gid_live - is the address behind GID @gid_index still on the
 * port's interface?  (GIDs are never removed from the table, so that
 * indices stay put; this asks the interfaces.)
 */
bool umc_roce_gid_live(struct umc_device *dev, int gid_index);

/*
 * umc_roce_mcast_route - can the kernel send to group @mgid out of the
 * port's interface?  (A UDP connect() with the interface as multicast
 * interface: nothing is sent.)  Linux gives IPv6 multicast no route on
 * loopback, for instance.  Returns 0, or -ENODEV when it cannot.
 */
int umc_roce_mcast_route(struct umc_device *dev, const union ibv_gid *mgid);

#endif /* UMC_LINK_ROCE_H */
