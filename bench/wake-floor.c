// SPDX-License-Identifier: MIT
/*
 * wake-floor - the floor of an event-driven round trip between two
 * processes of one host: how long a ping-pong takes when both ends sleep
 * until the other's message wakes them, by each way a process can be
 * woken, with no RDMA and no library in the way (issue 36's
 * local_evlat_p50_vs_udp_64).
 *
 *   (built with the bench tools: bench/CMakeLists.txt)
 *   wake-floor [-n round trips] [-w warm-up] [-P cpu] [MODE...]
 *
 * Modes (all by default, in turn, in one run):
 *   udp      raw UDP multicast on lo, ping on group A, pong on group B,
 *            64-byte datagrams, each end asleep in poll(2) on its socket:
 *            udp-perf -L -e's shape, the baseline;
 *   fifo     a FIFO each way (what the same-host path wakes a reader
 *            with), one byte, each end asleep in poll(2) on its read end;
 *   eventfd  an eventfd(2) each way, asleep in poll(2): the cheapest fd
 *            to wake, but it cannot be opened by path, so another process
 *            can get it only through a socket (SCM_RIGHTS) or pidfd_getfd;
 *   futex    a word of shared memory each way, asleep in futex(2)
 *            FUTEX_WAIT: no fd at all, so no completion channel, which a
 *            program polls as an fd (ibv_get_cq_event(3)), can be one.
 * The ping end runs on CPU 0, the pong end on CPU 1 (bench/run.sh's
 * layout; -P 0: on CPU 0 too, where a wake-up is a switch of tasks on
 * the same CPU, without an interprocessor interrupt nor an idle CPU to
 * wake).  Output: one line per mode, "wake MODE p50_us=.. p99_us=..".
 * UDP needs 224.0.0.0/4 routed to lo (bench/netns.sh's namespace).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { PORT = 4792, MSG = 64 };

/* One direction: how its receiver sleeps and its sender wakes it. */
struct way {
	int rfd, wfd;		/* fifo, eventfd, udp: poll(rfd), write(wfd) */
	struct sockaddr_in dst; /* udp: the group */
	_Atomic uint32_t *word; /* futex */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s); /* one CPU: nothing to pin to, fine */
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Sleep until @w's sender wakes this end, then take its message. */
static void wait_for(const char *mode, struct way *w, uint32_t *expect)
{
	char buf[MSG];

	if (!strcmp(mode, "futex")) {
		while (atomic_load(w->word) != *expect)
			syscall(SYS_futex, w->word, FUTEX_WAIT, *expect - 1, NULL, NULL, 0);
		++*expect;
		return;
	}
	struct pollfd p = {.fd = w->rfd, .events = POLLIN};

	while (poll(&p, 1, 10000) < 0 && errno == EINTR)
		;
	if (!(p.revents & POLLIN)) {
		fprintf(stderr, "wake-floor %s: no wake-up within 10 s\n", mode);
		exit(1);
	}
	if (read(w->rfd, buf, !strcmp(mode, "eventfd") ? 8 : sizeof(buf)) <= 0)
		die("read");
}

/* Wake @w's receiver. */
static void wake(const char *mode, struct way *w)
{
	static char buf[MSG];
	uint64_t one = 1;

	if (!strcmp(mode, "futex")) {
		atomic_fetch_add(w->word, 1);
		syscall(SYS_futex, w->word, FUTEX_WAKE, 1, NULL, NULL, 0);
	} else if (!strcmp(mode, "udp")) {
		if (sendto(w->wfd, buf, sizeof(buf), 0, (struct sockaddr *)&w->dst,
			   sizeof(w->dst)) < 0)
			die("sendto");
	} else if (write(w->wfd, !strcmp(mode, "eventfd") ? (void *)&one : buf,
			 !strcmp(mode, "eventfd") ? 8 : 1) < 0) {
		die("write");
	}
}

/* A UDP socket receiving group @grp on lo, and one sending to it. */
static void udp_way(struct way *w, const char *grp)
{
	struct ip_mreqn mr = {.imr_address.s_addr = htonl(INADDR_LOOPBACK)};
	struct in_addr lo = {htonl(INADDR_LOOPBACK)};
	int on = 1;

	w->dst = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(PORT)};
	inet_pton(AF_INET, grp, &w->dst.sin_addr);
	mr.imr_multiaddr = w->dst.sin_addr;
	w->rfd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	w->wfd = socket(AF_INET, SOCK_DGRAM, 0);
	if (w->rfd < 0 || w->wfd < 0 ||
	    setsockopt(w->rfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) ||
	    bind(w->rfd, (struct sockaddr *)&w->dst, sizeof(w->dst)) ||
	    setsockopt(w->rfd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) ||
	    setsockopt(w->wfd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo)))
		die("udp socket (is 224.0.0.0/4 routed to lo?)");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int pong_cpu = 1;

static void run(const char *mode, int n, int warm)
{
	struct way ab, ba; /* ping -> pong, pong -> ping */
	uint64_t *rtt = calloc((size_t)n, sizeof(*rtt));
	char dir[] = "/tmp/wake-floor.XXXXXX", pa[64], pb[64];
	uint32_t expect = 1;
	pid_t pong;
	int st;

	if (!rtt)
		die("calloc");
	memset(&ab, 0, sizeof(ab));
	memset(&ba, 0, sizeof(ba));
	if (!strcmp(mode, "udp")) {
		udp_way(&ab, "239.10.42.1");
		udp_way(&ba, "239.10.42.2");
	} else if (!strcmp(mode, "fifo")) {
		if (!mkdtemp(dir))
			die("mkdtemp");
		snprintf(pa, sizeof(pa), "%s/a", dir);
		snprintf(pb, sizeof(pb), "%s/b", dir);
		if (mkfifo(pa, 0600) || mkfifo(pb, 0600))
			die("mkfifo");
		/* Read-write opens: neither end blocks in open(2) for the other. */
		ab.rfd = ab.wfd = open(pa, O_RDWR | O_NONBLOCK);
		ba.rfd = ba.wfd = open(pb, O_RDWR | O_NONBLOCK);
		unlink(pa);
		unlink(pb);
		rmdir(dir);
	} else if (!strcmp(mode, "eventfd")) {
		ab.rfd = ab.wfd = eventfd(0, EFD_NONBLOCK);
		ba.rfd = ba.wfd = eventfd(0, EFD_NONBLOCK);
	} else if (!strcmp(mode, "futex")) {
		_Atomic uint32_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			die("mmap");
		ab.word = m;
		ba.word = m + 16; /* another cache line */
	} else {
		fprintf(stderr, "wake-floor: unknown mode %s\n", mode);
		exit(2);
	}
	if (!strcmp(mode, "fifo") || !strcmp(mode, "eventfd"))
		if (ab.rfd < 0 || ba.rfd < 0)
			die(mode);
	pong = fork();
	if (pong < 0)
		die("fork");
	if (pong == 0) {
		pin(pong_cpu);
		for (int i = 0; i < n + warm; i++) {
			wait_for(mode, &ab, &expect);
			wake(mode, &ba);
		}
		_exit(0);
	}
	pin(0);
	for (int i = 0; i < n + warm; i++) {
		uint64_t t0 = now_ns();

		wake(mode, &ab);
		wait_for(mode, &ba, &expect);
		if (i >= warm)
			rtt[i - warm] = now_ns() - t0;
	}
	waitpid(pong, &st, 0);
	qsort(rtt, (size_t)n, sizeof(*rtt), cmp_u64);
	printf("wake %s p50_us=%.2f p99_us=%.2f n=%d\n", mode, rtt[n / 2] / 1e3,
	       rtt[(size_t)n * 99 / 100] / 1e3, n);
	fflush(stdout);
	free(rtt);
}

int main(int argc, char **argv)
{
	static const char *all[] = {"udp", "fifo", "eventfd", "futex"};
	int n = 20000, warm = 1000, c;

	while ((c = getopt(argc, argv, "n:w:P:h")) != -1) {
		switch (c) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'w':
			warm = atoi(optarg);
			break;
		case 'P':
			pong_cpu = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: wake-floor [-n round trips] [-w warm-up] "
					"[-P cpu] [udp|fifo|eventfd|futex...]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (n < 1 || warm < 0)
		return 2;
	if (optind == argc)
		for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++)
			run(all[i], n, warm);
	for (int i = optind; i < argc; i++)
		run(argv[i], n, warm);
	return 0;
}
