/* SPDX-License-Identifier: MIT */
/*
 * roce.h - the RoCEv2 link layer's objects (link/roce/ only, and tests).
 *
 * RoCEv2 carries the transport headers in UDP datagrams on port 4791 (IBA
 * Annex A17; shared/reference/rocev2-wire.md).  A port is a network
 * interface that is up and has an IP address, loopback included; its GIDs
 * are the interface's addresses (IPv4 as ::ffff:a.b.c.d).  Files:
 *
 *   port.c      ports (one per interface), query_port, addresses, the ops table
 *   ah.c        address handles: the destination socket address and IP context
 *   rx.c        group sockets, IP membership (IGMP/MLD), receive and its checks
 *   tx.c        per-QP send sockets and sendmmsg
 *   qpn.c       a QPN held by one process of the host at a time
 *   ucast.c     unicast: the host's demultiplexer of UDP 4791 by DestQP; this
 *               process as its client, the agent thread, the port's calls
 *   uc_demux.c  ... the demultiplexer: QPN table, clients, datagrams passed on
 *   uc_steer.c  ... its steering of DestQP (SO_REUSEPORT, classic BPF)
 *   ucast.h     the unicast objects those three share
 */
#ifndef UMC_LINK_ROCE_H
#define UMC_LINK_ROCE_H

#include <net/if.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "link/driver.h"

/* A RoCE port: one network interface. */
struct roce_port {
	struct umc_device dev;
	char ifname[IF_NAMESIZE];
	unsigned ifindex;
	unsigned netdev_mtu;
	struct roce_rx *rx; /* receive buffers, made on first use (rx.c) */
	struct roce_uc *uc; /* unicast reception, made with the first QP (ucast.c) */
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
};

/*
 * A receive endpoint of a port: a group's, registered with the core's
 * engine, or one of the port's unicast ones, which wait in the epoll of
 * its one ROCE_EP_UC_SET endpoint (ucast.c makes them).
 */
struct roce_ep {
	struct umc_rx_ep ep;
	enum roce_ep_kind kind;
	union ibv_gid dst;   /* ROCE_EP_UC_SOCK: the address the socket is bound to */
	struct umc_icrc_memo memo; /* its last datagram's ICRC prefix (rx_lock) */
	struct roce_ep *retired_next; /* ROCE_EP_UC_SOCK: the next on roce_uc's retired list */
};

/*
 * What the demultiplexer puts in front of a unicast datagram it passes on:
 * the IP/UDP context only the owner of the UDP socket saw, which the
 * receiver needs for the ICRC and the GRH.  Host byte order except the
 * addresses (network order, IPv4 in the first 4 bytes).  family
 * ROCE_UC_FWD_CTL marks no datagram but a struct roce_uc_ctl.
 */
struct roce_uc_fwd {
	uint8_t family; /* 4 or 6, or ROCE_UC_FWD_CTL */
	uint8_t tclass;
	uint8_t hop_limit;
	uint8_t reserved;
	uint16_t sport;
	uint16_t reserved2;
	uint32_t flow_label;
	uint8_t src[16];
	uint8_t dst[16];
};

enum { ROCE_UC_FWD_CTL = 0xff };

/*
 * What the demultiplexer of address @dst tells a port on its input about
 * dst:4791's reuseport group (uc_steer.c): one of its sockets
 * (with SCM_RIGHTS): the port's own to read (ROCE_UC_CTL_OWN), or another
 * one to hold, so that no socket leaves the group while some process
 * lives and any of them can take the group over; or that the group is new
 * and every socket of the old one is to be let go.
 */
struct roce_uc_ctl {
	uint8_t family;	     /* ROCE_UC_FWD_CTL */
	uint8_t op;	     /* enum roce_uc_ctl_op */
	uint8_t addr_family; /* dst's: 4 or 6 */
	uint8_t flags;	     /* ROCE_UC_CTL_OWN */
	uint32_t index;	     /* ROCE_UC_CTL_SOCK: the socket's index in the group */
	uint32_t size;	     /* ROCE_UC_CTL_SOCK: the group's size now */
	uint8_t dst[16];
	uint8_t reserved[16];
};

enum roce_uc_ctl_op {
	ROCE_UC_CTL_SOCK = 1, /* a socket of the group */
	ROCE_UC_CTL_FRESH,    /* a new group: let go of the old one's sockets */
};

enum { ROCE_UC_CTL_OWN = 1 };

_Static_assert(sizeof(struct roce_uc_ctl) == sizeof(struct roce_uc_fwd),
	       "the input's control messages have the size of a datagram's header");

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
	 * packets (rx.c).  Written under sq_lock and read under rx_lock, so
	 * atomic; relaxed, since a packet from the socket can only come
	 * after the store that names its port.
	 */
	atomic_ushort tx_sport[UMC_MAX_GIDS];
	struct roce_tx *tx;
	bool uc_claimed; /* its QPN is claimed at the host's demultiplexer (ucast.c) */
	bool qpn_held;	 /* qpn_fd holds its QPN on the host (qpn.c) */
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
/* The first descriptor of @mh's SCM_RIGHTS messages (-1 if none); any others are closed. */
int roce_take_fd(struct msghdr *mh);
/*
 * roce_send_fd - send the @len bytes at @buf on socket @sock as one
 * message, with descriptor @fd along (SCM_RIGHTS) unless it is -1;
 * MSG_DONTWAIT, MSG_NOSIGNAL, again on EINTR.  Returns true if all of it
 * went.  Context: any; unix(7).
 */
bool roce_send_fd(int sock, const void *buf, size_t len, int fd);
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

/* tx.c */
int roce_qp_init(struct umc_qp *qp);
void roce_qp_cleanup(struct umc_qp *qp);
int roce_xmit(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);

/* qpn.c */
/*
 * Where a QPN is held: the abstract AF_UNIX name "\0" ROCE_QPN_NAME_FMT,
 * with the QPN (24 bits, in hex).
 */
#define ROCE_QPN_NAME_FMT "umcast-rocev2-qpn:%06x"
/*
 * roce_qpn_hold - hold @qp's QPN on the host (its network namespace) for
 * as long as the QP lives.  Returns 0, -EADDRINUSE (another process holds
 * it: counted as uc_qpn_taken; the core tries the next number), or the
 * socket's -errno (-EMFILE, -ENFILE, -ENOMEM).
 */
int roce_qpn_hold(struct roce_qp *qp);
/* roce_qpn_release - let the QPN go; safe if roce_qpn_hold failed or never ran. */
void roce_qpn_release(struct roce_qp *qp);

/* ucast.c */
/*
 * roce_uc_qp_add - claim @qp's QPN at the demultiplexer of every address
 * of its port (connecting to it, or becoming it, first), so that unicast
 * datagrams for it reach this process.  Context: qp_init (dev->rx_lock
 * and dev->lock held).  Waits at most UMC_UC_CONNECT_MS + UMC_UC_REPLY_MS
 * per address for another process.  Returns 0 (also when the
 * demultiplexer could not answer in time: the claim stands and is sent
 * again after a hand-over), -EADDRINUSE when the demultiplexer has the
 * QPN for another process (one that exited, its hang-up not yet read), or
 * -ENOMEM / -EMFILE.
 */
int roce_uc_qp_add(struct roce_qp *qp);
/* roce_uc_qp_del - release the QPN claimed by roce_uc_qp_add.  Context: no lock held. */
void roce_uc_qp_del(struct roce_qp *qp);
/*
 * roce_uc_ctl_input - act on control message @c from a demultiplexer,
 * read on the port's input with descriptor @fd (-1 if none, else
 * recorded for fork already, ours to keep or to umc_fd_close):
 * ROCE_UC_CTL_SOCK with ROCE_UC_CTL_OWN: receive from @fd (a
 * ROCE_EP_UC_SOCK endpoint in the port's unicast set) in place of the
 * earlier one; without: hold @fd at its index; ROCE_UC_CTL_FRESH: close
 * every socket of the old group.  A descriptor that is not a datagram
 * socket bound to c->dst:4791, an index outside the group (past its size,
 * a size past UMC_UC_GROUP_MAX, index 0 as the port's own), or a message
 * for an address of no domain is dropped and counted (rx_malformed).
 * Context: dev->rx_lock held (the engine, reading the input).
 */
void roce_uc_ctl_input(struct roce_port *rp, const struct roce_uc_ctl *c, int fd);
/*
 * roce_uc_reap - free the steered endpoints that control messages retired
 * (roce_uc_ctl_input) since the last call: at the start of a burst of the
 * port's unicast set, when no event of an earlier epoll_wait names them.
 * Context: dev->rx_lock held.
 */
void roce_uc_reap(struct roce_port *rp);

/* ------------------------------------------------------------------------- */
/* The unicast demultiplexer's control protocol (ucast.c, uc_demux.c).       */

/*
 * Where a demultiplexer listens: the abstract AF_UNIX SOCK_SEQPACKET name
 * "\0" ROCE_UC_NAME_FMT, with the address as inet_ntop(3) writes it (and
 * "%ifindex" for a scoped IPv6 address).
 */
#define ROCE_UC_NAME_FMT "umcast-rocev2-demux:%s"

enum { ROCE_UC_MAGIC = 0x55434d55, ROCE_UC_VERSION = 1 };

enum roce_uc_op {
	ROCE_UC_HELLO = 1, /* with SCM_RIGHTS: the client's input (a SOCK_DGRAM socket) */
	ROCE_UC_CLAIM,	   /* qpn[0..count): route these to me (count 0: a barrier) */
	ROCE_UC_RELEASE,   /* qpn[0..count): no longer mine */
	ROCE_UC_REPLY,	   /* to every request: status, the refused qpn[] */
};

enum { ROCE_UC_F_PORT = 1 }; /* ROCE_UC_REPLY flags: the demultiplexer holds addr:4791 */

/*
 * One control message, of ROCE_UC_MSG_LEN(count) bytes.  The header up to
 * @pid stays the same in every version, so a peer of another version can be
 * told -EPROTONOSUPPORT.  Any other message that is not exactly this (and,
 * for HELLO, an input that is not an AF_UNIX SOCK_DGRAM socket: -EINVAL)
 * ends the connection.
 */
struct roce_uc_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t seq;
	int32_t status; /* ROCE_UC_REPLY: 0, -EADDRINUSE, -EINVAL, -ENOMEM, -EPROTONOSUPPORT */
	uint32_t pid;	/* ROCE_UC_REPLY: the demultiplexer's */
	uint16_t flags; /* ROCE_UC_REPLY: ROCE_UC_F_* */
	uint16_t count; /* entries of qpn[] used */
	uint32_t qpn[UMC_UC_MSG_QPNS];
};

#define ROCE_UC_MSG_LEN(n) (offsetof(struct roce_uc_msg, qpn) + (size_t)(n) * sizeof(uint32_t))

/*
 * umc_mtu_from_netdev - a RoCE port's active MTU as rxe derives it: the
 * interface MTU less UMC_ROCE_MTU_OVERHEAD, rounded down to an IB MTU
 * (1500 -> IBV_MTU_1024, 4176 and above -> IBV_MTU_4096).
 */
enum ibv_mtu umc_mtu_from_netdev(unsigned netdev_mtu);

/* The state of a port's unicast reception (umc_roce_uc_sync), for tests and diagnostics. */
struct umc_roce_uc_info {
	int addrs;	  /* addresses (GIDs) of the port with a demultiplexer */
	int connected;	  /* ... to which this process is connected and registered */
	int leading;	  /* ... whose demultiplexer is this process */
	pid_t leader_pid; /* the demultiplexer of GID index 0, or 0 */
	bool port_held;	  /* ... and it holds addr:4791 */
	bool steering;	  /* ... steers by DestQP (this process leading it: else unknown) */
	int clients;	  /* ... the processes registered with it (this process leading it) */
};

/*
 * umc_roce_uc_sync - a barrier with the demultiplexer of every address of
 * @dev's port: (re)connect where needed, then wait until each has handled
 * every claim this process sent it so far (at most @timeout_ms in all).
 * Fills @info.  Returns 0 when every address answered, -EAGAIN otherwise,
 * -ENODEV when the port has no unicast reception (no QP yet).
 */
int umc_roce_uc_sync(struct umc_device *dev, struct umc_roce_uc_info *info, int timeout_ms);

#endif /* UMC_LINK_ROCE_H */
