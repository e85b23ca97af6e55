// SPDX-License-Identifier: MIT
/*
 * rx.c - receiving RoCEv2: group sockets, IP membership and the checks a
 * datagram passes before the core sees it.
 *
 * Each group has a socket bound to group:4791 with SO_REUSEADDR, so every
 * process of the host that attached a QP gets its own copy, and bound to
 * the port's interface (SO_BINDTODEVICE), so it only sees what arrived
 * there.  As on an rxe host, it gets the group's datagrams exactly while
 * the host is a member of the group on that interface, whoever joined.  IP
 * membership (IGMP/MLD) is taken on that socket only for full members.
 * The destination and interface are known from the binding, so the kernel
 * need not look them up per datagram (IP_PKTINFO is asked for only where
 * SO_BINDTODEVICE is refused).
 *
 * A group's datagram is received with its BTH and DETH in a scratch slot
 * and the rest straight in a posted receive the engine lent (land.c), and
 * checked over those pieces; its payload is then completed in place.
 *
 * Unicast datagrams reach this process through the port's unicast input,
 * where the host's demultiplexer passes on those for its QPNs (uc/uc_demux.c),
 * each behind the IP context the demultiplexer's socket saw; they get the
 * same checks.
 *
 * The ICRC check: a UDP socket shows addresses, ports, TTL and TOS but
 * never the IPv4 identification and flags, which the ICRC covers.  The
 * check assumes DF and ID 0 (umcast's own packets); when that fails, the
 * ID is solved from the ICRC (umc_rocev2_rx_check), which leaves a
 * 16-bit integrity check for packets from senders with other IDs, such as
 * rxe.  Such packets are counted in rx_icrc_id_solved and their GRH shows
 * the solved ID.  IPv6 has no hidden invariant field: the check is the full
 * 32 bits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link/roce/uc/uc.h"
#include "wire/sg.h"

static int roce_mcg_socket(struct umc_device *dev, const union ibv_gid *mgid)
{
	struct roce_port *rp = to_roce_port(dev);
	bool v4 = umc_gid_is_v4mapped(mgid);
	struct sockaddr_storage ss;
	socklen_t len = umc_gid_to_sockaddr(mgid, UMC_ROCEV2_UDP_PORT, &ss);
	int fd = umc_link_socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC);
	int ret, one = 1;

	if (fd < 0)
		return fd;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Without the device binding, filter by IP_PKTINFO's interface. */
	bool pktinfo = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, rp->ifname,
				  (socklen_t)strlen(rp->ifname)) != 0;

	if (!v4) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (IN6_IS_ADDR_MC_LINKLOCAL(&s6->sin6_addr) ||
		    IN6_IS_ADDR_MC_NODELOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = rp->ifindex;
	}
	ret = roce_rx_sockopts(fd, v4, pktinfo);
	if (!ret && bind(fd, (struct sockaddr *)&ss, len))
		ret = -errno;
	if (ret == -EADDRINUSE)
		roce_port_held((struct sockaddr *)&ss, "the group cannot be received here");
	if (ret) {
		umc_fd_close(fd); /* under rx_lock: not a cancellation point */
		return ret;
	}
	return fd;
}

/*
 * roce_port_held - say on stderr that UDP 4791 of @sa is held by another
 * socket without SO_REUSEADDR, by whom, and @what follows.  RoCEv2's port
 * is fixed (IBA Annex A17), so nothing here can move to another.
 */
void roce_port_held(const struct sockaddr *sa, const char *what)
{
	char addr[INET6_ADDRSTRLEN] = "?", who[96];

	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof(addr));
	fprintf(stderr,
		"umcast: UDP port %d of %s is held by %s, bound without SO_REUSEADDR: %s "
		"(EADDRINUSE) until it lets go\n",
		UMC_ROCEV2_UDP_PORT, addr, umc_link_port_holder(sa, who, sizeof(who)), what);
}

int roce_mcg_open(struct umc_device *dev, struct umc_mcg *mcg, uint16_t mlid)
{
	struct roce_ep *rm = calloc(1, sizeof(*rm));
	int ret;

	if (!rm)
		return -ENOMEM;
	rm->kind = ROCE_EP_GROUP;
	rm->ep.mcg = mcg; /* the group: the engine lends its QPs' receives */
	rm->ep.fd = roce_mcg_socket(dev, &mcg->mgid);
	if (rm->ep.fd < 0) {
		ret = rm->ep.fd;
		free(rm);
		return ret;
	}
	ret = umc_rx_add(dev, &rm->ep);
	if (ret) {
		umc_fd_close(rm->ep.fd);
		free(rm);
		return ret;
	}
	mcg->link_priv = rm;
	roce_shm_mcg_open(dev, mcg, rm); /* without it, the kernel alone carries the group */
	return 0;
}

void roce_mcg_close(struct umc_device *dev, struct umc_mcg *mcg)
{
	struct roce_ep *rm = mcg->link_priv;

	umc_rx_del(dev, &rm->ep);
	umc_fd_close(rm->ep.fd);
	roce_shm_mcg_close(dev, rm); /* tells the senders, now that the socket is gone */
	free(rm);
	mcg->link_priv = NULL;
}

int roce_membership(struct umc_device *dev, struct umc_mcg *mcg, bool join)
{
	struct roce_ep *rm = mcg->link_priv;
	unsigned ifindex = to_roce_port(dev)->ifindex;
	int ret;

	if (umc_gid_is_v4mapped(&mcg->mgid)) {
		struct ip_mreqn mr = {.imr_ifindex = (int)ifindex};

		memcpy(&mr.imr_multiaddr, mcg->mgid.raw + 12, 4);
		ret = setsockopt(rm->ep.fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP,
				 &mr, sizeof(mr));
	} else {
		struct ipv6_mreq mr = {.ipv6mr_interface = ifindex};

		memcpy(&mr.ipv6mr_multiaddr, mcg->mgid.raw, 16);
		ret = setsockopt(rm->ep.fd, IPPROTO_IPV6,
				 join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP, &mr, sizeof(mr));
	}
	if (!ret) {
		roce_shm_member(rm, join);
		return 0;
	}
	/* cma_igmp_send: an interface that cannot join is ENODEV. */
	return errno == EADDRNOTAVAIL || errno == ENODEV ? -ENODEV : -errno;
}

/* ------------------------------------------------------------------------- */
/* Receive.                                                                  */

struct roce_rx {
	struct roce_rxq q; /* group and steered sockets; q.buf also holds the input's datagrams */
	/* The unicast input: the demultiplexer's header, then the datagram in q.buf. */
	struct mmsghdr uc_msg[UMC_RX_BATCH];
	struct iovec uc_iov[UMC_RX_BATCH][2];
	struct roce_uc_fwd uc_fwd[UMC_RX_BATCH];
	uint64_t uc_cmsg[UMC_RX_BATCH][4]; /* a steered socket handed over (SCM_RIGHTS) */
	int uc_fd[UMC_RX_BATCH];	   /* ... taken from it and recorded (-1: none) */
	/* A group's datagram aimed at a lent receive: headers in q.buf, the rest there. */
	struct iovec land_iov[UMC_RX_BATCH][UMC_MAX_SGE + 2];
};

/* Make receive slots [base, base + n) ready for recvmmsg() again. */
static void roce_rx_reset(struct roce_rx *rx, int base, int n)
{
	roce_rxq_reset(&rx->q, base, n);
	for (int i = base; i < base + n; i++) {
		struct msghdr *mh = &rx->uc_msg[i].msg_hdr;

		mh->msg_control = rx->uc_cmsg[i];
		mh->msg_controllen = sizeof(rx->uc_cmsg[i]);
		mh->msg_flags = 0;
	}
}

static struct roce_rx *roce_rx_get(struct roce_port *rp)
{
	struct roce_rx *rx = rp->rx;

	if (umc_likely(rx))
		return rx;
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return NULL;
	roce_rxq_init(&rx->q);
	for (int i = 0; i < UMC_RX_BATCH; i++) {
		rx->uc_iov[i][0] = (struct iovec){&rx->uc_fwd[i], sizeof(rx->uc_fwd[i])};
		rx->uc_iov[i][1] = (struct iovec){rx->q.buf[i], UMC_RX_SLOT};
		rx->uc_msg[i].msg_hdr.msg_iov = rx->uc_iov[i];
		rx->uc_msg[i].msg_hdr.msg_iovlen = 2;
	}
	roce_rx_reset(rx, 0, UMC_RX_BATCH);
	rp->rx = rx;
	return rx;
}

/*
 * Fill the IP context of a datagram received on endpoint @rm (a group's
 * socket or a steered unicast one) from its name and control messages,
 * and count the socket's drops they report;
 * returns the interface it arrived on (a unicast socket's: the port's).
 */
static unsigned roce_rx_ctx(struct roce_port *rp, struct roce_ep *rm, struct msghdr *mh,
			    struct umc_ip_ctx *ip)
{
	uint32_t drops = rm->ep.sk_drops;
	unsigned ifindex;

	memset(ip, 0, sizeof(*ip));
	/* The socket is bound to the address (IP_PKTINFO, when asked for, says the same) ... */
	umc_gid_to_ip(rm->kind == ROCE_EP_GROUP ? &rm->ep.mcg->mgid : &rm->dst, ip->dst);
	ifindex = umc_ip_ctx_from_msg(mh, ip, &drops);
	umc_rx_sock_drops(&rp->dev, &rm->ep, drops);
	/*
	 * ... and a group's to the interface, unless IP_PKTINFO says where it
	 * arrived.  A unicast address names the port wherever it arrived.
	 */
	return ifindex && rm->kind == ROCE_EP_GROUP ? ifindex : rp->ifindex;
}

/*
 * The QP of this port that sent a datagram from @ip, if any.  Send sockets
 * are bound exclusively, so the source address and port name the sending
 * QP's socket on the host (tx.c); the DETH names the QP.
 */
static struct umc_qp *roce_rx_sender(struct umc_device *dev, const struct umc_ip_ctx *ip,
				     uint32_t src_qpn)
{
	union ibv_gid src;
	struct umc_qp *qp;
	uint16_t sport;
	int gi;

	umc_gid_from_ip(&src, ip->family == 4, ip->src);
	for (gi = 0; gi < dev->gid_count; gi++)
		if (memcmp(&dev->gids[gi], &src, sizeof(src)) == 0)
			break;
	if (gi == dev->gid_count)
		return NULL;
	qp = __umc_qp_by_num(dev, src_qpn);
	if (!qp)
		return NULL;
	sport = atomic_load_explicit(&to_roce_qp(qp)->tx_sport[gi], memory_order_relaxed);
	return sport == ip->sport ? qp : NULL;
}

/*
 * Check the UDP payload @sg (BTH through ICRC) that arrived with IP context
 * @ip on endpoint @rm (its group, if any, and its ICRC memo):
 * decode, ICRC.  Fill @pkt but for where its payload is (at *@off) and
 * return true if it is to be delivered.  Datagrams of the same-host path
 * come here too (shm.c).
 */
UMC_HOT
bool roce_rx_check(struct roce_port *rp, struct roce_ep *rm, const struct umc_sg *sg,
			  struct umc_ip_ctx *ip, struct umc_rx_pkt *pkt, size_t *off)
{
	struct umc_device *dev = &rp->dev;
	size_t plen;
	bool id_solved;
	int ret;

	ret = umc_rocev2_rx_check_sg(ip, sg, &pkt->hdr, off, &plen, &id_solved, &rm->memo);
	if (umc_unlikely(ret)) {
		if (ret == -EILSEQ)
			CNT(dev, rx_bad_icrc);
		else
			CNT(dev, rx_malformed);
		return false;
	}
	if (umc_unlikely(id_solved))
		CNT(dev, rx_icrc_id_solved);
	pkt->len = (uint32_t)plen;
	pkt->mcg = rm->ep.mcg;
	pkt->sender = umc_unlikely(dev->block_self_qps)
			      ? roce_rx_sender(dev, ip, pkt->hdr.deth.src_qpn)
			      : NULL;
	pkt->slid = 0;
	pkt->sl = 0;
	pkt->has_grh = true;
	umc_grh_synth(pkt->grh, ip, sg->len);
	return true;
}

/*
 * Check one datagram of a group's or a steered unicast socket, received
 * into @slot and, when the engine lent one, @land (umc_rx_aim()); fill
 * @pkt and return true if it is to be delivered.
 */
static bool roce_rx_one(struct roce_port *rp, struct roce_ep *rm, struct mmsghdr *m,
			uint8_t *slot, const struct umc_rx_land *land, struct umc_rx_pkt *pkt)
{
	struct umc_device *dev = &rp->dev;
	struct umc_sg sg = {m->msg_hdr.msg_iov, (int)m->msg_hdr.msg_iovlen, m->msg_len};
	struct umc_ip_ctx ip;
	size_t off;

	CNT_RX(dev, rx_packets);
	if (umc_unlikely(m->msg_hdr.msg_flags & MSG_TRUNC)) {
		CNT(dev, rx_too_long);
		return false;
	}
	if (umc_unlikely(roce_rx_ctx(rp, rm, &m->msg_hdr, &ip) != rp->ifindex)) {
		/* Another interface's copy: that interface's device takes it. */
		CNT(dev, rx_other_if);
		return false;
	}
	if (!roce_rx_check(rp, rm, &sg, &ip, pkt, &off))
		return false;
	umc_rx_settle(pkt, slot, ROCE_LAND_HDR, land, sg.len, off);
	return true;
}

/*
 * Check one datagram the demultiplexer passed on; as roce_rx_one.  Its
 * control messages (struct roce_uc_ctl) are acted on, not delivered.
 */
static bool roce_rx_uc_one(struct roce_port *rp, struct roce_ep *rm, struct mmsghdr *m,
			   const struct roce_uc_fwd *f, int fd, struct umc_rx_pkt *pkt)
{
	struct umc_device *dev = &rp->dev;
	struct umc_sg sg = {m->msg_hdr.msg_iov + 1, 1, 0};
	size_t off;
	struct umc_ip_ctx ip = {
		.family = f->family,
		.sport = f->sport,
		.dport = UMC_ROCEV2_UDP_PORT,
		.df = f->family == 4,
		.tclass = f->tclass,
		.hop_limit = f->hop_limit,
		.flow_label = f->flow_label,
	};

	/*
	 * A control message: the one kind that carries a descriptor.  One of
	 * the wrong length, or a descriptor with anything else, is malformed:
	 * counted, and the descriptor closed.  The family byte is read only
	 * where the datagram has one (the slot keeps the last one's); the
	 * message is as long as the slot's header (uc/uc_proto.h).
	 */
	if (umc_unlikely(fd >= 0 || (m->msg_len >= 1 && f->family == ROCE_UC_FWD_CTL))) {
		struct roce_uc_ctl c;

		if (m->msg_len == sizeof(c) && f->family == ROCE_UC_FWD_CTL) {
			memcpy(&c, f, sizeof(c));
			roce_uc_ctl_input(rp, &c, fd);
		} else {
			CNT(dev, rx_malformed);
			umc_fd_close(fd);
		}
		return false;
	}
	CNT_RX(dev, rx_packets);
	if (umc_unlikely(m->msg_hdr.msg_flags & MSG_TRUNC)) {
		CNT(dev, rx_too_long);
		return false;
	}
	if (umc_unlikely(m->msg_len < sizeof(*f) || (f->family != 4 && f->family != 6))) {
		CNT(dev, rx_malformed);
		return false;
	}
	memcpy(ip.src, f->src, sizeof(ip.src));
	memcpy(ip.dst, f->dst, sizeof(ip.dst));
	sg.len = m->msg_len - sizeof(*f);
	if (!roce_rx_check(rp, rm, &sg, &ip, pkt, &off))
		return false;
	umc_rx_settle(pkt, m->msg_hdr.msg_iov[1].iov_base, ROCE_LAND_HDR, NULL, sg.len, off);
	return true;
}

/* recvmmsg(2) of up to @max datagrams of @fd, without waiting. */
static int roce_rx_recv(int fd, struct mmsghdr *msg, int max)
{
	int n;

	do
		n = umc_sys_recvmmsg(fd, msg, (unsigned)max, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	return n;
}

/*
 * roce_rx_recv() of the unicast input, whose control messages carry a
 * descriptor (SCM_RIGHTS): each is taken into @fds[i] (-1: none) and
 * recorded for fork before the registry's lock is let go, so that a fork
 * meanwhile waits, and its child closes them.  Every call in the stretch
 * is raw (roce_take_fd closes the extra descriptors with umc_sys_close).
 */
static int roce_rx_recv_fds(int fd, struct mmsghdr *msg, int max, int *fds)
{
	int n;

	umc_fd_begin_raw();
	n = roce_rx_recv(fd, msg, max);
	for (int i = 0; i < n; i++) {
		fds[i] = umc_unlikely(msg[i].msg_hdr.msg_controllen) ? roce_take_fd(&msg[i].msg_hdr)
								     : -1;
		umc_fd_record(fds[i]);
	}
	umc_fd_end_raw();
	return n;
}

/*
 * Read up to @max datagrams of one socket endpoint @rm into receive slots
 * @base.. (the first lend->n of them landing in @lend's receives) and the
 * packets they give into @pkts; *@used: the slots taken.  Returns the
 * packets; sets *@more when the socket may hold more.
 */
UMC_HOT
static int roce_rx_read(struct roce_port *rp, struct roce_rx *rx, struct roce_ep *rm,
			int base, struct umc_rx_pkt *pkts, int max, int *used, bool *more,
			const struct umc_rx_lend *lend)
{
	struct mmsghdr *msg = (rm->kind == ROCE_EP_UC_INPUT ? rx->uc_msg : rx->q.msg) + base;
	/* Lent only to a group's socket (the one kind with ep.mcg). */
	int lent = lend->n < max ? lend->n : max, n, out = 0;

	for (int i = 0; i < lent; i++) {
		msg[i].msg_hdr.msg_iov = rx->land_iov[i];
		msg[i].msg_hdr.msg_iovlen = umc_rx_aim(rx->land_iov[i], rx->q.buf[base + i],
						       ROCE_LAND_HDR, &lend->land[i]);
	}
	n = rm->kind == ROCE_EP_UC_INPUT ? roce_rx_recv_fds(rm->ep.fd, msg, max, rx->uc_fd + base)
					 : roce_rx_recv(rm->ep.fd, msg, max);
	*used = n > 0 ? n : 0;
	*more |= n == max;
	for (int i = 0; i < n; i++) {
		bool ok = rm->kind == ROCE_EP_UC_INPUT
				  ? roce_rx_uc_one(rp, rm, &msg[i], &rx->uc_fwd[base + i],
						   rx->uc_fd[base + i], &pkts[out])
				  : roce_rx_one(rp, rm, &msg[i], rx->q.buf[base + i],
						i < lent ? &lend->land[i] : NULL, &pkts[out]);

		out += ok;
	}
	/* Only the slots recvmmsg() filled or a land aimed changed: an empty poll costs no reset. */
	for (int i = 0; i < lent; i++) {
		msg[i].msg_hdr.msg_iov = &rx->q.iov[base + i];
		msg[i].msg_hdr.msg_iovlen = 1;
	}
	if (n > 0)
		roce_rx_reset(rx, base, n);
	return out;
}

UMC_HOT
int roce_rx_burst(struct umc_device *dev, struct umc_rx_ep *ep, struct umc_rx_pkt *pkts, int max,
		  bool *more, const struct umc_rx_lend *lend)
{
	struct roce_port *rp = to_roce_port(dev);
	struct roce_ep *rm = container_of(ep, struct roce_ep, ep);
	struct roce_rx *rx = roce_rx_get(rp);
	struct epoll_event ev[4];
	int n, used, slot = 0, out = 0;

	*more = false;
	if (umc_unlikely(!rx))
		return 0;
	if (max > UMC_RX_BATCH)
		max = UMC_RX_BATCH;
	if (rm->kind == ROCE_EP_SHM)
		return roce_shm_rx_burst(rp, rm, rx->q.buf, pkts, max, more, lend);
	if (umc_likely(rm->kind != ROCE_EP_UC_SET))
		return roce_rx_read(rp, rx, rm, 0, pkts, max, &used, more, lend);
	/*
	 * The port's unicast sockets that are ready.  The packets of a burst
	 * point into the receive slots until the next burst, so each read
	 * takes the slots after the previous read's.  Steered endpoints that
	 * the last burst's control messages retired are named by no event
	 * any more: free them.
	 */
	roce_uc_reap(rp);
	n = umc_sys_epoll_poll(ep->fd, ev, 4);
	for (int i = 0; i < n && slot < max; i++) {
		out += roce_rx_read(rp, rx, ev[i].data.ptr, slot, pkts + out, max - slot, &used,
				    more, lend);
		slot += used;
	}
	*more |= n == 4 || slot == max;
	return out;
}
