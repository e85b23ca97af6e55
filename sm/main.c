// SPDX-License-Identifier: MIT
/*
 * main.c - umc-sm, the subnet manager of umcast's simulated InfiniBand
 * subnet (umc-sm(8)): one UDP socket, one thread, a poll loop.
 *
 * The loop also serves the control socket RUNDIR/PID.ctl (src/ctl/ctl.h),
 * through which umc-ctl(1) makes umc-sm fail over, go silent, or reject
 * a group's joins (control.c); only umc-sm's user (and root) reach it.
 *
 * Datagrams are read and answered in batches (recvmmsg, sendmmsg of up to
 * BATCH); the handler (handler.c) never blocks.  Reading comes first: what
 * is waiting on the socket is read and handled (up to RX_ROUNDS batches)
 * before the requests that wait (new ports, scanning queries) get a slice
 * of WORK_MS, so a flood of those never keeps a renewal unread for long.
 * Each datagram is handled with the time the kernel received it
 * (SO_TIMESTAMPNS), and leases are expired only up to the time before
 * which everything that arrived has been read: a port never expires
 * because its renewal waited in umc-sm's own backlog.  The loop sleeps
 * until the next datagram, signal or deadline (lease expiry, RMPP resend).
 * SIGTERM and SIGINT arrive on a signalfd and end the loop: everything is
 * freed and umc-sm exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "options.h"
#include "peer.h"
#include "sm.h"
#include "stat/rundir.h"

enum {
	BATCH = 64,
	RX_ROUNDS = 16,		  /* recvmmsg rounds per wakeup before looking at timers again */
	WORK_MS = 2,		  /* then at most this long on requests that wait */
	SOCKBUF = 16 << 20,	  /* socket buffers asked for: ~12 000 requests waiting */
	RX_SLOT = UMC_SM_MAX_MSG + 1, /* one byte more: an oversized datagram is seen as such */
	RX_CTRL = CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(struct in_pktinfo)),
};

/* The daemon's side of the state: where datagrams go, who sent them. */
struct daemon_io {
	struct tx_batch *tx;
	int peer_fd; /* umc_sm_peer_open(), or -1 */
};

struct tx_batch {
	int fd;
	struct umc_sm *sm;
	unsigned n;
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in to[BATCH];
	uint8_t buf[BATCH][UMC_SM_MAX_MSG];
};

static uint64_t ms_of(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000 + (uint64_t)ts->tv_nsec / 1000000;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ms_of(&ts);
}

static void tx_flush(struct tx_batch *b)
{
	unsigned done = 0;
	int n;

	while (done < b->n) {
		n = sendmmsg(b->fd, b->msgs + done, b->n - done, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* a full socket buffer or an unreachable peer: UDP, counted, not retried */
			if (b->sm)
				b->sm->cnt.tx_errors++;
			done++;
			continue;
		}
		done += (unsigned)n;
	}
	b->n = 0;
}

static void tx_send(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len)
{
	struct tx_batch *b = ((struct daemon_io *)ctx)->tx;
	unsigned i = b->n++;

	memcpy(b->buf[i], buf, len);
	b->to[i] = *to;
	b->iov[i].iov_base = b->buf[i];
	b->iov[i].iov_len = len;
	memset(&b->msgs[i], 0, sizeof(b->msgs[i]));
	b->msgs[i].msg_hdr.msg_name = &b->to[i];
	b->msgs[i].msg_hdr.msg_namelen = sizeof(b->to[i]);
	b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
	b->msgs[i].msg_hdr.msg_iovlen = 1;
	if (b->n == BATCH)
		tx_flush(b);
}

static int open_socket(const struct umc_sm_config *cfg, struct sockaddr_in *bound)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), sz = SOCKBUF, on = 1;
	socklen_t len = sizeof(*bound);
	char addr[INET_ADDRSTRLEN];

	if (fd < 0) {
		perror("umc-sm: socket");
		return -1;
	}
	/* Beyond net.core.rmem_max only with CAP_NET_ADMIN; else as far as it allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
	setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
	if (bind(fd, (const struct sockaddr *)&cfg->listen, sizeof(cfg->listen)) ||
	    getsockname(fd, (struct sockaddr *)bound, &len)) {
		inet_ntop(AF_INET, &cfg->listen.sin_addr, addr, sizeof(addr));
		fprintf(stderr, "umc-sm: cannot listen on %s:%u: %s\n", addr,
			ntohs(cfg->listen.sin_port), strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Block SIGTERM and SIGINT for good and read them from a signalfd.  The mask
 * is never restored: a second SIGTERM (timeout(1) sends one to the process
 * and one to its group) may still be pending at exit, and unblocking it
 * would kill umc-sm after its orderly shutdown.
 */
static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void announce(const struct umc_sm *sm, const struct sockaddr_in *bound)
{
	char addr[INET_ADDRSTRLEN], line[128];
	int n;

	inet_ntop(AF_INET, &bound->sin_addr, addr, sizeof(addr));
	n = snprintf(line, sizeof(line), "umc-sm: ready on %s:%u epoch 0x%016llx\n", addr,
		     ntohs(bound->sin_port), (unsigned long long)sm->epoch);
	fputs(line, stdout);
	fflush(stdout);
	if (sm->cfg.ready_fd >= 0) {
		if (write(sm->cfg.ready_fd, line, (size_t)n) != n)
			perror("umc-sm: --ready-fd");
		close(sm->cfg.ready_fd);
	}
}

/*
 * When a datagram arrived, on the monotonic clock: its kernel receive time
 * (CLOCK_REALTIME) moved by @real_to_mono and kept within [@floor, @now],
 * so that arrival times never go back; @now without a timestamp.  Its
 * destination address from IP_PKTINFO, with our @port, into @dst (family
 * 0 without one).
 */
static uint64_t arrival(struct msghdr *mh, int64_t real_to_mono, uint64_t now, uint64_t floor,
			struct sockaddr_in *dst, uint16_t port)
{
	uint64_t t = now;
	struct cmsghdr *c;

	memset(dst, 0, sizeof(*dst));
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;

			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			t = (uint64_t)((int64_t)ms_of(&ts) + real_to_mono);
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			dst->sin_family = AF_INET;
			dst->sin_addr = pi.ipi_addr;
			dst->sin_port = port;
		}
	}
	if (t > now)
		t = now;
	return t < floor ? floor : t;
}

/*
 * Read and handle what is waiting, up to RX_ROUNDS batches.  *@seen
 * becomes the time before which every datagram that arrived has been
 * read: the clock before a read that emptied the socket, else the arrival
 * of the last datagram read.  Returns false when the socket failed for
 * good.
 */
static bool rx_burst(int fd, uint16_t port, struct umc_sm *sm, struct tx_batch *tx,
		     uint64_t *seen)
{
	static uint8_t buf[BATCH][RX_SLOT];
	static uint8_t ctrl[BATCH][RX_CTRL];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in src[BATCH], dst;
	struct timespec real, mono;
	uint64_t before, now, t = *seen;
	int round, n, i;

	for (round = 0; round < RX_ROUNDS; round++) {
		memset(msgs, 0, sizeof(msgs));
		for (i = 0; i < BATCH; i++) {
			iov[i].iov_base = buf[i];
			iov[i].iov_len = RX_SLOT;
			msgs[i].msg_hdr.msg_name = &src[i];
			msgs[i].msg_hdr.msg_namelen = sizeof(src[i]);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_control = ctrl[i];
			msgs[i].msg_hdr.msg_controllen = RX_CTRL;
		}
		before = now_ms();
		n = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
		if (n < 0) {
			if (errno == EAGAIN)
				*seen = before;
			return errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED;
		}
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		now = ms_of(&mono);
		for (i = 0; i < n; i++) {
			t = arrival(&msgs[i].msg_hdr, (int64_t)now - (int64_t)ms_of(&real), now, t,
				    &dst, port);
			if (msgs[i].msg_hdr.msg_namelen != sizeof(src[i]) ||
			    src[i].sin_family != AF_INET) {
				sm->cnt.rx_malformed++;
				continue;
			}
			umc_sm_handle(sm, t, &src[i], dst.sin_family ? &dst : NULL, buf[i],
				      msgs[i].msg_len);
		}
		umc_sm_fwd_flush(sm, now); /* the batch's forwarding changes, one FORWARD each */
		tx_flush(tx);
		*seen = n < BATCH ? before : t;
		if (n < BATCH)
			break;
	}
	return true;
}

static uint64_t peer_source(void *ctx, const struct sockaddr_in *src, const struct sockaddr_in *dst)
{
	return umc_sm_peer_key(((struct daemon_io *)ctx)->peer_fd, src, dst);
}

/*
 * The control socket in the run directory of umc-sm's user, or -1 (said
 * on stderr: umc-sm runs on without one).  Its path goes to @path.
 */
static int open_control(char *path, size_t size)
{
	char dir[UMC_RUNDIR_MAX], why[256];
	int rc = umc_rundir_make(dir, sizeof(dir), why, sizeof(why));

	if (!rc)
		rc = umc_ctl_path(dir, getpid(), path, size);
	if (!rc)
		rc = umc_ctl_listen(path);
	if (rc < 0)
		fprintf(stderr, "umc-sm: no control socket: %s\n", why[0] ? why : strerror(-rc));
	return rc;
}

static void control(void *ctx, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep)
{
	umc_sm_control(ctx, now_ms(), req, rep);
}

static void run(int fd, uint16_t port, int sfd, int cfd, struct umc_sm *sm, struct tx_batch *tx)
{
	struct pollfd pfd[3] = { { .fd = fd, .events = POLLIN }, { .fd = sfd, .events = POLLIN },
				 { .fd = cfd, .events = POLLIN } };
	struct signalfd_siginfo si;
	uint64_t now, next, seen = now_ms(), end, looked;
	bool waiting = false;
	int timeout;

	for (;;) {
		now = now_ms();
		next = umc_sm_tick(sm, now, seen);
		tx_flush(tx);
		if (waiting || next <= now)
			timeout = 0;
		else if (next == UMC_SM_NO_DEADLINE)
			timeout = -1;
		else
			timeout = next - now > INT_MAX ? INT_MAX : (int)(next - now);
		looked = now_ms();
		if (poll(pfd, 3, timeout) < 0 && errno != EINTR) {
			perror("umc-sm: poll");
			return;
		}
		if (pfd[1].revents & POLLIN) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				umc_sm_log(sm, UMC_SM_LOG_INFO, "signal %u: exiting", si.ssi_signo);
			return;
		}
		if (!(pfd[0].revents & POLLIN))
			seen = looked; /* nothing had arrived when poll() looked */
		else if (!rx_burst(fd, port, sm, tx, &seen)) {
			perror("umc-sm: recvmmsg");
			return;
		}
		if (pfd[2].revents & POLLIN)
			umc_ctl_serve(cfd, control, sm);
		end = now_ms() + WORK_MS;
		do
			waiting = umc_sm_work(sm, now_ms());
		while (waiting && now_ms() < end);
		tx_flush(tx);
	}
}

int main(int argc, char **argv)
{
	static struct tx_batch tx;
	struct daemon_io io = { .tx = &tx, .peer_fd = -1 };
	struct umc_sm_config cfg;
	struct umc_sm_out out = { .send = tx_send, .source = peer_source, .ctx = &io };
	struct sockaddr_in bound;
	struct umc_sm *sm;
	char cpath[UMC_RUNDIR_MAX + 32];
	int rc, fd, sfd, cfd;

	umc_sm_config_default(&cfg);
	rc = umc_sm_parse_options(argc, argv, &cfg);
	if (rc)
		return rc == UMC_SM_OPT_EXIT ? 0 : 2;
	fd = open_socket(&cfg, &bound);
	if (fd < 0)
		return 1;
	sfd = open_signals();
	if (sfd < 0) {
		perror("umc-sm: signalfd");
		close(fd);
		return 1;
	}
	tx.fd = fd;
	cfg.listen = bound;
	sm = umc_sm_create(&cfg, &out);
	if (!sm) {
		fprintf(stderr, "umc-sm: out of memory\n");
		close(sfd);
		close(fd);
		return 1;
	}
	tx.sm = sm;
	cfd = open_control(cpath, sizeof(cpath));
	io.peer_fd = umc_sm_peer_open();
	if (io.peer_fd < 0)
		umc_sm_log(sm, UMC_SM_LOG_INFO, "no sock_diag (%s): every local port is of one host",
			   strerror(errno));
	announce(sm, &bound);
	run(fd, bound.sin_port, sfd, cfd, sm, &tx);
	if (cfg.verbose)
		umc_sm_log_counters(sm);
	umc_sm_destroy(sm);
	if (io.peer_fd >= 0)
		close(io.peer_fd);
	if (cfd >= 0) {
		unlink(cpath);
		close(cfd);
	}
	close(sfd);
	close(fd);
	return 0;
}
