/* SPDX-License-Identifier: MIT */
/*
 * fi-perf - the libfabric baseline for umc-perf: the udp provider
 * (FI_EP_DGRAM) with fi_join(), the same roles, options and output line.
 *
 *   sender    an endpoint with FI_SEND | FI_MULTICAST, bound to -b,
 *             fi_join() on group:port; -B messages, each one
 *             fi_sendmsg(FI_MULTICAST) to fi_mc_addr(), then fi_cq_read() of
 *             their completions;
 *   receiver  an endpoint with FI_RECV | FI_MULTICAST, bound with
 *             fi_setname() to group:port, fi_join(); -d fi_recv() posted,
 *             fi_cq_read() of up to -B completions, each buffer reposted;
 *   ping/pong as umc-perf -L: a send endpoint on one group and a receive
 *             endpoint on the other.
 *
 * Messages are -S + 32 bytes, as the raw UDP baseline.  Options, roles and
 * output: perf_common.c; this file is how libfabric sends and receives.
 *
 * What the udp provider of libfabric 1.17 does, and the work-arounds used,
 * all within its documented interface (see bench/README.md):
 *   - fi_join() takes the IPv4 membership with imr_interface INADDR_ANY, so
 *     the kernel picks the interface from the route to the group: with a
 *     default route that is not lo, the join (and its IGMP report) goes out
 *     on another interface.  fi-perf refuses to run unless the group routes
 *     via the loopback interface; bench/run.sh runs in its own network
 *     namespace with 224.0.0.0/4 routed to lo.
 *   - fi_getinfo() returns an info whose src_addr is the interface address
 *     (127.0.0.1), and an endpoint bound there never receives multicast
 *     (the kernel matches the bound address against the group).  fi-perf
 *     clears src_addr and binds with fi_setname() to group:port, which is
 *     also what keeps A and B apart in the latency mode.
 *   - The provider has no multicast-interface or socket-buffer option: the
 *     receive socket keeps the kernel's default buffer (rmem_default).
 *   - fi_cq_read() progresses each endpoint by one recvmsg(); fi_send() is
 *     one sendto().  There is no batched path to use.
 *   - fi_send() to fi_mc_addr() needs an endpoint opened with tx op_flags
 *     FI_MULTICAST (what fabtests' mcast.c does), but 1.17's
 *     ofi_check_tx_attr() refuses that flag (the provider advertises no
 *     op_flags): fi_endpoint() fails with -FI_ENODATA.  fi-perf sends with
 *     fi_sendmsg(..., FI_MULTICAST) instead, which takes the mc address per
 *     operation; it is the same sendmsg() per message as fi_send().
 *   - The provider binds without SO_REUSEADDR, so only one endpoint on the
 *     host can bind group:port: a second receiver process (or -q 2) gets
 *     EADDRINUSE.  Fan-out to several receivers on one host cannot be
 *     measured with it; -q is refused above 1.
 *   - The provider's queues hold at most 1024 entries: -d is capped there.
 *   - max_msg_size is 1472: larger messages are sent anyway (the provider
 *     does not check) and a "# oversize" line says so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "perf_common.h"

#define HDR PERF_ROCE_OVERHEAD
#define FIVER FI_VERSION(1, 17)

static const char prog[] = "fi-perf";
static struct perf_opts o;
static struct sockaddr_in bind_sa, grp_a, grp_b;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_av *av;
static struct fi_info *info;
static bool oversize;

#define CHK(call)                                                                   \
	do {                                                                        \
		int _r = (int)(call);                                               \
		if (_r) {                                                           \
			fprintf(stderr, "%s: %s: %s (%d)\n", prog, #call,           \
				fi_strerror(-_r), _r);                              \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

/* group:@port, or the bind address with @port 0. */
static struct sockaddr_in sockaddr_v4(struct in_addr a, int port)
{
	return (struct sockaddr_in){.sin_family = AF_INET, .sin_addr = a,
				    .sin_port = htons((uint16_t)port)};
}

/*
 * The provider joins on whatever interface the route to the group names.
 * Refuse anything but loopback: the source address the kernel picks for
 * the group must be a loopback address.
 */
static void check_route(const struct sockaddr_in *grp)
{
	struct sockaddr_in src;
	socklen_t len = sizeof(src);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		perf_die("socket");
	if (connect(fd, (const struct sockaddr *)grp, sizeof(*grp)) ||
	    getsockname(fd, (struct sockaddr *)&src, &len)) {
		fprintf(stderr, "%s: no route to %s (%s): the udp provider joins on the "
			"route's interface; route 224.0.0.0/4 via lo (bench/run.sh runs in a "
			"network namespace that does)\n",
			prog, inet_ntoa(grp->sin_addr), strerror(errno));
		exit(5);
	}
	close(fd);
	if ((ntohl(src.sin_addr.s_addr) >> 24) != 127) {
		char g[INET_ADDRSTRLEN], s[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &grp->sin_addr, g, sizeof(g));
		inet_ntop(AF_INET, &src.sin_addr, s, sizeof(s));
		fprintf(stderr, "%s: %s routes from %s, not loopback: the udp provider's "
			"fi_join would join (and send IGMP) on that interface.  Refusing; run in a "
			"network namespace with 224.0.0.0/4 routed to lo (bench/run.sh does).\n",
			prog, g, s);
		exit(5);
	}
}

static void open_fabric(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eqa = {.wait_obj = FI_WAIT_UNSPEC};
	struct fi_av_attr ava = {.type = FI_AV_UNSPEC};

	if (!hints)
		perf_die("fi_allocinfo");
	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG | FI_MULTICAST | FI_SEND | FI_RECV;
	hints->mode = FI_CONTEXT;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("udp");
	CHK(fi_getinfo(FIVER, o.bind, NULL, FI_SOURCE, hints, &info));
	/* The provider's queues hold at most 1024 entries (rx_attr/tx_attr size). */
	if ((size_t)o.depth > info->rx_attr->size || (size_t)o.depth > info->tx_attr->size) {
		o.depth = (int)(info->rx_attr->size < info->tx_attr->size ? info->rx_attr->size
									    : info->tx_attr->size);
		printf("# libfabric udp: queue depth limited to %d by the provider\n", o.depth);
		if (o.batch > o.depth)
			o.batch = o.depth;
	}
	if (o.size + HDR > info->ep_attr->max_msg_size) {
		oversize = true;
		printf("# libfabric udp: %u-byte messages are above its max_msg_size %zu; "
		       "sent anyway (the provider does not check)\n",
		       o.size + HDR, info->ep_attr->max_msg_size);
	}
	/* We bind ourselves (fi_setname): an endpoint bound to the interface
	 * address never receives multicast. */
	free(info->src_addr);
	info->src_addr = NULL;
	info->src_addrlen = 0;
	fi_freeinfo(hints);
	CHK(fi_fabric(info->fabric_attr, &fabric, NULL));
	CHK(fi_domain(fabric, info, &domain, NULL));
	CHK(fi_eq_open(fabric, &eqa, &eq, NULL));
	CHK(fi_av_open(domain, &ava, &av, NULL));
}

struct fep {
	struct fid_ep *ep;
	struct fid_cq *cq; /* tx or rx, one direction per endpoint */
	struct fid_mc *mc;
	fi_addr_t mc_addr;
	struct perf_rx acct;
	uint8_t *buf; /* depth slots */
	size_t slot;
};

/* An endpoint that sends to (@send) or receives from @grp, joined to it. */
static void fep_open(struct fep *f, const struct sockaddr_in *grp, bool send)
{
	struct fi_info *i = fi_dupinfo(info);
	struct fi_cq_attr cqa = {
		.size = (size_t)o.depth + 64,
		.format = send ? FI_CQ_FORMAT_CONTEXT : FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_NONE,
	};
	struct fi_eq_entry entry;
	uint32_t event;
	ssize_t rd;

	if (!i)
		perf_die("fi_dupinfo");
	check_route(grp);
	i->caps = FI_MSG | FI_MULTICAST | (send ? FI_SEND : FI_RECV);
	CHK(fi_endpoint(domain, i, &f->ep, NULL));
	CHK(fi_cq_open(domain, &cqa, &f->cq, NULL));
	CHK(fi_ep_bind(f->ep, &av->fid, 0));
	CHK(fi_ep_bind(f->ep, &eq->fid, 0));
	CHK(fi_ep_bind(f->ep, &f->cq->fid, send ? FI_TRANSMIT : FI_RECV));
	if (send)
		CHK(fi_setname(&f->ep->fid, &bind_sa, sizeof(bind_sa)));
	else
		CHK(fi_setname(&f->ep->fid, (void *)grp, sizeof(*grp)));
	CHK(fi_enable(f->ep));
	CHK(fi_join(f->ep, grp, 0, &f->mc, f));
	rd = fi_eq_sread(eq, &event, &entry, sizeof(entry), o.timeout_ms, 0);
	if (rd != sizeof(entry) || event != FI_JOIN_COMPLETE || entry.fid != &f->mc->fid) {
		fprintf(stderr, "%s: fi_join: no FI_JOIN_COMPLETE (%zd: %s)\n", prog, rd,
			rd < 0 ? fi_strerror((int)-rd) : "unexpected event");
		exit(1);
	}
	f->mc_addr = fi_mc_addr(f->mc);
	f->slot = send ? o.size + HDR : o.size + HDR + 1;
	f->buf = calloc(o.depth, f->slot);
	if (!f->buf)
		perf_die("calloc");
	fi_freeinfo(i);
}

static void fep_close(struct fep *f)
{
	fi_close(&f->mc->fid);
	fi_close(&f->ep->fid);
	fi_close(&f->cq->fid);
	free(f->buf);
}

static uint8_t *fep_slot(struct fep *f, size_t k)
{
	return f->buf + k * f->slot;
}

static void post_recv(struct fep *f, size_t k)
{
	ssize_t r;

	while ((r = fi_recv(f->ep, fep_slot(f, k), f->slot, NULL, FI_ADDR_UNSPEC,
			    (void *)(uintptr_t)k)) == -FI_EAGAIN)
		;
	if (r)
		CHK(r);
}

/* Read up to @n completions; returns the count (0 when none). */
static int read_cq(struct fep *f, struct fi_cq_msg_entry *e, int n)
{
	ssize_t r = fi_cq_read(f->cq, e, (size_t)n);

	if (r == -FI_EAGAIN)
		return 0;
	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		fi_cq_readerr(f->cq, &err, 0);
		fprintf(stderr, "%s: completion error: %s\n", prog, fi_strerror(err.err));
		exit(1);
	}
	if (r < 0)
		CHK(r);
	return (int)r;
}

/* Send the messages in slots @k[0..n): fi_send each, then take their completions. */
static void send_msgs(struct fep *f, const size_t *k, int n, size_t *inflight)
{
	void *ctx[64];

	for (int i = 0; i < n; i++) {
		struct iovec iov = {fep_slot(f, k[i]), o.size + HDR};
		struct fi_msg msg = {.msg_iov = &iov, .iov_count = 1, .addr = f->mc_addr};
		ssize_t r;

		while ((r = fi_sendmsg(f->ep, &msg, FI_MULTICAST)) == -FI_EAGAIN) {
			int c = read_cq(f, (struct fi_cq_msg_entry *)ctx, 8);

			*inflight -= (size_t)c;
		}
		if (r)
			CHK(r);
		(*inflight)++;
	}
	for (;;) {
		int c = fi_cq_read(f->cq, ctx, 64);

		if (c <= 0)
			break;
		*inflight -= (size_t)c;
	}
}

/* ------------------------------------------------------------------------- */
/* The roles (perf_common.c): endpoints and messages.                        */

static struct fep tx;	   /* sender, ping, pong */
static struct fep *rxs;	   /* receiver: -q (1) endpoints; ping, pong: one */
static int nrx;
static struct fi_cq_msg_entry *cqe; /* receive completions: cq_n per read */
static int cq_n;
static size_t *slots; /* sender: -B slots to send */
static size_t inflight, echo_slot;

/* Sender and ping on group A, echo group B; receivers on the other.  The
 * receive endpoint first, its receives posted, then the sending one. */
static void lf_open(enum perf_role role)
{
	slots = calloc(o.batch, sizeof(*slots));
	cq_n = role == PERF_ROLE_RECV ? o.batch : 8;
	cqe = calloc(cq_n, sizeof(*cqe));
	if (!slots || !cqe)
		perf_die("calloc");
	if (role != PERF_ROLE_SEND) {
		nrx = role == PERF_ROLE_RECV ? o.qps : 1;
		rxs = calloc(nrx, sizeof(*rxs));
		if (!rxs)
			perf_die("calloc");
		for (int q = 0; q < nrx; q++) {
			fep_open(&rxs[q], role == PERF_ROLE_PING ? &grp_b : &grp_a, false);
			for (int k = 0; k < o.depth; k++)
				post_recv(&rxs[q], (size_t)k);
		}
	}
	if (role != PERF_ROLE_RECV)
		fep_open(&tx, role == PERF_ROLE_PONG ? &grp_b : &grp_a, true);
}

static void lf_close(void)
{
	if (tx.ep)
		fep_close(&tx);
	for (int q = 0; q < nrx; q++)
		fep_close(&rxs[q]);
	free(rxs);
	free(cqe);
	free(slots);
}

static void lf_send(uint64_t seq, int n)
{
	for (int i = 0; i < n; i++) {
		slots[i] = (size_t)((seq + i) % o.depth);
		perf_put_seq(fep_slot(&tx, slots[i]) + HDR, o.size, seq + i);
	}
	send_msgs(&tx, slots, n, &inflight);
}

static void lf_send_fin(uint64_t sent)
{
	slots[0] = (size_t)(sent % o.depth);
	perf_put_seq(fep_slot(&tx, slots[0]) + HDR, o.size, PERF_FIN | sent);
	send_msgs(&tx, slots, 1, &inflight);
}

static struct perf_rx *lf_acct(int q)
{
	return &rxs[q].acct;
}

static int lf_recv(int64_t *now)
{
	int got = 0;

	for (int q = 0; q < nrx; q++) {
		struct fep *f = &rxs[q];

		if (f->acct.done)
			continue;
		int n = read_cq(f, cqe, cq_n);

		if (!n)
			continue;
		*now = perf_now_ns();
		got += n;
		for (int i = 0; i < n; i++) {
			size_t k = (size_t)(uintptr_t)cqe[i].op_context;

			if (cqe[i].len == HDR + o.size &&
			    perf_rx_take(&f->acct, perf_get_seq(fep_slot(f, k) + HDR, o.size), *now,
					 o.count))
				break;
			post_recv(f, k);
		}
	}
	return got;
}

static void lf_recv_end(void)
{
	if (oversize)
		printf("# oversize=1\n");
}

/* The message to time is always the first slot. */
static void lf_ping_prepare(uint64_t seq)
{
	perf_put_seq(fep_slot(&tx, 0) + HDR, o.size, seq);
}

static void lf_ping_send(void)
{
	size_t k0 = 0;

	send_msgs(&tx, &k0, 1, &inflight);
}

static int lf_ping_recv(uint64_t seq, bool *got)
{
	int n = read_cq(&rxs[0], cqe, cq_n);

	for (int j = 0; j < n; j++) {
		size_t k = (size_t)(uintptr_t)cqe[j].op_context;

		if (perf_get_seq(fep_slot(&rxs[0], k) + HDR, o.size) == seq)
			*got = true;
		post_recv(&rxs[0], k);
	}
	return n;
}

static int lf_pong(struct perf_echo *e, bool *stop)
{
	struct fep *rx = &rxs[0];
	int n = read_cq(rx, cqe, cq_n);

	for (int j = 0; j < n; j++) {
		size_t k = (size_t)(uintptr_t)cqe[j].op_context;
		uint8_t *p = fep_slot(rx, k);

		if (perf_get_seq(p + HDR, o.size) & PERF_FIN) {
			*stop = true;
		} else {
			/* fi_send completes when sendto returns: copy into a tx slot. */
			memcpy(fep_slot(&tx, echo_slot), p, o.size + HDR);
			send_msgs(&tx, &echo_slot, 1, &inflight);
			echo_slot = (echo_slot + 1) % (size_t)o.depth;
			perf_echoed(e, 1);
		}
		post_recv(rx, k);
	}
	return n;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: %s -m group [-s] [options]   (the options of umc-perf, plus -p)\n"
		"  -m addr  group (-L: A, ping->pong)   -g addr  -L: echo group B (default m+1)\n"
		"  -b addr  local address (127.0.0.1)   -p port  UDP port (6791)\n"
		"  -s       sender                      -L ping|pong  latency mode\n"
		"  -S bytes payload (64; messages are 32 bytes longer, as RoCEv2's)\n"
		"  -n count -D secs -r rate -B batch (32) -d depth (2048) -q endpoints\n"
		"  -O file ping: round-trip times (ns, in order)\n"
		"  -w n warm-up   -R fd ready byte   -I idle ms (1000)   -t timeout ms (30000; or -T)\n"
		"  -h, --help this text   --version umcast's version\n",
		prog);
}

static const struct perf_transport libfabric = {
	.prog = prog,
	.name = "libfabric",
	/* -o is taken and ignored: the sender's endpoint has no FI_RECV, so it
	 * is never a member.  No -e: the endpoints have no wait object. */
	.optstring = "m:g:b:p:soL:S:n:D:r:B:d:q:w:R:I:t:T:O:h",
	.size_max = 65000,
	.batch_max = 64,
	.port = 6791,
	.usage = usage,
	.o = &o,
	.open = lf_open,
	.close = lf_close,
	.send = lf_send,
	.send_fin = lf_send_fin,
	.acct = lf_acct,
	.recv = lf_recv,
	.recv_end = lf_recv_end,
	.ping_prepare = lf_ping_prepare,
	.ping_send = lf_ping_send,
	.ping_recv = lf_ping_recv,
	.pong = lf_pong,
};

int main(int argc, char **argv)
{
	perf_parse_args(&libfabric, argc, argv);
	if (o.qps > 1) {
		fprintf(stderr, "%s: -q %d: the udp provider binds without SO_REUSEADDR, so only "
			"one endpoint per host can bind group:port\n", prog, o.qps);
		exit(2);
	}
	bind_sa = sockaddr_v4(perf_parse_v4(o.bind), 0);
	grp_a = sockaddr_v4(perf_parse_v4(o.group), o.port);
	grp_b = sockaddr_v4(o.group2 ? perf_parse_v4(o.group2) : perf_next_group(grp_a.sin_addr),
			    o.port);
	open_fabric();
	perf_run(&libfabric);
	fi_close(&av->fid);
	fi_close(&eq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}
