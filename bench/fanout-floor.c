// SPDX-License-Identifier: MIT
/*
 * fanout-floor - the floor of a same-host fan-out in which every receiver
 * copies each datagram into a receive buffer of its own (issue 36's
 * fanout16_vs_udp_SIZE): what the receivers' CPU can deliver when each
 * does nothing but that copy, and then the RoCEv2 checks too, with no
 * ring protocol, queues, completions, wake-ups or kernel in the way.
 *
 *   (built with the bench tools: bench/CMakeLists.txt)
 *   fanout-floor [-p procs] [-S bytes] [-n datagrams] [-d depth] [-c cpu] [MODE...]
 *
 * A writer (CPU 0) first puts -n RoCEv2 datagrams of -S payload bytes into
 * shared memory, as umcast's send path builds them (BTH, DETH, payload,
 * pad, ICRC: link/roce/tx.c), each on cache lines of its own as a ring's
 * records are.  Then -p reader processes (all on CPU -c, 1 by default:
 * bench/run.sh's receivers) are released together, and each reads every
 * datagram, by mode:
 *   copy    copies it into the next of -d receive buffers (a receive
 *           queue's depth, 2048 as umc-perf's), after room for a GRH;
 *   rocev2  the same, then checks it as umcast's receive path does
 *           (umc_rocev2_rx_check_sg: decode, keys, ICRC through the
 *           memo) and writes the GRH in front (umc_grh_synth).
 * Output, one line per mode: "result transport=floor-MODE size=S procs=P
 * msgs=M secs=T rate=R": R is datagrams delivered per second, all readers
 * together, from their release to the last one's end.
 */
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "umc_param.h"
#include "wire/roce.h"
#include "wire/sg.h"

enum { QKEY = 0x11111111, MCAST_QPN = 0xFFFFFF, GRH = 40, LINE = 64 };

static struct {
	int procs, size, n, depth, cpu;
} o = {16, 1024, 100000, 2048, 1};

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof(s), &s))
		perror("fanout-floor: sched_setaffinity"); /* measured unpinned */
}

/* The IP context both ends see: 127.0.0.1 to 239.1.1.1, port 4791. */
static struct umc_ip_ctx ip_ctx(void)
{
	struct umc_ip_ctx ip = {.family = 4, .sport = 49152, .dport = UMC_ROCEV2_UDP_PORT, .df = true};
	static const uint8_t src[4] = {127, 0, 0, 1}, dst[4] = {239, 1, 1, 1};

	memcpy(ip.src, src, 4);
	memcpy(ip.dst, dst, 4);
	return ip;
}

/*
 * Datagram @psn at @p (room for it): its bytes.  The headers and pad as
 * udp-perf -V's v_encode makes them; it is not timed, so the ICRC in one
 * call over the whole datagram (umc_icrc_compute).
 */
static size_t encode(uint8_t *p, uint32_t psn)
{
	unsigned pad = (4 - (unsigned)o.size % 4) % 4;
	struct umc_ud_hdr h = {
		.bth = {.opcode = UMC_OP_UD_SEND_ONLY, .pad_cnt = (uint8_t)pad, .pkey = 0xFFFF,
			.dest_qpn = MCAST_QPN, .psn = psn & 0xFFFFFF},
		.deth = {.qkey = QKEY, .src_qpn = 0x11},
	};
	struct umc_ip_ctx ip = ip_ctx();
	size_t hl = umc_ud_hdr_encode(p, &h), len = hl + (size_t)o.size + pad + UMC_ICRC_LEN;

	for (int i = 0; i < o.size; i++)
		p[hl + (size_t)i] = (uint8_t)(psn + (uint32_t)i);
	memset(p + hl + o.size, 0, pad);
	umc_icrc_put(p + len - UMC_ICRC_LEN, umc_icrc_compute(&ip, p, len));
	return len;
}

/* One reader: every datagram of @recs (@stride apart, @len bytes) by @mode. */
static int reader(const uint8_t *recs, size_t stride, size_t len, bool check)
{
	size_t bs = (GRH + len + LINE - 1) & ~(size_t)(LINE - 1);
	uint8_t *bufs = aligned_alloc(LINE, bs * (size_t)o.depth);
	struct umc_icrc_memo memo = {0};
	struct umc_ip_ctx ip = ip_ctx();
	unsigned sum = 0;

	if (!bufs)
		return 1;
	memset(bufs, 0, bs * (size_t)o.depth); /* faulted in, as posted buffers are */
	for (int i = 0; i < o.n; i++) {
		uint8_t *b = bufs + (size_t)(i % o.depth) * bs;
		struct iovec iov = {b + GRH, len};
		struct umc_sg sg = {&iov, 1, len};
		struct umc_ud_hdr h;
		size_t off, plen;
		bool solved;

		memcpy(b + GRH, recs + (size_t)i * stride, len);
		if (check) {
			if (umc_rocev2_rx_check_sg(&ip, &sg, &h, &off, &plen, &solved, &memo) || solved ||
			    h.bth.pkey != 0xFFFF || h.bth.dest_qpn != MCAST_QPN ||
			    h.deth.qkey != QKEY || plen != (size_t)o.size)
				return 2;
			umc_grh_synth(b, &ip, len);
		}
		sum += b[GRH + len - 1]; /* the copy is used */
	}
	free(bufs);
	return sum == 0xFFFFFFFFu; /* never: keeps @sum */
}

/* Release -p readers on @recs, wait for them all: seconds, or < 0 on failure. */
static double run(const uint8_t *recs, size_t stride, size_t len, bool check)
{
	int go[2], bad = 0;
	double t0;

	if (pipe(go))
		return -1;
	for (int p = 0; p < o.procs; p++) {
		pid_t pid = fork();
		char c;

		if (pid < 0)
			return -1;
		if (pid == 0) {
			pin(o.cpu);
			close(go[1]);
			if (read(go[0], &c, 1) < 0)
				_exit(3);
			_exit(reader(recs, stride, len, check));
		}
	}
	close(go[0]);
	usleep(100000); /* all forked and waiting on the pipe */
	t0 = now_s();
	close(go[1]); /* EOF: every reader goes */
	for (int p = 0; p < o.procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	return bad ? -1 : now_s() - t0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fanout-floor [-p procs] [-S bytes] [-n datagrams] [-d depth] [-c cpu] "
		   "[copy|rocev2]...\n");
}

int main(int argc, char **argv)
{
	static const char *modes[] = {"copy", "rocev2"};
	size_t stride, len = 0;
	uint8_t *recs;
	int c;

	while ((c = getopt(argc, argv, "p:S:n:d:c:h")) != -1) {
		switch (c) {
		case 'p': o.procs = atoi(optarg); break;
		case 'S': o.size = atoi(optarg); break;
		case 'n': o.n = atoi(optarg); break;
		case 'd': o.depth = atoi(optarg); break;
		case 'c': o.cpu = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o.procs < 1 || o.size < 1 || o.size > 8192 || o.n < 1 || o.depth < 1 || o.cpu < 0) {
		usage(stderr);
		return 2;
	}
	stride = ((size_t)o.size + 64 + 2 * LINE - 1) & ~(size_t)(LINE - 1); /* header + pad + ICRC */
	recs = mmap(NULL, stride * (size_t)o.n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (recs == MAP_FAILED) {
		perror("fanout-floor: mmap");
		return 1;
	}
	pin(0);
	for (int i = 0; i < o.n; i++)
		len = encode(recs + (size_t)i * stride, (uint32_t)i);
	for (int m = 0; m < 2; m++) {
		bool want = optind == argc;
		double secs;

		for (int a = optind; a < argc; a++)
			want |= !strcmp(argv[a], modes[m]);
		if (!want)
			continue;
		secs = run(recs, stride, len, m == 1);
		if (secs <= 0) {
			fprintf(stderr, "fanout-floor: %s: a reader failed (a datagram failed its checks?)\n",
				modes[m]);
			return 1;
		}
		printf("result transport=floor-%s size=%d procs=%d msgs=%d secs=%.6f rate=%.0f\n", modes[m],
		       o.size, o.procs, o.n, secs, (double)o.procs * o.n / secs);
	}
	return 0;
}
