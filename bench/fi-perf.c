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
 * Messages are -S + 32 bytes, as the raw UDP baseline (perf_common.h).
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
#include <getopt.h>
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
#define MAX_QPS 56
#define FIVER FI_VERSION(1, 17)

enum mode { MODE_BW, MODE_PING, MODE_PONG };

static struct {
	const char *group, *group2, *bind;
	int port;
	uint32_t size;
	uint64_t count;
	double duration;
	int qps, batch, depth;
	bool sender;
	double rate;
	int ready_fd;
	int idle_ms, timeout_ms;
	enum mode mode;
	uint64_t warmup;
	const char *dump;
} o = {
	.bind = "127.0.0.1",
	.port = 6791,
	.size = 64,
	.qps = 1,
	.batch = 32,
	.depth = 2048,
	.ready_fd = -1,
	.idle_ms = 1000,
	.timeout_ms = 30000,
	.warmup = 1000,
};

static const char *prog = "fi-perf";
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

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
	exit(1);
}

static struct sockaddr_in parse_v4(const char *s, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	if (inet_pton(AF_INET, s, &sa.sin_addr) != 1) {
		fprintf(stderr, "%s: not an IPv4 address: %s\n", prog, s);
		exit(2);
	}
	return sa;
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
		die("socket");
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
		die("fi_allocinfo");
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
	bool done;
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
		die("fi_dupinfo");
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
		die("calloc");
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

static void run_sender(void)
{
	struct perf_result res = {"libfabric", "send", o.size, o.batch, 1};
	size_t *k = calloc(o.batch, sizeof(*k)), inflight = 0;
	struct perf_pace pace;
	uint64_t seq = 0;
	int64_t start, end, stop_at;
	struct fep f = {0};

	if (!k)
		die("calloc");
	fep_open(&f, &grp_a, true);
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
			k[i] = (size_t)((seq + i) % o.depth);
			perf_put_seq(fep_slot(&f, k[i]) + HDR, o.size, seq + i);
		}
		send_msgs(&f, k, nb, &inflight);
		seq += nb;
	}
	end = perf_now_ns();
	for (int64_t now = perf_now_ns(), until = now + PERF_FIN_SPAN_NS; now < until;
	     now = perf_now_ns()) {
		k[0] = (size_t)(seq % o.depth);
		perf_put_seq(fep_slot(&f, k[0]) + HDR, o.size, PERF_FIN | seq);
		send_msgs(&f, k, 1, &inflight);
		while (perf_now_ns() < now + PERF_FIN_GAP_NS)
			;
	}
	perf_print_rate(&res, seq, end - start, 0, false);
	fep_close(&f);
	free(k);
}

static void run_receiver(void)
{
	struct perf_result res = {"libfabric", "recv", o.size, o.batch, o.qps};
	struct fep *fs = calloc(o.qps, sizeof(*fs));
	struct fi_cq_msg_entry *e = calloc(o.batch, sizeof(*e));
	int64_t start, last = 0, first = INT64_MAX, lastrx = 0;
	uint64_t total = 0, expected = 0;
	int ndone = 0;
	bool got_any = false;

	if (!fs || !e)
		die("calloc");
	for (int q = 0; q < o.qps; q++) {
		fep_open(&fs[q], &grp_a, false);
		for (int k = 0; k < o.depth; k++)
			post_recv(&fs[q], (size_t)k);
	}
	perf_signal_ready(o.ready_fd);
	start = perf_now_ns();
	while (ndone < o.qps) {
		int got = 0;

		for (int q = 0; q < o.qps; q++) {
			struct fep *f = &fs[q];

			if (f->done)
				continue;
			int n = read_cq(f, e, o.batch);

			if (!n)
				continue;
			int64_t now = perf_now_ns();

			got += n;
			last = now;
			got_any = true;
			for (int i = 0; i < n; i++) {
				size_t k = (size_t)(uintptr_t)e[i].op_context;

				if (e[i].len == HDR + o.size &&
				    (perf_rx_account(&f->acct,
						     perf_get_seq(fep_slot(f, k) + HDR, o.size), now) ||
				     (o.count && f->acct.received >= o.count))) {
					f->done = true;
					ndone++;
					break;
				}
				post_recv(f, k);
			}
		}
		if (got)
			continue;
		int64_t now = perf_now_ns();

		if (got_any ? now - last > o.idle_ms * 1000000ll
			    : now - start > o.timeout_ms * 1000000ll)
			break;
	}
	for (int q = 0; q < o.qps; q++) {
		struct perf_rx *a = &fs[q].acct;

		total += a->received;
		expected += perf_rx_expected(a);
		if (a->received) {
			if (a->first_ns < first)
				first = a->first_ns;
			if (a->last_ns > lastrx)
				lastrx = a->last_ns;
		}
		fep_close(&fs[q]);
	}
	free(fs);
	free(e);
	if (o.count && expected < o.count * (uint64_t)o.qps)
		expected = o.count * (uint64_t)o.qps;
	if (!total)
		fprintf(stderr, "%s: no message received\n", prog);
	perf_print_rate(&res, total, total ? lastrx - first : 0, expected, true);
	if (oversize)
		printf("# oversize=1\n");
	if (!total)
		exit(3);
}

static void run_ping(void)
{
	struct perf_result res = {"libfabric", "ping", o.size, 1, 1};
	uint64_t iters = o.count ? o.count : 10000, lost = 0, n_ok = 0;
	int64_t *samples = malloc(iters * sizeof(*samples));
	struct fi_cq_msg_entry e[8];
	struct fep tx = {0}, rx = {0};
	size_t k0 = 0, inflight = 0;

	if (!samples)
		die("malloc");
	fep_open(&rx, &grp_b, false);
	for (int k = 0; k < o.depth; k++)
		post_recv(&rx, (size_t)k);
	fep_open(&tx, &grp_a, true);
	perf_signal_ready(o.ready_fd);
	for (uint64_t i = 0; i < o.warmup + iters; i++) {
		bool got = false;
		int64_t t0;

		perf_put_seq(fep_slot(&tx, 0) + HDR, o.size, i);
		t0 = perf_now_ns();
		send_msgs(&tx, &k0, 1, &inflight);
		while (!got) {
			int n = read_cq(&rx, e, 8);

			for (int j = 0; j < n; j++) {
				size_t k = (size_t)(uintptr_t)e[j].op_context;

				if (perf_get_seq(fep_slot(&rx, k) + HDR, o.size) == i)
					got = true;
				post_recv(&rx, k);
			}
			if (!n && perf_now_ns() - t0 > o.idle_ms * 1000000ll)
				break;
		}
		int64_t t1 = perf_now_ns();

		if (!got)
			lost++;
		else if (i >= o.warmup)
			samples[n_ok++] = t1 - t0;
	}
	for (int j = 0; j < 8; j++) {
		perf_put_seq(fep_slot(&tx, 0) + HDR, o.size, PERF_FIN | (o.warmup + iters));
		send_msgs(&tx, &k0, 1, &inflight);
	}
	perf_dump_samples(o.dump, samples, n_ok);
	perf_print_lat(&res, samples, n_ok, lost);
	fep_close(&tx);
	fep_close(&rx);
	free(samples);
	if (!n_ok)
		exit(3);
}

static void run_pong(void)
{
	struct perf_result res = {"libfabric", "pong", o.size, 1, 1};
	struct fi_cq_msg_entry e[8];
	struct fep tx = {0}, rx = {0};
	int64_t start, last = 0, first = 0;
	uint64_t echoed = 0;
	size_t inflight = 0, sk = 0;
	bool stop = false;

	fep_open(&rx, &grp_a, false);
	for (int k = 0; k < o.depth; k++)
		post_recv(&rx, (size_t)k);
	fep_open(&tx, &grp_b, true);
	perf_signal_ready(o.ready_fd);
	start = perf_now_ns();
	while (!stop) {
		int n = read_cq(&rx, e, 8);

		for (int j = 0; j < n; j++) {
			size_t k = (size_t)(uintptr_t)e[j].op_context;
			uint8_t *p = fep_slot(&rx, k);

			if (perf_get_seq(p + HDR, o.size) & PERF_FIN) {
				stop = true;
			} else {
				/* fi_send completes when sendto returns: copy into a tx slot. */
				memcpy(fep_slot(&tx, sk), p, o.size + HDR);
				send_msgs(&tx, &sk, 1, &inflight);
				sk = (sk + 1) % (size_t)o.depth;
				last = perf_now_ns();
				if (!echoed)
					first = last;
				echoed++;
			}
			post_recv(&rx, k);
		}
		if (!n) {
			int64_t now = perf_now_ns();

			if (echoed ? now - last > o.idle_ms * 1000000ll
				   : now - start > o.timeout_ms * 1000000ll)
				break;
		}
	}
	perf_print_rate(&res, echoed, last - first, 0, false);
	fep_close(&tx);
	fep_close(&rx);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s -m group [-s] [options]   (the options of umc-perf, plus -p)\n"
		"  -m addr  group (-L: A, ping->pong)   -g addr  -L: echo group B (default m+1)\n"
		"  -b addr  local address (127.0.0.1)   -p port  UDP port (6791)\n"
		"  -s       sender                      -L ping|pong  latency mode\n"
		"  -S bytes payload (64; messages are 32 bytes longer, as RoCEv2's)\n"
		"  -n count -D secs -r rate -B batch (32) -d depth (2048) -q endpoints\n"
		"  -O file ping: round-trip times (ns, in order)\n"
		"  -w n warm-up   -R fd ready byte   -I idle ms (1000)   -T timeout ms (30000)\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	int op;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((op = getopt(argc, argv, "m:g:b:p:soL:S:n:D:r:B:d:q:w:R:I:T:O:h")) != -1) {
		switch (op) {
		case 'm': o.group = optarg; break;
		case 'g': o.group2 = optarg; break;
		case 'b': o.bind = optarg; break;
		case 'p': o.port = (int)perf_parse_num(prog, "-p", optarg, 1, 65535); break;
		case 's': o.sender = true; break;
		case 'o': break; /* the sender's endpoint has no FI_RECV: never a member */
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
		case 'B': o.batch = (int)perf_parse_num(prog, "-B", optarg, 1, 64); break;
		case 'd': o.depth = (int)perf_parse_num(prog, "-d", optarg, 1, 16384); break;
		case 'q': o.qps = (int)perf_parse_num(prog, "-q", optarg, 1, MAX_QPS); break;
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
	if (o.qps > 1) {
		fprintf(stderr, "%s: -q %d: the udp provider binds without SO_REUSEADDR, so only "
			"one endpoint per host can bind group:port\n", prog, o.qps);
		exit(2);
	}
	bind_sa = parse_v4(o.bind, 0);
	grp_a = parse_v4(o.group, o.port);
	if (o.group2) {
		grp_b = parse_v4(o.group2, o.port);
	} else {
		grp_b = grp_a;
		grp_b.sin_addr.s_addr = htonl(ntohl(grp_a.sin_addr.s_addr) + 1);
	}
	if (o.sender && !o.count && !o.duration)
		o.count = 1000000;

	open_fabric();
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
	fi_close(&av->fid);
	fi_close(&eq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return 0;
}
