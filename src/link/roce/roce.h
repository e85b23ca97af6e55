/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 link layer's objects (link/roce/ only, and tests).
 *
 * RoCEv2 carries the transport headers in UDP datagrams on port 4791 (IBA
 * Annex A17; docs/design.md, "RoCEv2 fidelity").  A port is a network
 * interface that is up and has an IP address, loopback included; its GIDs
 * are the interface's addresses (IPv4 as ::ffff:a.b.c.d).  Files:
 *
 *   port.c      ports (one per interface), query_port, addresses, the ops table
 *   ah.c        address handles: the destination socket address and IP context
 *   rx.c        group sockets, IP membership (IGMP/MLD), receive and its checks
 *   tx.c        per-QP send sockets and sendmmsg
 *   uc/         unicast: a QPN held by one process of the host at a time, and
 *               the host's demultiplexer of UDP 4791 by DestQP (uc/uc.h)
 */
#ifndef UMC_LINK_ROCE_H
#define UMC_LINK_ROCE_H

#include <net/if.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "link/driver.h"
#include "link/shm/shm.h"

struct umc_sg;
struct roce_shm_tx;

/* A RoCE port: one network interface. */
struct roce_port {
	struct umc_device dev;
	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	unsigned netdev_mtu;
	bool loopback;	    /* IFF_LOOPBACK: lo gives every local socket a copy */
	struct roce_rx *rx; /* receive buffers, made on first use (rx.c) */
	struct roce_uc *uc; /* unicast reception, made with the first QP (uc/) */
	/* The groups this process sends to through the same-host path (shm.c). */
	pthread_mutex_t shm_lock;
	struct roce_shm_tx *shm_tx;
	int shm_ntx;	/* groups in @shm_tx: at most UMC_SHM_MAX_GROUPS (shm_lock) */
	int shm_groups; /* groups with a file open for receiving (rx_lock) */
};

static inline struct roce_port *to_roce_port(struct umc_device *dev)
{
	return container_of(dev, struct roce_port, dev);
}

/* What a receive endpoint of a port reads. */
enum roce_ep_kind {
	ROCE_EP_GROUP,	  /* a group's socket, bound to group:4791 */
	ROCE_EP_UC_INPUT, /* datagrams the demultiplexer passed on, behind a roce_uc_fwd */
	ROCE_EP_UC_SOCK,  /* the port's own socket of addr:4791's reuseport group (steered) */
	ROCE_EP_UC_SET,	  /* an epoll of the port's UC_INPUT and UC_SOCK endpoints */
	ROCE_EP_SHM,	  /* a group's senders of this host, through shared memory (shm.c) */
};

/*
 * A receive endpoint of a port: a group's, registered with the core's
 * engine, or one of the port's unicast ones, which wait in the epoll of
 * its one ROCE_EP_UC_SET endpoint (uc/ makes them).
 */
struct roce_ep {
	struct umc_rx_ep ep;
	enum roce_ep_kind kind;
	union ibv_gid dst;   /* ROCE_EP_UC_SOCK: the address the socket is bound to */
	struct umc_icrc_memo memo; /* its last datagram's ICRC prefix (rx_lock) */
	struct roce_ep *retired_next; /* ROCE_EP_UC_SOCK: the next on roce_uc's retired list */
	/*
	 * ROCE_EP_GROUP: the group's file of the same-host path (or NULL),
	 * and the endpoint that reads it (NULL with the path off).
	 * ROCE_EP_SHM: the file it reads.
	 */
	struct umc_shm_grp *shm;
	struct roce_ep *shm_ep;
};

/* An AH: where a datagram goes and the IP context its ICRC covers. */
struct roce_ah {
	struct umc_ah ah;
	struct sockaddr_storage dst; /* group (or host):4791 */
	/* A group's file of the same-host path (shm.c): NULL until the first send. */
	_Atomic(struct umc_shm_grp *) shm;
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
	 * packets (rx.c).  Written under sq_lock and read under rx_lock, so
	 * atomic; relaxed, since a packet from the socket can only come
	 * after the store that names its port.
	 */
	atomic_ushort tx_sport[UMC_MAX_GIDS];
	struct roce_tx *tx;
	bool uc_claimed; /* its QPN is claimed at the host's demultiplexer (uc/) */
	bool qpn_held;	 /* qpn_fd holds its QPN on the host (uc/qpn.c) */
	int qpn_fd;
};

static inline struct roce_qp *to_roce_qp(struct umc_qp *qp)
{
	return container_of(qp, struct roce_qp, qp);
}

/* port.c */
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

/*
 * A batch of receive slots for recvmmsg() on a UDP socket: each datagram
 * with its sender's address and control messages, into buf[i].
 */
struct roce_rxq {
	struct mmsghdr msg[UMC_RX_BATCH];
	struct iovec iov[UMC_RX_BATCH];
	struct sockaddr_storage name[UMC_RX_BATCH];
	uint64_t cmsg[UMC_RX_BATCH][16];
	uint8_t buf[UMC_RX_BATCH][UMC_RX_SLOT];
};

/* port.c */
/*
 * roce_rx_sockopts - the options of a socket that receives RoCEv2 on
 * @v4's family: a large receive buffer, TTL/TOS (hop limit, traffic
 * class, flow label) as control messages, IP_PKTINFO when @pktinfo, and
 * for IPv6 V6ONLY and UDP checksum 0 accepted.  Returns 0 or -errno.
 */
int roce_rx_sockopts(int fd, bool v4, bool pktinfo);
/* Point every slot of @q at its buffer, name and control space. */
void roce_rxq_init(struct roce_rxq *q);
/* Make slots [base, base + n) of @q ready for recvmmsg() again. */
void roce_rxq_reset(struct roce_rxq *q, int base, int n);
/*
 * roce_take_fds - the first @max descriptors of @mh's SCM_RIGHTS messages
 * into @fds (unrecorded: the caller records them, umc_fd_record); any
 * others are closed.  Returns how many were stored.
 */
int roce_take_fds(struct msghdr *mh, int *fds, int max);
/* The first descriptor of @mh's SCM_RIGHTS messages (-1 if none); any others are closed. */
int roce_take_fd(struct msghdr *mh);
/*
 * roce_send_fd - send the @len bytes at @buf on socket @sock as one
 * message, with descriptor @fd along (SCM_RIGHTS) unless it is -1;
 * MSG_DONTWAIT, MSG_NOSIGNAL, again on EINTR.  Returns true if all of it
 * went.  Context: any; unix(7).
 */
bool roce_send_fd(int sock, const void *buf, size_t len, int fd);
/* roce_send_fds - the same with @nfd descriptors @fds (at most UMC_UC_MSG_QPNS; 0: none). */
bool roce_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd);
/*
 * roce_abstract_name - make *@a the abstract AF_UNIX name (unix(7)) that
 * printf(@fmt, ...) spells, after its leading NUL byte; a longer name is
 * cut at sun_path's end.  Returns the address length to bind or connect
 * with.  The rendezvous of the demultiplexer (ROCE_UC_NAME_FMT) and a QPN's
 * hold (ROCE_QPN_NAME_FMT) are such names.
 */
socklen_t roce_abstract_name(struct sockaddr_un *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* rx.c */
/* The headers in front of a UD SEND's payload (BTH, DETH): scratch when the rest lands. */
enum { ROCE_LAND_HDR = UMC_BTH_LEN + UMC_DETH_LEN };
int roce_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid);
void roce_mcg_close(struct umc_device *dev, struct umc_mcg *mcg);
int roce_membership(struct umc_device *dev, struct umc_mcg *mcg, bool join);
int roce_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts, int max,
		  bool *more, const struct umc_rx_lend *lend);
void roce_port_held(const struct sockaddr *sa, const char *what);

/*
 * roce_rx_check - check the UDP payload @sg (BTH through ICRC) that
 * arrived with IP context @ip on endpoint @rm: decode, ICRC.  Fill @pkt
 * but for where its payload is (at *@off); true if it is to be delivered.
 */
bool roce_rx_check(struct roce_port *rp, struct roce_ep *rm, const struct umc_sg *sg,
		   struct umc_ip_ctx *ip, struct umc_rx_pkt *pkt, size_t *off);

/* shm.c: the same-host path (link/shm/shm.h) on a RoCE port. */
/* Open @rm's group file (group endpoint @rm of @mcg); with the path on, its reader too. */
void roce_shm_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, struct roce_ep *rm);
void roce_shm_mcg_close(struct umc_device *dev, struct roce_ep *rm);
/* The port holds the group's IP membership now (or not). */
void roce_shm_member(struct roce_ep *rm, bool member);
/* rx_burst of a ROCE_EP_SHM endpoint (rx.c's buffers: the slots it may use). */
int roce_shm_rx_burst(struct roce_port *rp, struct roce_ep *rm, uint8_t (*slot)[UMC_RX_SLOT],
		      struct umc_rx_pkt *pkts, int max, bool *more, const struct umc_rx_lend *lend);
/* The group file of multicast AH @ah for sending, opened on first use (NULL: none). */
struct umc_shm_grp *roce_shm_tx_of(struct umc_device *dev, struct roce_ah *ah);

/* tx.c */
int roce_qp_init(struct umc_qp *qp);
void roce_qp_cleanup(struct umc_qp *qp);
int roce_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);

/*
 * umc_mtu_from_netdev - a RoCE port's active MTU as rxe derives it: the
 * interface MTU less UMC_ROCE_MTU_OVERHEAD, rounded down to an IB MTU
 * (1500 -> IBV_MTU_1024, 4176 and above -> IBV_MTU_4096).
 */
enum ibv_mtu umc_mtu_from_netdev(unsigned netdev_mtu);

#endif /* UMC_LINK_ROCE_H */
