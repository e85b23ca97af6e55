/* SPDX-License-Identifier: MIT */
/*
 * link.h - the seam between the verbs core and a link layer: one table of
 * port-level operations per link layer (RoCEv2 in link/roce/, simulated
 * InfiniBand in link/ib/).
 *
 * Everything that differs between link layers sits behind these ops: which
 * ports exist, their attributes, GID and P_Key tables, what an address
 * handle turns into on the wire, the per-QP send state, how a multicast
 * group is received and joined, and how packets are read and written.  The
 * layers above never see a socket, an IP header or an LRH: the core hands
 * the link checked work requests (struct umc_tx_pkt) and gets back decoded,
 * checked packets with a link-neutral header (struct umc_rx_pkt).
 *
 * The seam is one-way: a link never names the CM.  The CM picks its join
 * code by the port's link_layer (as the kernel's cma.c does), asks the
 * port what a join needs through ops of this table (netdev_mtu, gid_live,
 * mcast_route, sa), and hears of the port's changes through the events a
 * link raises (umc_dev_event).
 *
 * A link's table may leave any op NULL: umc_link_complete() fills it with
 * a default (umc_link_default_ops in link.c) that returns -EOPNOTSUPP or
 * does nothing, as rdma-core's dummy ops do, so the core never tests an op
 * for NULL.  The objects a link extends (device, AH, QP) embed the core
 * struct first and the link reaches its part with container_of().
 *
 * Conventions: ops return 0 or a negative errno; "Context" says which
 * locks the caller holds, and locks are taken in the ranked order of
 * umc_lock.h (docs/design.md, "Locking"): dev->rx_lock, then dev->lock,
 * then a QP's, then a CQ's.
 */
#ifndef UMC_LINK_H
#define UMC_LINK_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "umc_param.h"
#include "wire/transport.h"

struct umc_device;
struct umc_qp;
struct umc_ah;
struct umc_mcg;
struct umc_sa_client;

/* A descriptor the receive engine polls for a link; the link embeds it. */
struct umc_rx_ep {
	int fd;
	/*
	 * The group whose datagrams arrive here, if one (a group's socket)
	 * and the link lands them: the engine lends the posted receives of
	 * one of its QPs for them to land in (rx_burst).  NULL: nothing is
	 * lent.
	 */
	struct umc_mcg *mcg;
	int lend_hint;	 /* the engine's: packets its last burst brought (progress.c) */
	bool lend_spare; /* ... and whether the last was large: lend one receive more */
	/* The engine's, under rx_lock (progress.c "Cold endpoints", "Woken drains"): */
	unsigned long seen;  /* the device's rx_got when this endpoint last delivered */
	unsigned long reads; /* reads of this endpoint (one syscall each) */
	bool fresh;	     /* emptied by a woken thread's pass, not read since */
	uint32_t sk_drops;   /* the socket's drop count its datagrams last gave (umc_rx_sock_drops) */
	/*
	 * An endpoint whose fd does not become readable by itself (NULL for
	 * a socket): a thread of the process may now sleep on the fd until
	 * something arrives (umc_rx_arm), so make it readable then, and now
	 * if something waits.  Context: dev->rx_lock held.
	 */
	void (*arm)(struct umc_device *dev, struct umc_rx_ep *ep);
};

/*
 * A posted receive the engine lends the link for one datagram to land in:
 * the WQE's bytes after its 40-byte GRH area, as iovecs in order.  The
 * link receives the datagram's payload (and what follows it) straight
 * there, so that the payload is copied at most once, and only for a second
 * QP.  The MRs of the WQE are held while it is lent (ibv_dereg_mr waits).
 */
struct umc_rx_land {
	struct iovec iov[UMC_MAX_SGE];
	int niov;
	uint64_t room; /* bytes of @iov */
};

/* The receives lent for one burst: datagram i of it may land in land[i], i < n. */
struct umc_rx_lend {
	int n;
	struct umc_rx_land land[UMC_RX_BATCH];
};

/*
 * A packet the link read, checked (length, ICRC, VCRC) and decoded: what
 * every link layer gives the core.  Valid until the next rx_burst.
 */
struct umc_rx_pkt {
	struct umc_ud_hdr hdr;
	const uint8_t *payload;	/* when @land is NULL */
	const struct umc_rx_land *land; /* where the payload landed (rx_burst), or NULL */
	uint32_t land_off;	/* bytes of @land before the payload (an ImmDt) */
	uint32_t len;		/* payload bytes, pad excluded */
	struct umc_mcg *mcg;	/* the destination group (DestQP 0xFFFFFF), or NULL */
	struct umc_qp *sender;	/* the local QP that sent it; set only while
				 * dev->block_self_qps (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) */
	uint16_t slid;		/* LRH SLID on InfiniBand, 0 on RoCE */
	uint8_t sl;		/* LRH SL on InfiniBand, 0 on RoCE */
	bool has_grh;		/* grh holds a GRH (always on RoCE; IBV_WC_GRH) */
	uint8_t grh[UMC_GRH_LEN]; /* the 40 bytes in front of the receive buffer */
};

/*
 * Receiving into lent receives (land.c), for a link whose datagrams carry
 * @hdr bytes of headers before the payload when it can land:
 *
 * umc_rx_aim - aim recvmmsg() at @iov (UMC_MAX_SGE + 2 entries) for one
 * datagram: its first @hdr bytes into @slot, the rest into @land and what
 * does not fit there into @slot's tail; with @land NULL, all into @slot.
 * At most UMC_RX_SLOT bytes either way.  Returns the iovecs used.
 */
size_t umc_rx_aim(struct iovec *iov, uint8_t *slot, size_t hdr, const struct umc_rx_land *land);

/*
 * umc_rx_settle - where the payload of a checked datagram of @len bytes,
 * received as umc_rx_aim() said, is: when it lies whole in @land (it
 * starts at @off >= @hdr and ends within the land), pkt->land and
 * pkt->land_off say so; otherwise the land's bytes are copied back into
 * @slot, which then holds the datagram whole, and pkt->payload points at
 * @slot + @off.  Sets pkt->land and pkt->payload either way.
 */
void umc_rx_settle(struct umc_rx_pkt *pkt, uint8_t *slot, size_t hdr,
		   const struct umc_rx_land *land, size_t len, size_t off);

/*
 * Sockets, the same on every link (sock.c).
 *
 * umc_link_socket - socket(@family, @type, 0), recorded as the library's
 * (UMC_FD_NEW; close it with umc_fd_close); when the soft RLIMIT_NOFILE
 * runs out (one socket per group means up to UMC_MAX_MCAST_GRP
 * descriptors), raise it to the hard limit once.  Returns the fd or -errno.
 */
int umc_link_socket(int family, int type);

/*
 * umc_link_rcvbuf - a receive buffer of UMC_RX_SOCKBUF bytes, or what
 * rmem_max allows, and the socket's drop count on the datagrams received
 * after a drop (SO_RXQ_OVFL, socket(7)): see umc_rx_sock_drops.
 */
void umc_link_rcvbuf(int fd);

/*
 * umc_link_port_holder - what holds the UDP port of @sa (AF_INET or
 * AF_INET6, its port set), which a bind found in use: "process PID
 * (COMM)", "a socket of uid UID" (another user's process), or "a socket
 * this process cannot see", from /proc/net/udp (udp6) and /proc/PID/fd
 * (holder.c).  Slow: for an error message.  Returns @buf.
 */
const char *umc_link_port_holder(const struct sockaddr *sa, char *buf, size_t len);

/*
 * umc_link_sock_drops - the socket's drop count that an SO_RXQ_OVFL
 * control message of @mh gives, or @seen when it has none.
 */
uint32_t umc_link_sock_drops(struct msghdr *mh, uint32_t seen);

/*
 * umc_link_sendmmsg - send @msg[@from, @to) on @fd; a datagram the kernel
 * refuses is counted (tx_errors) and skipped, the sent ones in tx_packets.
 */
void umc_link_sendmmsg(struct umc_device *dev, int fd, struct mmsghdr *msg, int from, int to);

/* One UD SEND the core validated, handed to the link to encode and send. */
struct umc_tx_pkt {
	struct umc_ah *ah;
	const struct ibv_sge *sge;
	int num_sge;
	uint32_t len; /* payload bytes */
	struct umc_ud_hdr hdr;
	/*
	 * The fault stage's corrupt= (fault/stage.h): after computing the
	 * ICRC, the link flips its lowest bit, so the receiver finds it bad.
	 */
	bool corrupt;
};

struct umc_link_ops {
	const char *name;
	enum ibv_transport_type transport;
	uint8_t link_layer; /* IBV_LINK_LAYER_ETHERNET or _INFINIBAND */
	size_t ah_size;	    /* the link's AH: struct umc_ah first */
	size_t qp_size;	    /* the link's QP: struct umc_qp first */

	/*
	 * probe - find this link's ports and umc_dev_register() a device for
	 * each one not known yet; add GIDs that appeared to known ones (GID
	 * indices never move).  Called at first use and again whenever an
	 * address is not found.  Context: the device list lock held.
	 */
	void (*probe)(void);

	/* query_port - fill @attr, which the caller zeroed (ibv_query_port(3)). */
	void (*query_port)(struct umc_device *dev, struct ibv_port_attr *attr);

	/*
	 * netdev - the network interface behind the port, if any (the
	 * kernel's netdev of a RoCE port; sysfs device/net, GID entry
	 * ndev_ifindex).  Writes its name (IF_NAMESIZE bytes) and index.
	 * Returns 0 or -ENODEV.
	 */
	int (*netdev)(struct umc_device *dev, char *ifname, unsigned *ifindex);

	/*
	 * netdev_mtu - the MTU of the network interface behind the port, in
	 * bytes (the netdev's mtu, which the kernel's iboe_get_mtu() reads
	 * for a RoCE join); 0 when there is none.
	 */
	unsigned (*netdev_mtu)(struct umc_device *dev);

	/*
	 * gid_live - is the address behind GID @gid_index still the port's?
	 * GID indices never move, but on RoCE the address behind one may
	 * leave its interface: the CM then builds no AH from it (the
	 * kernel's ib_init_ah_from_mcmember finds no GID).  Default: true.
	 */
	bool (*gid_live)(struct umc_device *dev, int gid_index);

	/*
	 * mcast_route - can the port send to multicast group @mgid?  On RoCE,
	 * does the kernel route it out of the port's interface (a UDP
	 * connect(), nothing sent; Linux gives IPv6 multicast no route on
	 * loopback), the check behind cma_igmp_send's ENODEV.  Returns 0, or
	 * -ENODEV (-EOPNOTSUPP by default).
	 */
	int (*mcast_route)(struct umc_device *dev, const union ibv_gid *mgid);

	/*
	 * sa - the port's SA client (InfiniBand: its registration with
	 * umc-sm; sa/sa_client.h), through which MCMemberRecords are set,
	 * deleted and read; NULL while the SM has not answered yet, and by
	 * default.  Context: any thread; never blocks.
	 */
	struct umc_sa_client *(*sa)(struct umc_device *dev);

	/*
	 * addr_gid - does local address @sa (AF_INET or AF_INET6, IPv4-mapped
	 * already turned into AF_INET) select @dev?  rdma_bind_addr and
	 * rdma_resolve_addr use it.  Returns the GID index of the port's
	 * source GID for it, or -EADDRNOTAVAIL.
	 */
	int (*addr_gid)(struct umc_device *dev, const struct sockaddr *sa);

	/*
	 * ah_init - check @attr (the core has checked the port number) and
	 * prepare the link's part of @ah (a block of ah_size bytes) so that
	 * xmit needs nothing else.  Returns 0 or -EINVAL.
	 */
	int (*ah_init)(struct umc_device *dev, const struct ibv_ah_attr *attr, struct umc_ah *ah);

	/*
	 * ah_fini - release what ah_init took (InfiniBand: the AH's hold on
	 * its MLID's forwarding), before the AH is freed.  Context: no lock.
	 */
	void (*ah_fini)(struct umc_device *dev, struct umc_ah *ah);

	/*
	 * init_ah_from_wc - an ah_attr that answers the sender of received
	 * completion @wc, from the GRH area @grh of its buffer
	 * (ibv_init_ah_from_wc(3)).  Returns 0 or -EINVAL.
	 */
	int (*init_ah_from_wc)(struct umc_device *dev, const struct ibv_wc *wc,
			       const uint8_t *grh, struct ibv_ah_attr *attr);

	/*
	 * qp_init - set up the link's part of a new QP (a block of qp_size
	 * bytes; qp_num is assigned, the QP not yet on the device's list).
	 * Never waits for the network; it may wait a bounded time for a
	 * local exchange (RoCE: claiming the QPN at the host's unicast
	 * demultiplexer).  -EADDRINUSE means another process sharing the
	 * port holds the number: the core then tries another.
	 * qp_cleanup releases what the QP holds, is safe after a failed
	 * qp_init (which may be called again on the same QP), and may block.
	 * Context: qp_init with dev->rx_lock and dev->lock held; qp_cleanup
	 * with none.
	 */
	int (*qp_init)(struct umc_qp *qp);
	void (*qp_cleanup)(struct umc_qp *qp);

	/*
	 * mcg_open - make group @mcg receivable on the port: open its
	 * endpoint(s) and register them with umc_rx_add().  Called once per
	 * group, when the first QP attaches (@mlid as given to
	 * ibv_attach_mcast) or the first membership is taken.  The port does
	 * not become a member of the group.  mcg_close undoes it.
	 * Context: dev->rx_lock and dev->lock held.  Returns 0 or -errno.
	 */
	int (*mcg_open)(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid);
	void (*mcg_close)(struct umc_device *dev, struct umc_mcg *mcg);

	/*
	 * membership - make the port a member of @mcg's group (@join) or not,
	 * on RoCE by IP membership (IGMP/MLD).  Reference counting is the
	 * core's (umc_dev_member).  Context: dev->rx_lock and dev->lock held.
	 * Returns 0 or -errno (-ENODEV: the port cannot join).
	 */
	int (*membership)(struct umc_device *dev, struct umc_mcg *mcg, bool join);

	/*
	 * rx_burst - read up to @max packets waiting on endpoint @ep, check
	 * and decode them into @pkts.  Malformed or corrupt packets are
	 * dropped and counted in dev->cnt, never returned.  Never blocks.
	 * With receives lent (@lend, lend->n of them; may be 0), datagram i
	 * of the burst, i < lend->n, is received with its payload in
	 * lend->land[i] when it fits there (land.c), and its packet then says
	 * so (pkt->land, pkt->land_off); every other packet has pkt->land
	 * NULL and pkt->payload in link-owned buffers valid until the next
	 * call.  A datagram that fails a check leaves what it wrote in its
	 * land, and the WQE stays posted.  Context: dev->rx_lock held.
	 * Returns the number of packets in @pkts and sets *@more when the
	 * endpoint may hold more.
	 */
	int (*rx_burst)(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts,
			int max, bool *more, const struct umc_rx_lend *lend);

	/*
	 * xmit - encode and send @n packets of @qp in one batch.  A packet the
	 * network refuses is counted (tx_errors) and not retried: UD is
	 * unreliable.  Context: qp->sq_lock held.  Returns 0, or -errno when
	 * the QP cannot send at all.
	 */
	int (*xmit)(struct umc_qp *qp, struct umc_tx_pkt *pkts, int n);
};

/*
 * The link layers, in the order their devices are listed.  Each table is
 * completed with the defaults by umc_link_complete() before use.
 */
extern const struct umc_link_ops umc_roce_link_ops;
extern const struct umc_link_ops umc_ib_link_ops;

/*
 * umc_links - the completed ops table of every link layer.
 * Returns their number; *@list points at a static array.
 */
int umc_links(const struct umc_link_ops *const **list);

/*
 * umc_link_complete - the completed copy of @ops (every NULL op replaced by
 * its default), for dev->link.  @ops must be one of the link tables above.
 */
const struct umc_link_ops *umc_link_complete(const struct umc_link_ops *ops);

#endif /* UMC_LINK_H */
