/* SPDX-License-Identifier: MIT */
/*
 * udp-perf - the raw UDP multicast baseline for umc-perf: the same roles,
 * options, batching and output line, on plain sockets.  What umcast would
 * cost if RoCEv2 were free: the limit of this transport.
 *
 *   sender    one socket bound to -b, IP_MULTICAST_IF on -b's interface,
 *             sendmmsg() of -B datagrams per call; each datagram is 32
 *             bytes standing for the RoCEv2 headers (PERF_ROCE_OVERHEAD:
 *             BTH, DETH, ICRC and 8 more) followed by the -S payload, so
 *             the datagrams are as long as umcast's;
 *   receiver  -q sockets bound to group:port (SO_REUSEADDR, as umcast's
 *             group socket), joined on -b's interface, IP_MULTICAST_ALL
 *             off, the same 4 MiB receive buffer umcast asks for;
 *             recvmmsg() of up to -B datagrams per call straight into a
 *             ring of -d slots (no extra copy: the transport's limit);
 *   ping/pong as umc-perf -L: A is -m, B is -g (default -m plus one);
 *   -G        RoCEv2's datagram shape, what umcast asks of the kernel
 *             beyond the bytes: each receive also takes the source
 *             address and the TTL and TOS (IP_RECVTTL, IP_RECVTOS: the
 *             GRH's fields) and scatters the headers, the payload and the
 *             ICRC over three iovecs; each send gathers three; the
 *             receiving socket is bound to the interface
 *             (SO_BINDTODEVICE), the sending one sends DF and no UDP
 *             checksum (IP_PMTUDISC_DO, SO_NO_CHECK).  The floor for
 *             umcast's kernel share, with none of its user-space work.
 *             On both ends: the payload starts 4 bytes earlier in the
 *             datagram.
 *   -V        -G and the work every RoCEv2 datagram needs in user space,
 *             done with umcast's own codecs (src/wire): the sender
 *             encodes BTH and DETH and computes the ICRC (through a
 *             memo, as umcast's send path does); the receiver checks the
 *             ICRC and decodes the headers (umc_rocev2_rx_check_sg, as
 *             umcast's receive path) and writes the 40-byte GRH in front
 *             of the payload, as a UD receive buffer holds it.  The
 *             datagrams are umcast's, byte for byte in length (BTH, DETH,
 *             payload, ICRC).  The floor for any RoCEv2 implementation on
 *             UDP sockets: none of the verbs' queues, completions or events.
 *             On both ends.
 *
 * Options, roles and output: perf_common.c (the "result ..." line with
 * transport=udp); this file is how raw UDP sends and receives.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf_common.h"
#include "wire/roce.h"
#include "wire/sg.h"

#define HDR PERF_ROCE_OVERHEAD
#define TAIL 4 /* -G: the bytes of HDR that stand for the ICRC, after the payload */
/* -G: room for the two control messages (TTL, TOS) a receive takes */
#define RX_CTL (2 * CMSG_SPACE(sizeof(int)))
#define RX_SOCKBUF (4 << 20) /* umcast's UMC_RX_SOCKBUF */
/* -V: BTH + DETH, the GRH in front of a receive's payload, the ICRC (and pad) */
#define V_HDR (UMC_BTH_LEN + UMC_DETH_LEN)
#define V_GRH 40
#define V_TAIL (3 + UMC_ICRC_LEN)
#define V_QKEY 0x01234567u /* RDMA_UDP_QKEY */
#define V_MCAST_QPN 0xFFFFFFu

static const char prog[] = "udp-perf";
static struct perf_opts o;
static struct in_addr bind_addr, grp_a, grp_b;
static int ifindex;

/* The interface that owns the bind address (lo for 127.0.0.1). */
static int ifindex_of(struct in_addr a)
{
	struct ifaddrs *ifa, *i;
	int idx = 0;

	if (getifaddrs(&ifa))
		perf_die("getifaddrs");
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr) {
			idx = (int)if_nametoindex(i->ifa_name);
			break;
		}
	freeifaddrs(ifa);
	if (!idx) {
		fprintf(stderr, "%s: no interface has %s\n", prog, inet_ntoa(a));
		exit(1);
	}
	return idx;
}

static void setopt(int fd, int level, int name, const void *v, socklen_t len, const char *what)
{
	if (setsockopt(fd, level, name, v, len))
		perf_die(what);
}

/* A sending socket: bound to -b, multicast out of -b's interface only. */
static int tx_socket(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = bind_addr};
	struct ip_mreqn mr = {.imr_address = bind_addr, .imr_ifindex = ifindex};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ttl = 1, one = 1;

	if (fd < 0)
		perf_die("socket");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr), "IP_MULTICAST_IF");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl), "IP_MULTICAST_TTL");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof(one), "IP_MULTICAST_LOOP");
	if (o.roce_shape) {
		int df = IP_PMTUDISC_DO;

		setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &df, sizeof(df), "IP_MTU_DISCOVER");
		setopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one), "SO_NO_CHECK");
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		perf_die("bind");
	return fd;
}

/* A receiving socket for @grp, as umcast's group socket. */
static int rx_socket(struct in_addr grp)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = grp,
				 .sin_port = htons((uint16_t)o.port)};
	struct ip_mreqn mr = {.imr_multiaddr = grp, .imr_address = bind_addr,
			      .imr_ifindex = ifindex};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1, zero = 0, buf = RX_SOCKBUF;

	if (fd < 0)
		perf_die("socket");
	setopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one), "SO_REUSEADDR");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero), "IP_MULTICAST_ALL");
	if (o.roce_shape) {
		char ifname[IF_NAMESIZE];

		if (!if_indextoname((unsigned)ifindex, ifname))
			perf_die("if_indextoname");
		setopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname, (socklen_t)strlen(ifname),
		       "SO_BINDTODEVICE");
		setopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof(one), "IP_RECVTTL");
		setopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one), "IP_RECVTOS");
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		perf_die("bind");
	setopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr), "IP_ADD_MEMBERSHIP");
	return fd;
}

/* ------------------------------------------------------------------------- */

static const uint8_t roce_hdr[HDR]; /* stands for BTH+DETH+ICRC: same datagram size */

struct tx {
	int fd;
	struct sockaddr_in dst;
	struct mmsghdr *msg;
	struct iovec (*iov)[3];
	uint8_t *buf; /* depth slots of size */
	/* -V: per datagram its BTH + DETH and its tail (pad, ICRC); the stream */
	uint8_t (*vhdr)[V_HDR];
	uint8_t (*vtail)[V_TAIL];
	struct umc_ip_ctx ip; /* what the ICRC covers of the IP and UDP headers */
	struct umc_icrc_memo memo;
	uint32_t psn;
};

static void tx_init(struct tx *t, struct in_addr grp, int n)
{
	t->fd = tx_socket();
	t->dst = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr = grp,
				      .sin_port = htons((uint16_t)o.port)};
	/* -c: a connected socket keeps its route (no lookup per datagram). */
	if (o.connected && connect(t->fd, (struct sockaddr *)&t->dst, sizeof(t->dst)))
		perf_die("connect");
	t->msg = calloc(n, sizeof(*t->msg));
	t->iov = calloc(n, sizeof(*t->iov));
	t->buf = calloc(o.depth, o.size ? o.size : 1);
	t->vhdr = calloc(n, sizeof(*t->vhdr));
	t->vtail = calloc(n, sizeof(*t->vtail));
	if (!t->msg || !t->iov || !t->buf || !t->vhdr || !t->vtail)
		perf_die("calloc");
	if (o.roce_work) {
		struct sockaddr_in sa;
		socklen_t len = sizeof(sa);

		if (getsockname(t->fd, (struct sockaddr *)&sa, &len))
			perf_die("getsockname");
		t->ip = (struct umc_ip_ctx){.family = 4, .sport = ntohs(sa.sin_port),
					    .dport = (uint16_t)o.port, .df = true};
		memcpy(t->ip.src, &bind_addr, 4);
		memcpy(t->ip.dst, &grp, 4);
	}
}

/* -V: the BTH PadCnt of a -S payload (to a multiple of 4 bytes). */
static unsigned v_pad(void)
{
	return (4 - o.size % 4) % 4;
}

/*
 * -V: datagram @i as umcast's send path builds it (link/roce/tx.c): BTH and
 * DETH, and the ICRC over them (through the stream's memo), @payload and
 * the pad.
 */
static void v_encode(struct tx *t, int i, uint8_t *payload)
{
	unsigned pad = v_pad();
	struct umc_ud_hdr h = {
		.bth = {.opcode = UMC_OP_UD_SEND_ONLY, .pad_cnt = (uint8_t)pad, .pkey = 0xFFFF,
			.dest_qpn = V_MCAST_QPN, .psn = t->psn++ & 0xFFFFFF},
		.deth = {.qkey = V_QKEY, .src_qpn = 0x11},
	};
	size_t hl = umc_ud_hdr_encode(t->vhdr[i], &h);
	uint32_t crc = umc_icrc_start_memo(&t->memo, &t->ip, hl + o.size + pad + UMC_ICRC_LEN,
					   t->vhdr[i], hl);

	crc = umc_icrc_update(crc, payload, o.size);
	memset(t->vtail[i], 0, pad);
	crc = umc_icrc_update(crc, t->vtail[i], pad);
	umc_icrc_put(t->vtail[i] + pad, umc_icrc_final(crc));
	t->iov[i][0] = (struct iovec){t->vhdr[i], hl};
	t->iov[i][1] = (struct iovec){payload, o.size};
	t->iov[i][2] = (struct iovec){t->vtail[i], pad + UMC_ICRC_LEN};
}

/* Send datagrams [0, n) whose payloads are @bufs: one sendmmsg (looped on partial). */
static void tx_send(struct tx *t, uint8_t **bufs, int n)
{
	int done = 0;

	for (int i = 0; i < n; i++) {
		if (o.roce_work) {
			v_encode(t, i, bufs[i]);
		} else {
			t->iov[i][0] = (struct iovec){(void *)roce_hdr, o.roce_shape ? HDR - TAIL : HDR};
			t->iov[i][1] = (struct iovec){bufs[i], o.size};
			t->iov[i][2] = (struct iovec){(void *)(roce_hdr + HDR - TAIL), TAIL};
		}
		t->msg[i].msg_hdr = (struct msghdr){
			.msg_name = o.connected ? NULL : &t->dst,
			.msg_namelen = o.connected ? 0 : sizeof(t->dst),
			.msg_iov = t->iov[i],
			.msg_iovlen = o.roce_shape ? 3 : 2,
		};
	}
	while (done < n) {
		int k = sendmmsg(t->fd, t->msg + done, (unsigned)(n - done), 0);

		if (k > 0)
			done += k;
		else if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
			perf_die("sendmmsg");
	}
}

struct rx {
	int fd;
	struct in_addr grp;
	struct umc_icrc_memo memo; /* -V: the ICRC prefix of the last datagram */
	struct perf_rx acct;
	uint8_t *buf; /* depth slots of HDR + size (+1 to see truncation); -G: of size */
	uint32_t block, nblocks; /* the ring is used in blocks of -B slots */
	bool used;		 /* the last recvmmsg filled some of the block */
	int got;		 /* -G: what the last recvmmsg filled (its lengths to reset) */
	struct mmsghdr *msg;
	struct iovec *iov;	   /* per datagram 1, or with -G 3: headers, payload, ICRC */
	uint8_t (*hdr)[HDR + 1];   /* -G: the headers' and the ICRC's scratch (+1: truncation) */
	struct sockaddr_in *names; /* -G: the source addresses */
	uint8_t (*ctl)[RX_CTL];	   /* -G: the control messages */
};

/* Where a slot's payload starts: -V leaves room for the GRH in front of it. */
static size_t rx_payload_off(void)
{
	return o.roce_work ? V_GRH : 0;
}

static size_t rx_slot_len(void)
{
	return (o.roce_work ? V_GRH : HDR) + o.size + 1;
}

/* Iovecs per datagram, and the one a datagram's payload lands in. */
static int rx_niov(void)
{
	return o.roce_shape ? 3 : 1;
}

static struct iovec *rx_payload_iov(struct rx *r, int i)
{
	return &r->iov[i * rx_niov() + (o.roce_shape ? 1 : 0)];
}

/* -G: what the kernel overwrites in a datagram's msghdr, set again. */
static void rx_reset_lens(struct rx *r, int i)
{
	r->msg[i].msg_hdr.msg_namelen = sizeof(r->names[i]);
	r->msg[i].msg_hdr.msg_controllen = RX_CTL;
}

static void rx_init(struct rx *r, struct in_addr grp)
{
	int niov = rx_niov();

	r->fd = rx_socket(grp);
	r->grp = grp;
	r->buf = calloc(o.depth, rx_slot_len());
	r->msg = calloc(o.batch, sizeof(*r->msg));
	r->iov = calloc((size_t)o.batch * niov, sizeof(*r->iov));
	r->hdr = calloc(o.batch, sizeof(*r->hdr));
	r->names = calloc(o.batch, sizeof(*r->names));
	r->ctl = calloc(o.batch, sizeof(*r->ctl));
	if (!r->buf || !r->msg || !r->iov || !r->hdr || !r->names || !r->ctl)
		perf_die("calloc");
	r->nblocks = (uint32_t)(o.depth / o.batch);
	for (int i = 0; i < o.batch; i++) {
		struct iovec *v = &r->iov[i * niov];

		r->msg[i].msg_hdr = (struct msghdr){.msg_iov = v, .msg_iovlen = (size_t)niov};
		if (!o.roce_shape) {
			v[0] = (struct iovec){r->buf + (size_t)i * rx_slot_len(), rx_slot_len()};
			continue;
		}
		/* The payload in the ring, the rest beside it, as umcast lands it. */
		size_t hl = o.roce_work ? V_HDR : HDR - TAIL;

		v[0] = (struct iovec){r->hdr[i], hl};
		v[1] = (struct iovec){r->buf + (size_t)i * rx_slot_len() + rx_payload_off(), o.size};
		v[2] = (struct iovec){r->hdr[i] + hl, HDR + 1 - hl};
		r->msg[i].msg_hdr.msg_name = &r->names[i];
		r->msg[i].msg_hdr.msg_control = r->ctl[i];
		rx_reset_lens(r, i);
	}
}

static void tx_free(struct tx *t)
{
	close(t->fd);
	free(t->msg);
	free(t->iov);
	free(t->buf);
	free(t->vhdr);
	free(t->vtail);
}

static void rx_free(struct rx *r)
{
	close(r->fd);
	free(r->buf);
	free(r->msg);
	free(r->iov);
	free(r->hdr);
	free(r->names);
	free(r->ctl);
}

/*
 * -V: check datagram @i as umcast's receive path does (link/roce/rx.c: the
 * IP context from its name and control messages, umc_rocev2_rx_check_sg
 * through the socket's memo, the keys) and write its GRH in front of the
 * payload.  A datagram that fails is a broken measurement: exit.
 */
static void v_check(struct rx *r, int i)
{
	struct msghdr *mh = &r->msg[i].msg_hdr;
	struct umc_sg sg = {mh->msg_iov, (int)mh->msg_iovlen, r->msg[i].msg_len};
	struct umc_ip_ctx ip = {0};
	struct umc_ud_hdr h;
	size_t off, len;
	bool solved;

	memcpy(ip.dst, &r->grp, 4); /* the socket is bound to it */
	umc_ip_ctx_from_msg(mh, &ip, NULL);
	ip.dport = (uint16_t)o.port; /* udp-perf's, not 4791 */
	if (umc_rocev2_rx_check_sg(&ip, &sg, &h, &off, &len, &solved, &r->memo) || solved ||
	    h.bth.pkey != 0xFFFF || h.bth.dest_qpn != V_MCAST_QPN || h.deth.qkey != V_QKEY ||
	    len != o.size) {
		fprintf(stderr, "%s: -V: a datagram failed its RoCEv2 checks\n", prog);
		exit(1);
	}
	umc_grh_synth((uint8_t *)mh->msg_iov[1].iov_base - V_GRH, &ip, r->msg[i].msg_len);
}

/*
 * Receive up to -B datagrams; *@payloads[i] points at each payload.  Returns
 * the count.  The ring advances a block of -B slots after a call that
 * received something, so an empty poll touches nothing but the syscall.
 */
static int rx_burst(struct rx *r, uint8_t **payloads)
{
	int n;

	if (r->used) {
		r->block = (r->block + 1) % r->nblocks;
		for (int i = 0; i < o.batch; i++)
			rx_payload_iov(r, i)->iov_base = r->buf + rx_payload_off() +
							 ((size_t)r->block * o.batch + i) * rx_slot_len();
		for (int i = 0; i < r->got; i++)
			rx_reset_lens(r, i);
		r->used = false;
	}
	n = recvmmsg(r->fd, r->msg, (unsigned)o.batch, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		perf_die("recvmmsg");
	}
	for (int i = 0; i < n; i++) {
		if (o.roce_work)
			v_check(r, i);
		payloads[i] = (uint8_t *)rx_payload_iov(r, i)->iov_base + (o.roce_shape ? 0 : HDR);
	}
	r->used = n > 0;
	r->got = o.roce_shape ? n : 0;
	return n;
}

/* ------------------------------------------------------------------------- */
/* The roles (perf_common.c): sockets and datagrams.                         */

static struct tx tx;	  /* sender, ping, pong */
static struct rx *rxs;	  /* receiver: -q sockets; ping, pong: one */
static int nrx;
static uint8_t **bufs; /* -B payloads */

/* Sender and ping on group A, echo group B; receivers on the other. */
/*
 * -E: the receiving sockets in one epoll set, which -e then sleeps on with
 * poll(2), as a program sleeps on a completion channel's fd (itself an
 * epoll set of the device's sockets): the wake-up goes through the set.
 */
static int epfd = -1;

static void epoll_set_open(void)
{
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		perf_die("epoll_create1");
	for (int q = 0; q < nrx; q++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = rxs[q].fd};

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, rxs[q].fd, &ev))
			perf_die("epoll_ctl");
	}
}

static void udp_open(enum perf_role role)
{
	bool pong = role == PERF_ROLE_PONG;

	/*
	 * A connected socket stamps IPv4 IDs of its own, which the ICRC
	 * covers and a receiver in user space cannot see: its packets would
	 * pass -V's check here and fail rxe's.  umcast cannot connect either.
	 */
	if (o.roce_work && o.connected) {
		fprintf(stderr, "%s: -V and -c: a connected socket's IPv4 IDs are not 0\n", prog);
		exit(2);
	}
	bufs = calloc(o.batch, sizeof(*bufs));
	if (!bufs)
		perf_die("calloc");
	if (role != PERF_ROLE_RECV)
		tx_init(&tx, pong ? grp_b : grp_a, role == PERF_ROLE_PING ? 1 : o.batch);
	if (role != PERF_ROLE_SEND) {
		nrx = role == PERF_ROLE_RECV ? o.qps : 1;
		rxs = calloc(nrx, sizeof(*rxs));
		if (!rxs)
			perf_die("calloc");
		for (int q = 0; q < nrx; q++)
			rx_init(&rxs[q], role == PERF_ROLE_PING ? grp_b : grp_a);
		if (o.epoll_set)
			epoll_set_open();
	}
}

static void udp_close(void)
{
	if (tx.msg)
		tx_free(&tx);
	for (int q = 0; q < nrx; q++)
		rx_free(&rxs[q]);
	if (epfd >= 0)
		close(epfd);
	free(rxs);
	free(bufs);
}

static void udp_send(uint64_t seq, int n)
{
	for (int i = 0; i < n; i++) {
		bufs[i] = tx.buf + (size_t)((seq + i) % o.depth) * o.size;
		perf_put_seq(bufs[i], o.size, seq + i);
	}
	tx_send(&tx, bufs, n);
}

static void udp_send_fin(uint64_t sent)
{
	bufs[0] = tx.buf;
	perf_put_seq(bufs[0], o.size, PERF_FIN | sent);
	tx_send(&tx, bufs, 1);
}

static struct perf_rx *udp_acct(int q)
{
	return &rxs[q].acct;
}

/* The length of the datagrams the sender sends: umcast's with -V, else payload + HDR. */
static size_t dgram_len(void)
{
	return o.roce_work ? V_HDR + o.size + v_pad() + UMC_ICRC_LEN : HDR + o.size;
}

static int udp_recv(int64_t *now)
{
	int got = 0;

	for (int q = 0; q < nrx; q++) {
		struct rx *r = &rxs[q];

		if (r->acct.done)
			continue;
		int n = rx_burst(r, bufs);

		if (!n)
			continue;
		*now = perf_now_ns();
		got += n;
		for (int i = 0; i < n; i++) {
			if (r->msg[i].msg_len != dgram_len())
				continue; /* not ours */
			if (perf_rx_take(&r->acct, perf_get_seq(bufs[i], o.size), *now, o.count))
				break;
		}
	}
	return got;
}

static void udp_queue_name(int q, char *buf, size_t len)
{
	snprintf(buf, len, "socket %d", q);
}

/* The message to time is always the first slot. */
static void udp_ping_prepare(uint64_t seq)
{
	perf_put_seq(tx.buf, o.size, seq);
}

static void udp_ping_send(void)
{
	uint8_t *b = tx.buf;

	tx_send(&tx, &b, 1);
}

/* recvmmsg of up to -B, as umcast's receive engine reads its batch. */
static int udp_ping_recv(uint64_t seq, bool *got)
{
	int n = rx_burst(&rxs[0], bufs);

	for (int k = 0; k < n; k++)
		if (perf_get_seq(bufs[k], o.size) == seq)
			*got = true;
	return n;
}

static int udp_pong(struct perf_echo *e, bool *stop)
{
	int n = rx_burst(&rxs[0], bufs), ns = 0;

	for (int i = 0; i < n; i++) {
		if (perf_get_seq(bufs[i], o.size) & PERF_FIN) {
			*stop = true;
			continue;
		}
		bufs[ns++] = bufs[i]; /* echo straight from the receive buffer */
	}
	if (ns) {
		tx_send(&tx, bufs, ns);
		perf_echoed(e, ns);
	}
	return n;
}

/* -e: sleep until one of the receiving sockets is readable, at most @ms. */
static void udp_wait(int ms)
{
	struct pollfd pfd[PERF_MAX_QPS];

	int n = nrx;

	if (epfd >= 0) {
		pfd[0] = (struct pollfd){.fd = epfd, .events = POLLIN};
		n = 1;
	} else {
		for (int i = 0; i < nrx; i++)
			pfd[i] = (struct pollfd){.fd = rxs[i].fd, .events = POLLIN};
	}
	while (poll(pfd, (nfds_t)n, ms) < 0 && errno == EINTR)
		;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -m group [-s] [options]   (the options of umc-perf, plus -p)\n"
		"  -m addr  group (-L: A, ping->pong)   -g addr  -L: echo group B (default m+1)\n"
		"  -b addr  local address (127.0.0.1)   -p port  UDP port (5791)\n"
		"  -s       sender                      -L ping|pong  latency mode\n"
		"  -S bytes payload (64, at least 8; datagrams are 32 bytes longer, as RoCEv2's)\n"
		"  -n count -D secs -r rate -B batch (32) -d depth (2048) -q sockets\n"
		"  -e       sleep in poll(2) instead of busy-polling\n"
		"  -E       -e, sleeping on an epoll set of the sockets (as on a completion channel)\n"
		"  -c       connect() the sending socket (no route lookup per datagram)\n"
		"  -G       RoCEv2's datagram shape (on both ends: it moves the payload):\n"
		"           source address, TTL and TOS with each receive, three iovecs\n"
		"           per datagram, umcast's socket options\n"
		"  -V       -G and RoCEv2's user-space work, with umcast's codecs (on both\n"
		"           ends): BTH, DETH and ICRC on send; ICRC, decode and GRH on receive\n"
		"  -O file ping: round-trip times (ns, in order)\n"
		"  -w n warm-up   -R fd ready byte   -I idle ms (1000)   -t timeout ms (30000; or -T)\n"
		"  -h, --help this text   --version umcast's version\n",
		prog);
}

static const struct perf_transport udp = {
	.prog = prog,
	.name = "udp",
	/* -o is taken and ignored: a plain UDP sender is never a member. */
	.optstring = "m:g:b:p:scoGVL:S:n:D:r:B:d:q:eEw:R:I:t:T:O:h",
	.size_max = 65000,
	.batch_max = 1024,
	.port = 5791,
	.usage = usage,
	.o = &o,
	.open = udp_open,
	.close = udp_close,
	.send = udp_send,
	.send_fin = udp_send_fin,
	.acct = udp_acct,
	.recv = udp_recv,
	.queue_name = udp_queue_name,
	.ping_prepare = udp_ping_prepare,
	.ping_send = udp_ping_send,
	.ping_recv = udp_ping_recv,
	.pong = udp_pong,
	.wait = udp_wait,
};

int main(int argc, char **argv)
{
	perf_parse_args(&udp, argc, argv);
	bind_addr = perf_parse_v4(o.bind);
	grp_a = perf_parse_v4(o.group);
	if (!IN_MULTICAST(ntohl(grp_a.s_addr))) {
		fprintf(stderr, "%s: %s is not a multicast group\n", prog, o.group);
		exit(2);
	}
	grp_b = o.group2 ? perf_parse_v4(o.group2) : perf_next_group(grp_a);
	ifindex = ifindex_of(bind_addr);
	perf_run(&udp);
	return 0;
}
