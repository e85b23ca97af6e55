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
 *   ping/pong as umc-perf -L: A is -m, B is -g (default -m plus one).
 *
 * Output: the "result ..." line of perf_common.h with transport=udp.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf_common.h"

#define HDR PERF_ROCE_OVERHEAD
#define MAX_QPS 56
#define RX_SOCKBUF (4 << 20) /* umcast's UMC_RX_SOCKBUF */

enum mode { MODE_BW, MODE_PING, MODE_PONG };

static struct {
	const char *group, *group2, *bind;
	int port;
	uint32_t size;
	uint64_t count;
	double duration;
	int qps, batch, depth;
	bool sender, events, connected;
	double rate;
	int ready_fd;
	int idle_ms, timeout_ms;
	enum mode mode;
	uint64_t warmup;
	const char *dump;
} o = {
	.bind = "127.0.0.1",
	.port = 5791,
	.size = 64,
	.qps = 1,
	.batch = 32,
	.depth = 2048,
	.ready_fd = -1,
	.idle_ms = 1000,
	.timeout_ms = 30000,
	.warmup = 1000,
};

static const char *prog = "udp-perf";
static struct in_addr bind_addr, grp_a, grp_b;
static int ifindex;

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static struct in_addr parse_v4(const char *s)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "%s: not an IPv4 address: %s\n", prog, s);
		exit(2);
	}
	return a;
}

/* The interface that owns the bind address (lo for 127.0.0.1). */
static int ifindex_of(struct in_addr a)
{
	struct ifaddrs *ifa, *i;
	int idx = 0;

	if (getifaddrs(&ifa))
		die("getifaddrs");
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
		die(what);
}

/* A sending socket: bound to -b, multicast out of -b's interface only. */
static int tx_socket(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = bind_addr};
	struct ip_mreqn mr = {.imr_address = bind_addr, .imr_ifindex = ifindex};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ttl = 1, one = 1;

	if (fd < 0)
		die("socket");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr), "IP_MULTICAST_IF");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl), "IP_MULTICAST_TTL");
	setopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &one, sizeof(one), "IP_MULTICAST_LOOP");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("bind");
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
		die("socket");
	setopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one), "SO_REUSEADDR");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero), "IP_MULTICAST_ALL");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		die("bind");
	setopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr), "IP_ADD_MEMBERSHIP");
	return fd;
}

/* ------------------------------------------------------------------------- */

static const uint8_t roce_hdr[HDR]; /* stands for BTH+DETH+ICRC: same datagram size */

struct tx {
	int fd;
	struct sockaddr_in dst;
	struct mmsghdr *msg;
	struct iovec (*iov)[2];
	uint8_t *buf; /* depth slots of size */
};

static void tx_init(struct tx *t, struct in_addr grp, int n)
{
	t->fd = tx_socket();
	t->dst = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr = grp,
				      .sin_port = htons((uint16_t)o.port)};
	/* -c: a connected socket keeps its route (no lookup per datagram). */
	if (o.connected && connect(t->fd, (struct sockaddr *)&t->dst, sizeof(t->dst)))
		die("connect");
	t->msg = calloc(n, sizeof(*t->msg));
	t->iov = calloc(n, sizeof(*t->iov));
	t->buf = calloc(o.depth, o.size ? o.size : 1);
	if (!t->msg || !t->iov || !t->buf)
		die("calloc");
}

/* Send datagrams [0, n) whose payloads are @bufs: one sendmmsg (looped on partial). */
static void tx_send(struct tx *t, uint8_t **bufs, int n)
{
	int done = 0;

	for (int i = 0; i < n; i++) {
		t->iov[i][0] = (struct iovec){(void *)roce_hdr, HDR};
		t->iov[i][1] = (struct iovec){bufs[i], o.size};
		t->msg[i].msg_hdr = (struct msghdr){
			.msg_name = o.connected ? NULL : &t->dst,
			.msg_namelen = o.connected ? 0 : sizeof(t->dst),
			.msg_iov = t->iov[i],
			.msg_iovlen = 2,
		};
	}
	while (done < n) {
		int k = sendmmsg(t->fd, t->msg + done, (unsigned)(n - done), 0);

		if (k > 0)
			done += k;
		else if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
			die("sendmmsg");
	}
}

struct rx {
	int fd;
	struct perf_rx acct;
	bool done;
	uint8_t *buf; /* depth slots of HDR + size (+1 to see truncation) */
	uint32_t block, nblocks; /* the ring is used in blocks of -B slots */
	bool used;		 /* the last recvmmsg filled some of the block */
	struct mmsghdr *msg;
	struct iovec *iov;
};

static size_t rx_slot_len(void)
{
	return HDR + o.size + 1;
}

static void rx_init(struct rx *r, struct in_addr grp)
{
	r->fd = rx_socket(grp);
	r->buf = calloc(o.depth, rx_slot_len());
	r->msg = calloc(o.batch, sizeof(*r->msg));
	r->iov = calloc(o.batch, sizeof(*r->iov));
	if (!r->buf || !r->msg || !r->iov)
		die("calloc");
	r->nblocks = (uint32_t)(o.depth / o.batch);
	for (int i = 0; i < o.batch; i++) {
		r->iov[i] = (struct iovec){r->buf + (size_t)i * rx_slot_len(), rx_slot_len()};
		r->msg[i].msg_hdr = (struct msghdr){.msg_iov = &r->iov[i], .msg_iovlen = 1};
	}
}

static void tx_free(struct tx *t)
{
	close(t->fd);
	free(t->msg);
	free(t->iov);
	free(t->buf);
}

static void rx_free(struct rx *r)
{
	close(r->fd);
	free(r->buf);
	free(r->msg);
	free(r->iov);
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
			r->iov[i].iov_base =
				r->buf + ((size_t)r->block * o.batch + i) * rx_slot_len();
		r->used = false;
	}
	n = recvmmsg(r->fd, r->msg, (unsigned)o.batch, MSG_DONTWAIT, NULL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		die("recvmmsg");
	}
	for (int i = 0; i < n; i++)
		payloads[i] = (uint8_t *)r->iov[i].iov_base + HDR;
	r->used = n > 0;
	return n;
}

/* Sleep until one of @rs[0..n) is readable, at most @ms (-e). */
static void rx_wait(struct rx *rs, int n, int ms)
{
	struct pollfd pfd[MAX_QPS];

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){.fd = rs[i].fd, .events = POLLIN};
	while (poll(pfd, (nfds_t)n, ms) < 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------- */

static void run_sender(void)
{
	struct perf_result res = {"udp", "send", o.size, o.batch, 1};
	uint8_t **bufs = calloc(o.batch, sizeof(*bufs));
	struct perf_pace pace;
	uint64_t seq = 0;
	int64_t start, end, stop_at;
	struct tx t;

	if (!bufs)
		die("calloc");
	tx_init(&t, grp_a, o.batch);
	perf_signal_ready(o.ready_fd);
	perf_pace_init(&pace, o.rate);
	start = perf_now_ns();
	stop_at = o.duration > 0 ? start + (int64_t)(o.duration * 1e9) : INT64_MAX;
	for (;;) {
		uint64_t left = o.count ? o.count - seq : UINT64_MAX;
		int nb = left < (uint64_t)o.batch ? (int)left : o.batch;

		if (!nb || perf_now_ns() >= stop_at)
			break;
		perf_pace_wait(&pace, nb);
		for (int i = 0; i < nb; i++) {
			bufs[i] = t.buf + (size_t)((seq + i) % o.depth) * o.size;
			perf_put_seq(bufs[i], o.size, seq + i);
		}
		tx_send(&t, bufs, nb);
		seq += nb;
	}
	end = perf_now_ns();
	for (int64_t now = perf_now_ns(), until = now + PERF_FIN_SPAN_NS; now < until;
	     now = perf_now_ns()) {
		bufs[0] = t.buf;
		perf_put_seq(bufs[0], o.size, PERF_FIN | seq);
		tx_send(&t, bufs, 1);
		while (perf_now_ns() < now + PERF_FIN_GAP_NS)
			;
	}
	perf_print_rate(&res, seq, end - start, 0, false);
	tx_free(&t);
	free(bufs);
}

static void run_receiver(void)
{
	struct perf_result res = {"udp", "recv", o.size, o.batch, o.qps};
	struct rx *rs = calloc(o.qps, sizeof(*rs));
	uint8_t **p = calloc(o.batch, sizeof(*p));
	int64_t start, last = 0, first = INT64_MAX, lastrx = 0;
	uint64_t total = 0, expected = 0;
	int ndone = 0;
	bool got_any = false;

	if (!rs || !p)
		die("calloc");
	for (int i = 0; i < o.qps; i++)
		rx_init(&rs[i], grp_a);
	perf_signal_ready(o.ready_fd);
	start = perf_now_ns();
	while (ndone < o.qps) {
		int got = 0;

		for (int q = 0; q < o.qps; q++) {
			struct rx *r = &rs[q];

			if (r->done)
				continue;
			int n = rx_burst(r, p);

			if (!n)
				continue;
			int64_t now = perf_now_ns();

			got += n;
			last = now;
			got_any = true;
			for (int i = 0; i < n; i++) {
				if (r->msg[i].msg_len != HDR + o.size)
					continue; /* not ours */
				if (perf_rx_account(&r->acct, perf_get_seq(p[i], o.size), now) ||
				    (o.count && r->acct.received >= o.count)) {
					r->done = true;
					ndone++;
					break;
				}
			}
		}
		if (got)
			continue;
		int64_t now = perf_now_ns();

		if (got_any ? now - last > o.idle_ms * 1000000ll
			    : now - start > o.timeout_ms * 1000000ll)
			break;
		if (o.events)
			rx_wait(rs, o.qps, got_any ? o.idle_ms : o.timeout_ms);
	}
	for (int i = 0; i < o.qps; i++) {
		struct perf_rx *a = &rs[i].acct;

		total += a->received;
		expected += perf_rx_expected(a);
		if (a->received) {
			if (a->first_ns < first)
				first = a->first_ns;
			if (a->last_ns > lastrx)
				lastrx = a->last_ns;
		}
		if (o.qps > 1)
			printf("# socket %d: received %llu of %llu\n", i,
			       (unsigned long long)a->received,
			       (unsigned long long)perf_rx_expected(a));
		rx_free(&rs[i]);
	}
	free(rs);
	free(p);
	if (o.count && expected < o.count * (uint64_t)o.qps)
		expected = o.count * (uint64_t)o.qps;
	if (!total)
		fprintf(stderr, "%s: no message received\n", prog);
	perf_print_rate(&res, total, total ? lastrx - first : 0, expected, true);
	if (!total)
		exit(3);
}

static void run_ping(void)
{
	struct perf_result res = {"udp", "ping", o.size, 1, 1};
	uint64_t iters = o.count ? o.count : 10000, lost = 0, n_ok = 0;
	int64_t *samples = malloc(iters * sizeof(*samples));
	uint8_t **p = calloc(o.batch, sizeof(*p));
	struct tx t;
	struct rx r;

	if (!samples || !p)
		die("malloc");
	/* recvmmsg of up to -B, as umcast's receive engine reads its batch. */
	tx_init(&t, grp_a, 1);
	rx_init(&r, grp_b);
	perf_signal_ready(o.ready_fd);
	for (uint64_t i = 0; i < o.warmup + iters; i++) {
		uint8_t *b = t.buf;
		bool got = false;
		int64_t t0;

		perf_put_seq(b, o.size, i);
		t0 = perf_now_ns();
		tx_send(&t, &b, 1);
		while (!got) {
			int n = rx_burst(&r, p);

			for (int k = 0; k < n; k++)
				if (perf_get_seq(p[k], o.size) == i)
					got = true;
			if (!n && perf_now_ns() - t0 > o.idle_ms * 1000000ll)
				break;
		}
		int64_t t1 = perf_now_ns();

		if (!got)
			lost++;
		else if (i >= o.warmup)
			samples[n_ok++] = t1 - t0;
	}
	for (int k = 0; k < 8; k++) {
		uint8_t *b = t.buf;

		perf_put_seq(b, o.size, PERF_FIN | (o.warmup + iters));
		tx_send(&t, &b, 1);
	}
	perf_dump_samples(o.dump, samples, n_ok);
	perf_print_lat(&res, samples, n_ok, lost);
	free(samples);
	free(p);
	tx_free(&t);
	rx_free(&r);
	if (!n_ok)
		exit(3);
}

static void run_pong(void)
{
	struct perf_result res = {"udp", "pong", o.size, 1, 1};
	uint8_t **p = calloc(o.batch, sizeof(*p));
	int64_t start = perf_now_ns(), last = 0, first = 0;
	uint64_t echoed = 0;
	bool stop = false;
	struct tx t;
	struct rx r;

	if (!p)
		die("calloc");
	tx_init(&t, grp_b, o.batch);
	rx_init(&r, grp_a);
	perf_signal_ready(o.ready_fd);
	while (!stop) {
		int n = rx_burst(&r, p), ns = 0;

		for (int i = 0; i < n; i++) {
			if (perf_get_seq(p[i], o.size) & PERF_FIN) {
				stop = true;
				continue;
			}
			p[ns++] = p[i]; /* echo straight from the receive buffer */
		}
		if (ns) {
			tx_send(&t, p, ns);
			last = perf_now_ns();
			if (!echoed)
				first = last;
			echoed += ns;
		}
		if (!n) {
			int64_t now = perf_now_ns();

			if (echoed ? now - last > o.idle_ms * 1000000ll
				   : now - start > o.timeout_ms * 1000000ll)
				break;
			if (o.events)
				rx_wait(&r, 1, echoed ? o.idle_ms : o.timeout_ms);
		}
	}
	perf_print_rate(&res, echoed, last - first, 0, false);
	tx_free(&t);
	rx_free(&r);
	free(p);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s -m group [-s] [options]   (the options of umc-perf, plus -p)\n"
		"  -m addr  group (-L: A, ping->pong)   -g addr  -L: echo group B (default m+1)\n"
		"  -b addr  local address (127.0.0.1)   -p port  UDP port (5791)\n"
		"  -s       sender                      -L ping|pong  latency mode\n"
		"  -S bytes payload (64; datagrams are 32 bytes longer, as RoCEv2's)\n"
		"  -n count -D secs -r rate -B batch (32) -d depth (2048) -q sockets\n"
		"  -e       sleep in poll(2) instead of busy-polling\n"
		"  -c       connect() the sending socket (no route lookup per datagram)\n"
		"  -O file ping: round-trip times (ns, in order)\n"
		"  -w n warm-up   -R fd ready byte   -I idle ms (1000)   -T timeout ms (30000)\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int op;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((op = getopt(argc, argv, "m:g:b:p:scoL:S:n:D:r:B:d:q:ew:R:I:T:O:h")) != -1) {
		switch (op) {
		case 'm': o.group = optarg; break;
		case 'g': o.group2 = optarg; break;
		case 'b': o.bind = optarg; break;
		case 'p': o.port = (int)perf_parse_num(prog, "-p", optarg, 1, 65535); break;
		case 's': o.sender = true; break;
		case 'c': o.connected = true; break;
		case 'o': break; /* a plain UDP sender is never a member */
		case 'L':
			if (!strcmp(optarg, "ping"))
				o.mode = MODE_PING;
			else if (!strcmp(optarg, "pong"))
				o.mode = MODE_PONG;
			else
				usage();
			break;
		case 'S': o.size = (uint32_t)perf_parse_num(prog, "-S", optarg, 0, 65000); break;
		case 'n': o.count = (uint64_t)perf_parse_num(prog, "-n", optarg, 1, 1e15); break;
		case 'D': o.duration = perf_parse_num(prog, "-D", optarg, 0.001, 3600); break;
		case 'r': o.rate = perf_parse_num(prog, "-r", optarg, 1, 1e10); break;
		case 'B': o.batch = (int)perf_parse_num(prog, "-B", optarg, 1, 1024); break;
		case 'd': o.depth = (int)perf_parse_num(prog, "-d", optarg, 1, 16384); break;
		case 'q': o.qps = (int)perf_parse_num(prog, "-q", optarg, 1, MAX_QPS); break;
		case 'e': o.events = true; break;
		case 'O': o.dump = optarg; break;
		case 'w': o.warmup = (uint64_t)perf_parse_num(prog, "-w", optarg, 0, 1e9); break;
		case 'R': o.ready_fd = (int)perf_parse_num(prog, "-R", optarg, 0, INT_MAX); break;
		case 'I': o.idle_ms = (int)perf_parse_num(prog, "-I", optarg, 1, INT_MAX); break;
		case 'T': o.timeout_ms = (int)perf_parse_num(prog, "-T", optarg, 1, INT_MAX); break;
		default: usage();
		}
	}
	if (optind < argc || !o.group)
		usage();
	if (o.batch > o.depth)
		o.batch = o.depth;
	bind_addr = parse_v4(o.bind);
	grp_a = parse_v4(o.group);
	if (!IN_MULTICAST(ntohl(grp_a.s_addr))) {
		fprintf(stderr, "%s: %s is not a multicast group\n", prog, o.group);
		exit(2);
	}
	if (o.group2)
		grp_b = parse_v4(o.group2);
	else
		grp_b.s_addr = htonl(ntohl(grp_a.s_addr) + 1);
	ifindex = ifindex_of(bind_addr);
	if (o.sender && !o.count && !o.duration)
		o.count = 1000000;

	switch (o.mode) {
	case MODE_BW:
		if (o.sender)
			run_sender();
		else
			run_receiver();
		break;
	case MODE_PING:
		run_ping();
		break;
	case MODE_PONG:
		run_pong();
		break;
	}
	return 0;
}
