// SPDX-License-Identifier: MIT
/*
 * join-storm - InfiniBand ports that all join at once, against a running
 * umc-sm (bench/join-storm.sh runs it; issue 36 "join storms", issue 32
 * defect 6).
 *
 *   join-storm [-S ADDR:PORT] -m procs|ports -n PORTS [-g GROUPS] [-o] [-f NOFILE]
 *              [-t SECONDS]
 *
 * -m procs   PORTS processes, forked from this one before it touches the
 *            library, each an application on a umc_ib0 port of its own:
 *            an event channel, an RDMA_PS_UDP id bound to the IPoIB
 *            address, a UD QP.  Once all are ready they are released
 *            together (a pipe closes); each calls rdma_join_multicast()
 *            for its GROUPS groups, then takes their events.  A join's
 *            latency runs from its call to its event.  They stay until
 *            every process has its events, then exit (their ports
 *            unregister).
 * -m ports   one process is PORTS ports as far as umc-sm can tell: a UDP
 *            socket each, registered over umc-sm's protocol
 *            (src/wire/sm_proto.h) as the library's SA client registers.
 *            Once all are registered, every port sends its GROUPS
 *            SubnAdmSet(MCMemberRecord)s at once, with the component mask
 *            and record of the library's joins, resends each as the
 *            library does (UMC_SA_RETRIES times within UMC_SA_TIMEOUT_MS),
 *            at most UMC_SA_WINDOW of a port's at a time as the library
 *            sends them, and counts one without an answer by then as
 *            -ETIMEDOUT.  A join's latency runs from the release (its
 *            "call") to its answer.  This reaches thousands of ports
 *            without thousands of processes to schedule: it loads umc-sm,
 *            not the host.
 * -g GROUPS  groups each port joins (default 1): the same ones for every
 *            port, or with -o each port groups of its own
 *            (PORTS x GROUPS groups).  Group k is the IPv4 address
 *            225.0.0.0 + k, whose MGID is ff12:401b/4001:ffff::(address
 *            & 0x0fffffff) as the kernel maps it (RDMA_PS_UDP).
 * -f NOFILE  -m procs: each process lowers RLIMIT_NOFILE, soft and hard,
 *            to NOFILE first, so that its attaches run out of descriptors
 *            (ibv_attach_mcast(3): EMFILE) as in issue 32, defect 6.
 * -t SECONDS how long every port may take to get ready, and then every
 *            join to end (default 60).
 *
 * Prints "result NAME VALUE" lines: joins, ok, timeouts (-ETIMEDOUT),
 * lost (no event within -t), errors (any other failure), errno_N (how
 * many failed with errno N), p50_ms, p99_ms and max_ms (latency of the
 * joins that succeeded), seconds (from the release to the last event).
 * Exit status: 0 when every join succeeded or failed with an errno other
 * than ETIMEDOUT, 1 when one timed out or was lost, 2 on other errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "sa/sa_addr.h"
#include "umc_param.h"
#include "wire/be.h"
#include "wire/ib_mad.h"
#include "wire/sm_proto.h"

enum {
	GROUP_BASE = 0xE1000000u, /* 225.0.0.0 */
	LOST = -100000,		  /* a join with no event within -t */
	REAP_MS = 10000,	  /* children that do not exit by then get SIGKILL */
};

/* How one join ended. */
struct outcome {
	int32_t err;	 /* 0, -errno, or LOST */
	uint32_t lat_us; /* call (first send) to event (answer) */
};

static struct {
	struct sockaddr_in sm;
	bool procs, own;
	unsigned ports, groups, secs, nofile;
	struct outcome *out;	       /* ports x groups */
	uint64_t sm_drops, port_drops; /* at the release, then the difference */
} o = {.groups = 1, .secs = 60};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The IPv4 address (host order) of port @p's @g-th group. */
static uint32_t group_addr(unsigned p, unsigned g)
{
	return GROUP_BASE + (o.own ? p * o.groups + g : g);
}

static void die(const char *what)
{
	fprintf(stderr, "join-storm: %s: %s\n", what, strerror(errno));
	exit(2);
}

/*
 * The kernel's drop counts of this network namespace's UDP sockets
 * (/proc/net/udp, whose addresses are the raw network-order words): at
 * umc-sm's socket, and summed over the sockets connected to it (the ports'
 * SA sockets).
 */
static void udp_drops(uint64_t *sm, uint64_t *ports)
{
	FILE *f = fopen("/proc/net/udp", "r");
	unsigned laddr, lport, raddr, rport;
	char line[512], *tok, *last, *save;

	*sm = *ports = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*u: %8X:%4X %8X:%4X", &laddr, &lport, &raddr, &rport) != 4)
			continue;
		for (last = NULL, tok = strtok_r(line, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save))
			last = tok; /* drops, the last column */
		if (!last)
			continue;
		if (laddr == o.sm.sin_addr.s_addr && lport == ntohs(o.sm.sin_port))
			*sm += strtoull(last, NULL, 10);
		else if (raddr == o.sm.sin_addr.s_addr && rport == ntohs(o.sm.sin_port))
			*ports += strtoull(last, NULL, 10);
	}
	fclose(f);
}

/* At the release (@end false) and at the end: o.sm_drops, o.port_drops. */
static void drops_mark(bool end)
{
	uint64_t sm, ports;

	udp_drops(&sm, &ports);
	o.sm_drops = end ? sm - o.sm_drops : sm;
	o.port_drops = end ? ports - o.port_drops : ports;
}

/* ------------------------------------------------------------------------- */
/* -m procs: one application process per port.                               */

/* The process of port @p: ready, released, joins, events, results, wait to exit. */
static void child(unsigned p, int ready, int start, int finish)
{
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD};
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct outcome *out = o.out + (size_t)p * o.groups;
	uint64_t *t0 = calloc(o.groups, sizeof(*t0)), end;
	struct rlimit rl = {o.nofile, o.nofile};
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	unsigned g, left;
	char b = 0;

	if (o.nofile && setrlimit(RLIMIT_NOFILE, &rl))
		_exit(3);
	inet_pton(AF_INET, UMC_IB_DEFAULT_ADDR, &src.sin_addr);
	ch = rdma_create_event_channel();
	if (!t0 || !ch || rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&src) || rdma_create_qp(id, NULL, &qa))
		_exit(3);
	if (write(ready, &b, 1) != 1)
		_exit(3);
	while (read(start, &b, 1) > 0) /* the release: every writer closed */
		;
	for (g = 0; g < o.groups; g++) {
		struct sockaddr_in grp = {.sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(group_addr(p, g))};

		out[g].err = LOST;
		t0[g] = now_us();
		if (rdma_join_multicast(id, (struct sockaddr *)&grp, (void *)(uintptr_t)g)) {
			out[g].err = -errno;
			out[g].lat_us = (uint32_t)(now_us() - t0[g]);
		}
	}
	end = now_us() + (uint64_t)o.secs * 1000000;
	for (left = o.groups; left;) {
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct rdma_cm_event *ev;
		uint64_t now = now_us();

		if (now >= end || poll(&pfd, 1, (int)((end - now) / 1000) + 1) < 0)
			break;
		if (!(pfd.revents & POLLIN))
			continue;
		errno = 0;
		if (rdma_get_cm_event(ch, &ev))
			break;
		g = (unsigned)(uintptr_t)ev->param.ud.private_data;
		if (g < o.groups && out[g].err == LOST) {
			out[g].lat_us = (uint32_t)(now_us() - t0[g]);
			/* status -1: the attach failed, errno says why (an SA failure's
			 * status is -EINVAL, -ETIMEDOUT, ...) */
			if (ev->event == RDMA_CM_EVENT_MULTICAST_JOIN)
				out[g].err = 0;
			else if (ev->status == -1)
				out[g].err = errno ? -errno : -EIO;
			else
				out[g].err = ev->status < 0 ? ev->status : -EPROTO;
			left--;
		}
		rdma_ack_cm_event(ev);
	}
	if (write(ready, &b, 1) != 1)
		_exit(3);
	while (read(finish, &b, 1) > 0)
		;
	exit(0); /* the port unregisters */
}

/* Read @count bytes from @fd before @end (us); returns how many came. */
static unsigned wait_bytes(int fd, unsigned count, uint64_t end)
{
	unsigned got = 0;
	char b[64];

	while (got < count) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = now_us();
		ssize_t n;

		if (now >= end || poll(&pfd, 1, (int)((end - now) / 1000) + 1) < 0)
			break;
		n = read(fd, b, count - got < sizeof(b) ? count - got : sizeof(b));
		if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
			break; /* every child is gone */
		got += n > 0 ? (unsigned)n : 0;
	}
	return got;
}

/*
 * Fork the processes, release them together once all are ready, and wait
 * until each has its joins' events (or -t passed); then they exit.
 */
static int run_procs(uint64_t *t_start, uint64_t *t_end)
{
	int ready[2], start[2], finish[2], rc = 0, st;
	pid_t *pid = calloc(o.ports, sizeof(*pid));
	unsigned i, n, got;
	uint64_t end;

	if (!pid || pipe(ready) || pipe(start) || pipe(finish))
		die("pipe");
	fflush(NULL);
	for (i = 0; i < o.ports; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			fprintf(stderr, "join-storm: fork %u: %s\n", i, strerror(errno));
			rc = 2;
			break;
		}
		if (!pid[i]) {
			close(ready[0]);
			close(start[1]);
			close(finish[1]);
			child(i, ready[1], start[0], finish[0]);
		}
	}
	close(ready[1]);
	close(start[0]);
	close(finish[0]);
	got = rc ? 0 : wait_bytes(ready[0], i, now_us() + (uint64_t)o.secs * 1000000);
	if (!rc && got < i) {
		fprintf(stderr, "join-storm: %u of %u processes got ready\n", got, i);
		rc = 2;
	}
	if (!rc) {
		drops_mark(false);
		*t_start = now_us();
		close(start[1]); /* the release */
		/* each says when its joins ended, at the latest -t after the release */
		got = wait_bytes(ready[0], i, *t_start + ((uint64_t)o.secs + 1) * 1000000);
		*t_end = now_us();
		drops_mark(true);
		if (got < i) {
			fprintf(stderr, "join-storm: %u of %u processes ended their joins\n", got,
				i);
			rc = 1;
		}
	} else {
		close(start[1]);
		for (n = 0; n < i; n++)
			kill(pid[n], SIGKILL);
	}
	close(finish[1]); /* they exit */
	end = now_us() + REAP_MS * 1000ull;
	for (n = 0; n < i; n++) {
		while (waitpid(pid[n], &st, WNOHANG) == 0 && now_us() < end)
			usleep(1000); /* bounded by end */
		if (now_us() >= end)
			kill(pid[n], SIGKILL);
		waitpid(pid[n], &st, 0);
	}
	close(ready[0]);
	free(pid);
	return rc;
}

/* ------------------------------------------------------------------------- */
/* -m ports: ports simulated over umc-sm's protocol.                         */

struct sport {
	int fd;
	bool registered;
	uint16_t lid;
	uint64_t epoch, nonce, next_renew;
	uint32_t lease_ms;
	uint8_t gid[16];
	unsigned next_g;   /* its next join to send */
	unsigned inflight; /* its joins sent and not answered */
};

/* Join g of port p (index p * groups + g). */
struct sjoin {
	enum { J_WAITING, J_SENT, J_DONE } state;
	uint64_t next_send, deadline; /* us */
};

static struct sport *sp;
static struct sjoin *sj;
static uint32_t ptid;

static void sm_send(struct sport *s, struct umc_sm_msg *m)
{
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n;

	m->hdr.tid = ++ptid ? ptid : ++ptid;
	m->hdr.lid = s->lid;
	m->hdr.epoch = s->epoch;
	n = umc_sm_msg_encode(buf, m);
	if (send(s->fd, buf, n, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ECONNREFUSED)
		die("send");
}

static void send_register(struct sport *s)
{
	struct umc_sm_msg m = {.hdr = {.type = UMC_SM_REGISTER}, .reg = {.nonce = s->nonce}};

	sm_send(s, &m);
}

/* The library's join (join_ib.c): the port's GID, RDMA_UDP_QKEY, P_Key 0xFFFF, FullMember. */
static void send_join(unsigned p, unsigned g)
{
	struct umc_mcmember r = {
	    .qkey = RDMA_UDP_QKEY, .pkey = 0xffff, .join_state = UMC_JOIN_FULL};
	struct umc_sm_msg m = {.hdr = {.type = UMC_SM_SA}};
	uint8_t mad[UMC_MAD_SIZE];

	r.mgid[0] = 0xff;
	r.mgid[1] = 0x12;
	r.mgid[2] = 0x40;
	r.mgid[3] = 0x01;
	r.mgid[4] = r.mgid[5] = 0xff;
	put_be32(r.mgid + 12, group_addr(p, g) & 0x0fffffff);
	memcpy(r.port_gid, sp[p].gid, 16);
	umc_sa_request_encode(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD,
			      UMC_MCM_CREATE_MASK, 0, &r);
	put_be64(mad + 8, (uint64_t)p * o.groups + g + 1); /* TransactionID: the join's index + 1 */
	m.mad = mad;
	sm_send(&sp[p], &m);
}

static uint64_t t_release;

/*
 * Send port @p's next joins while it has fewer than UMC_SA_WINDOW in
 * flight, as the library's SA client does (sa_txn.c); each is resent as
 * the library resends, and times out as it does.
 */
static void join_next(unsigned p, uint64_t now)
{
	const uint64_t interval = UMC_SA_TIMEOUT_MS * 1000ull / (UMC_SA_RETRIES + 1);
	struct sport *s = &sp[p];

	while (s->inflight < UMC_SA_WINDOW && s->next_g < o.groups) {
		struct sjoin *j = &sj[(size_t)p * o.groups + s->next_g];

		j->state = J_SENT;
		j->next_send = now + interval;
		j->deadline = now + UMC_SA_TIMEOUT_MS * 1000ull;
		s->inflight++;
		send_join(p, s->next_g++);
	}
}

/* Join @k of port @p ended with @err: its latency is from the release. */
static void join_end(unsigned p, size_t k, int err, uint64_t now)
{
	sj[k].state = J_DONE;
	o.out[k].err = err;
	o.out[k].lat_us = (uint32_t)(now - t_release);
	sp[p].inflight--;
	join_next(p, now);
}

/* One datagram from port @p's socket; returns false when none waits. */
static bool sm_recv(unsigned p, uint64_t now)
{
	uint8_t buf[UMC_SM_MAX_MSG + 1];
	struct sport *s = &sp[p];
	struct umc_sa_hdr h;
	struct umc_sm_msg m;
	struct sjoin *j;
	uint64_t tid;
	ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return false;
	if (umc_sm_msg_decode(buf, (size_t)n, &m))
		return true;
	if (m.hdr.type == UMC_SM_REGISTER_REPLY && !s->registered && m.hdr.status == UMC_SM_OK) {
		s->registered = true;
		s->lid = m.port.lid;
		s->epoch = m.hdr.epoch;
		s->lease_ms = m.port.lease_ms;
		s->next_renew = now + s->lease_ms * 1000ull / 3;
		put_be64(s->gid, m.port.subnet_prefix);
		put_be64(s->gid + 8, m.port.port_guid);
		return true;
	}
	if (m.hdr.type != UMC_SM_SA_REPLY || m.hdr.status != UMC_SM_OK ||
	    umc_sa_hdr_decode(m.mad, UMC_MAD_SIZE, &h))
		return true;
	tid = h.mad.tid;
	if (tid < (uint64_t)p * o.groups + 1 || tid > (uint64_t)(p + 1) * o.groups)
		return true; /* not one of this port's joins */
	j = &sj[tid - 1];
	if (j->state != J_SENT)
		return true; /* the answer to a resend */
	join_end(p, tid - 1, h.mad.status ? -EINVAL : 0,
		 now); /* the library's errno for a status */
	return true;
}

/* Read every port's socket that epoll says is readable, for up to @ms. */
static unsigned sm_poll(int ep, int ms)
{
	struct epoll_event ev[256];
	unsigned got = 0;
	int n = epoll_wait(ep, ev, 256, ms), i;

	for (i = 0; i < n; i++)
		while (sm_recv(ev[i].data.u32, now_us()))
			got++;
	return got;
}

static void sm_renew(uint64_t now)
{
	for (unsigned p = 0; p < o.ports; p++) {
		struct umc_sm_msg m = {.hdr = {.type = UMC_SM_RENEW}};

		if (sp[p].registered && now >= sp[p].next_renew) {
			sm_send(&sp[p], &m);
			sp[p].next_renew = now + sp[p].lease_ms * 1000ull / 3;
		}
	}
}

static int run_ports(uint64_t *t_start, uint64_t *t_end)
{
	const uint64_t interval = UMC_SA_TIMEOUT_MS * 1000ull / (UMC_SA_RETRIES + 1);
	size_t njoins = (size_t)o.ports * o.groups, left = njoins, k;
	struct rlimit rl;
	uint64_t end, next_reg = 0, now;
	unsigned p, registered = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < o.ports + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sp = calloc(o.ports, sizeof(*sp));
	sj = calloc(njoins, sizeof(*sj));
	if (ep < 0 || !sp || !sj)
		die("memory");
	for (p = 0; p < o.ports; p++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = p};

		sp[p].fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (sp[p].fd < 0 || connect(sp[p].fd, (struct sockaddr *)&o.sm, sizeof(o.sm)) ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, sp[p].fd, &ev))
			die("port socket");
		if (getrandom(&sp[p].nonce, sizeof(sp[p].nonce), 0) != sizeof(sp[p].nonce))
			die("getrandom");
	}
	/* registration: REGISTER every UMC_SA_REGISTER_RESEND_MS until answered */
	end = now_us() + (uint64_t)o.secs * 1000000;
	while (registered < o.ports) {
		now = now_us();
		if (now >= end) {
			fprintf(stderr, "join-storm: %u of %u ports registered\n", registered,
				o.ports);
			return 2;
		}
		if (now >= next_reg) {
			for (p = 0; p < o.ports; p++)
				if (!sp[p].registered)
					send_register(&sp[p]);
			next_reg = now + UMC_SA_REGISTER_RESEND_MS * 1000ull;
		}
		sm_poll(ep, 10);
		sm_renew(now_us());
		for (registered = 0, p = 0; p < o.ports; p++)
			registered += sp[p].registered;
	}
	/* the storm: every port's joins at once, each port's window full */
	for (k = 0; k < njoins; k++)
		o.out[k].err = LOST;
	drops_mark(false);
	*t_start = t_release = now_us();
	for (p = 0; p < o.ports; p++)
		join_next(p, t_release);
	end = *t_start + (uint64_t)o.secs * 1000000;
	while (left && (now = now_us()) < end) {
		sm_poll(ep, 5);
		now = now_us();
		sm_renew(now);
		for (left = 0, k = 0; k < njoins; k++) {
			struct sjoin *j = &sj[k];

			if (j->state == J_DONE)
				continue;
			left++;
			if (j->state != J_SENT)
				continue;
			if (now >= j->deadline) {
				join_end((unsigned)(k / o.groups), k, -ETIMEDOUT, now);
			} else if (now >= j->next_send) {
				send_join((unsigned)(k / o.groups), (unsigned)(k % o.groups));
				j->next_send = now + interval;
			}
		}
	}
	*t_end = now_us();
	drops_mark(true);
	for (p = 0; p < o.ports; p++) {
		struct umc_sm_msg m = {.hdr = {.type = UMC_SM_UNREGISTER}};

		sm_send(&sp[p], &m);
		close(sp[p].fd);
	}
	close(ep);
	return 0;
}

/* ------------------------------------------------------------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The "result" lines; returns the exit status. */
static int report(uint64_t t_start, uint64_t t_end)
{
	size_t njoins = (size_t)o.ports * o.groups, nok = 0, k;
	unsigned timeouts = 0, lost = 0, errors = 0, by_errno[256] = {0};
	uint32_t *lat = calloc(njoins ? njoins : 1, sizeof(*lat));

	if (!lat)
		die("memory");
	for (k = 0; k < njoins; k++) {
		int32_t e = o.out[k].err;

		if (!e)
			lat[nok++] = o.out[k].lat_us;
		else if (e == LOST)
			lost++;
		else if (e == -ETIMEDOUT)
			timeouts++;
		else
			errors++;
		if (e < 0 && e > -256)
			by_errno[-e]++;
	}
	qsort(lat, nok, sizeof(*lat), cmp_u32);
	printf("result joins %zu\nresult ok %zu\nresult timeouts %u\nresult lost %u\n"
	       "result errors %u\n",
	       njoins, nok, timeouts, lost, errors);
	for (k = 1; k < 256; k++)
		if (by_errno[k])
			printf("result errno_%zu %u\n", k, by_errno[k]);
	if (nok)
		printf("result p50_ms %.2f\nresult p99_ms %.2f\nresult max_ms %.2f\n",
		       lat[(nok - 1) / 2] / 1e3, lat[(nok * 99 + 99) / 100 - 1] / 1e3,
		       lat[nok - 1] / 1e3);
	printf("result seconds %.3f\n", (double)(t_end - t_start) / 1e6);
	printf("result sm_drops %llu\nresult port_drops %llu\n", (unsigned long long)o.sm_drops,
	       (unsigned long long)o.port_drops);
	free(lat);
	return timeouts || lost ? 1 : 0;
}

static void usage(void)
{
	fputs("usage: join-storm [-S ADDR:PORT] -m procs|ports -n PORTS [-g GROUPS] [-o] "
	      "[-f NOFILE] [-t SECONDS]\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sm = NULL, *mode = NULL;
	uint64_t t_start = 0, t_end = 0;
	char env[64], addr[INET_ADDRSTRLEN];
	int opt, rc;

	while ((opt = getopt(argc, argv, "S:m:n:g:of:t:h")) != -1) {
		switch (opt) {
		case 'S':
			sm = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'n':
			o.ports = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'g':
			o.groups = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 'o':
			o.own = true;
			break;
		case 'f':
			o.nofile = (unsigned)strtoul(optarg, NULL, 0);
			break;
		case 't':
			o.secs = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !mode || (strcmp(mode, "procs") && strcmp(mode, "ports")) ||
	    !o.ports || !o.groups || o.ports > 100000 || o.groups > 65536 || !o.secs ||
	    (sm ? umc_sa_parse_endpoint(sm, UMC_SM_UDP_PORT, &o.sm) : umc_sa_sm_from_env(&o.sm)))
		usage();
	o.procs = !strcmp(mode, "procs");
	/* shared with the processes of -m procs, which write their joins' outcomes */
	o.out = mmap(NULL, (size_t)o.ports * o.groups * sizeof(*o.out), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (o.out == MAP_FAILED)
		die("mmap");
	inet_ntop(AF_INET, &o.sm.sin_addr, addr, sizeof(addr));
	snprintf(env, sizeof(env), "%s:%u", addr, ntohs(o.sm.sin_port));
	setenv("UMC_SM", env, 1);
	unsetenv("UMC_IB_ADDR");
	rc = o.procs ? run_procs(&t_start, &t_end) : run_ports(&t_start, &t_end);
	if (rc == 2)
		return 2;
	rc |= report(t_start, t_end);
	return rc;
}
