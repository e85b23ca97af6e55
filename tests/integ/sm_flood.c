// SPDX-License-Identifier: MIT
/*
 * sm_flood.c - umc-sm while another local process floods it (issue 32,
 * defects 2, 3 and 5): a victim keeps its port, and its joins and leaves
 * succeed, whatever the flooder sends as fast as it can.
 *
 * Each test starts umc-sm (sm_proc.h) with a lease of LEASE_MS (but for
 * the registration flood), so that a victim whose renewals go unanswered
 * for that long loses its port (and an application its joins, with
 * -ENETRESET) within the test.  A flooder,
 * forked before the victim exists, prepares (registers its ports, creates
 * its groups), waits for the word, then floods for FLOOD_MS or FLOOD_MAX
 * datagrams, whichever comes first, and reports what it sent.  Meanwhile
 * the victim, the library's SA client (src/sa), joins and leaves groups
 * of its own, one at a time, for as long as the flood lasts, and a probe
 * port of its process, on a thread of its own, renews its lease every
 * PROBE_MS as the library does every lease / 3: each RENEW waits up to
 * PROBE_WAIT_MS for its answer.  Asserted: every join and leave of the
 * victim succeeded (with the library's resends), at least VICTIM_MIN of
 * each and of renewals while the flooder sent; the victim's client never
 * lost its port (UMC_SA_EVENT_PORT_LOST, which the CM reports as
 * -ENETRESET), nor did the probe (never told UNKNOWN_PORT, to the last
 * RENEW after the flood); the victim's first membership is still there
 * at the end.  Printed: how many of each, the RENEWs left unanswered
 * within PROBE_WAIT_MS (a datagram the kernel dropped when umc-sm's
 * socket was full, or a reply read late on a loaded machine), the
 * longest time without an answer, and the latencies (median, 99th
 * percentile, largest): speed goals belong to the benchmarks, not here.
 *
 * Run one test: sm_flood <name substring>.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmocka_select.h"
#include "sa/sa_client.h"
#include "sa_mad_util.h"
#include "sm_proc.h"
#include "umc_param.h"
#include "wait.h"
#include "wire/be.h"
#include "wire/ib_rmpp.h"
#include "wire/sm_proto.h"

enum {
	LEASE_MS = 1000,      /* umc-sm's --lease: three renewals lost, and the port goes */
	FLOOD_MS = 3000,      /* the flood's length ... */
	FLOOD_MAX = 3000000,  /* ... or this many datagrams */
	WAIT_MS = 20000,      /* bound of every wait for a process or a pipe */
	REPLY_MS = 2000,      /* bound of a flooder's wait for one reply while it prepares */
	PROBE_MS = 100,	      /* the probe port renews this often */
	PROBE_WAIT_MS = LEASE_MS / 3, /* ... and gives a RENEW this long (the library's period) */
	VICTIM_MIN = 5,	      /* joins, leaves and renewals the victim must have made */
	MAX_SAMPLES = 100000, /* latencies kept of each kind */
	GROUPS_16K = 16000,   /* the flooder's groups for the GetTable floods */
	HOLDERS = 20,	      /* the RMPP flooder's ports, each holding transfers */
	HOLD_ACK_MS = 150,    /* how often a holder ACKs one more segment */
};

static double now_ms_f(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------------- */
/* A port spoken for by hand: one UDP socket, the SM protocol on it.         */

struct raw_port {
	int fd;
	uint16_t lid;
	uint64_t epoch;
	uint8_t gid[16];
	uint32_t tid;
};

/* A socket on 127.@b.@c.@d (0.0.0.0: the kernel's choice), connected to the SM. */
static int raw_socket(const struct sockaddr_in *sm, uint8_t b, uint8_t c, uint8_t d)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)b << 16 | (uint32_t)c << 8 | d);
	if ((b || c || d) && bind(fd, (void *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	if (connect(fd, (const void *)sm, sizeof(*sm))) {
		close(fd);
		return -1;
	}
	return fd;
}

static void raw_send(struct raw_port *p, struct umc_sm_msg *m)
{
	uint8_t buf[UMC_SM_MAX_MSG];

	m->hdr.lid = p->lid;
	m->hdr.epoch = p->epoch;
	m->hdr.tid = ++p->tid;
	if (send(p->fd, buf, umc_sm_msg_encode(buf, m), 0) < 0) {
		/* a flooder: what the kernel refuses is simply not sent */
	}
}

/* The reply to the last request sent, within @ms; other datagrams are passed over. */
static int raw_reply(struct raw_port *p, struct umc_sm_msg *r, uint8_t *buf, int ms)
{
	uint64_t end = t_deadline(ms);
	ssize_t n;

	while (t_wait_fd(p->fd, t_left_ms(end))) {
		n = recv(p->fd, buf, UMC_SM_MAX_MSG + 1, 0);
		if (n > 0 && !umc_sm_msg_decode(buf, (size_t)n, r) && r->hdr.tid == p->tid)
			return 0;
	}
	return -ETIMEDOUT;
}

/* Register @p (its socket made) with a random nonce; 0 or -errno. */
static int raw_register(struct raw_port *p)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_REGISTER } }, r;
	uint8_t buf[UMC_SM_MAX_MSG + 1];
	int tries;

	m.reg.nonce = (uint64_t)rand() << 32 | (uint64_t)rand() | 1;
	for (tries = 0; tries < 10; tries++) { /* a REGISTER may wait its turn, or be dropped */
		raw_send(p, &m);
		if (!raw_reply(p, &r, buf, REPLY_MS / 4) && r.hdr.type == UMC_SM_REGISTER_REPLY) {
			if (r.hdr.status)
				return -EIO;
			p->lid = r.port.lid;
			p->epoch = r.hdr.epoch;
			put_be64(p->gid, r.port.subnet_prefix);
			put_be64(p->gid + 8, r.port.port_guid);
			return 0;
		}
	}
	return -ETIMEDOUT;
}

/* An SA datagram of @p carrying @mad; the SA's TID is @p's next tid. */
static void raw_sa(struct raw_port *p, uint8_t *mad)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA }, .mad = mad };

	put_be64(mad + 8, p->tid + 1);
	raw_send(p, &m);
}

static void mgid_n(uint8_t mgid[16], unsigned n)
{
	sa_gid_parse("ff12:4001:ffff::", mgid);
	put_be32(mgid + 12, 0xe0000000u + n);
}

/* A Set of group @n as full member of @p, the kernel's create mask. */
static void set_mad(const struct raw_port *p, unsigned n, uint8_t *mad)
{
	struct umc_mcmember r;
	uint8_t mgid[16];

	mgid_n(mgid, n);
	sa_rec_init(&r, mgid, p->gid, UMC_JOIN_FULL);
	sa_mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 0,
		     &r);
}

/* Create groups @first.. @first + @n - 1 from @p, 64 Sets in flight; 0 or -errno. */
static int raw_create(struct raw_port *p, unsigned first, unsigned n)
{
	uint8_t mad[UMC_MAD_SIZE], buf[UMC_SM_MAX_MSG + 1];
	unsigned sent = 0, done = 0;
	struct umc_sm_msg r;
	ssize_t len;

	while (done < n) {
		while (sent < n && sent - done < 64) {
			set_mad(p, first + sent++, mad);
			raw_sa(p, mad);
		}
		if (!t_wait_fd(p->fd, REPLY_MS))
			return -ETIMEDOUT;
		len = recv(p->fd, buf, sizeof(buf), 0);
		if (len > 0 && !umc_sm_msg_decode(buf, (size_t)len, &r) &&
		    r.hdr.type == UMC_SM_SA_REPLY) {
			/* a reply that is not OK has no MAD (sm_proto.h) */
			if (r.hdr.status || get_be16(r.mad + 4))
				return -EIO;
			done++;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------- */
/* The flooder.                                                              */

enum flood_kind { FLOOD_GETTABLE, FLOOD_REGISTER, FLOOD_RMPP_HOLD };

struct flooder {
	enum flood_kind kind;
	struct sockaddr_in sm;
	unsigned groups;    /* groups it creates first */
	bool other_user;    /* it runs as another user (nobody) */
	int ready[2], go[2]; /* it says it is ready; it is told to go */
	pid_t pid;
	char report[256];   /* what it sent, from its last line */
	uint64_t start, end; /* when it flooded, on this clock */
};

/* Run as nobody, so that umc-sm counts the flooder as another source host. */
static int become_other_user(void)
{
	const uid_t nobody = 65534;

	return setgroups(0, NULL) || setgid(nobody) || setuid(nobody) ? -errno : 0;
}

/* Flood GetTables of every group from one port, 64 to a sendmmsg, not waiting for answers. */
static unsigned long flood_gettable(struct raw_port *p, uint64_t end)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_SA, .lid = p->lid, .epoch = p->epoch } };
	static uint8_t bufs[64][UMC_SM_MAX_MSG], sink[UMC_SM_MAX_MSG + 1];
	uint8_t mad[UMC_MAD_SIZE];
	struct mmsghdr msgs[64];
	struct iovec iov[64];
	unsigned long sent = 0;
	int i, n;

	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	m.mad = mad;
	memset(msgs, 0, sizeof(msgs));
	while (t_now_ms() < end && sent < FLOOD_MAX) {
		for (i = 0; i < 64; i++) {
			m.hdr.tid = (uint32_t)(sent + (unsigned)i + 1);
			put_be64(mad + 8, sent + (unsigned)i + 1);
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = umc_sm_msg_encode(bufs[i], &m);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = sendmmsg(p->fd, msgs, 64, 0);
		sent += n > 0 ? (unsigned)n : 0;
		while (recv(p->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			; /* BUSY answers and segments: not read, not ACKed */
	}
	return sent;
}

/*
 * Flood REGISTERs, each from an endpoint of its own: a new socket on the
 * next address of 127.1.0.0 and up, 256 of them open at a time (the
 * oldest closed as the next opens).
 */
static unsigned long flood_register(const struct sockaddr_in *sm, uint64_t end)
{
	enum { OPEN = 256 };
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_REGISTER } };
	uint8_t buf[UMC_SM_MAX_MSG], sink[UMC_SM_MAX_MSG + 1];
	unsigned long sent = 0, n;
	int fds[OPEN], s;

	for (s = 0; s < OPEN; s++)
		fds[s] = -1;
	for (n = 0; t_now_ms() < end && sent < FLOOD_MAX; n++) {
		s = (int)(n % OPEN);
		if (fds[s] >= 0)
			close(fds[s]);
		fds[s] = raw_socket(sm, (uint8_t)(1 + (n >> 16)), (uint8_t)(n >> 8), (uint8_t)n);
		if (fds[s] < 0)
			break;
		m.hdr.tid = (uint32_t)n + 1;
		m.reg.nonce = n + 1;
		if (send(fds[s], buf, umc_sm_msg_encode(buf, &m), 0) > 0)
			sent++;
		while (recv(fds[(s + 1) % OPEN], sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
	for (s = 0; s < OPEN; s++)
		if (fds[s] >= 0)
			close(fds[s]);
	return sent;
}

/*
 * HOLDERS ports each ask for 4 GetTables of every group; each transfer
 * that starts (its segment 1 arrives) gets its ACK of one more segment
 * every HOLD_ACK_MS, so that it moves, slowly, and is never given up.
 */
static unsigned long flood_rmpp_hold(struct raw_port *holders, uint64_t end)
{
	enum { PER_PORT = 4 };
	uint8_t mad[UMC_MAD_SIZE], buf[UMC_SM_MAX_MSG + 1];
	uint32_t acked[HOLDERS][PER_PORT + 1] = { { 0 } }; /* by TID: 0 = not started */
	unsigned long sent = 0;
	struct umc_sa_hdr req, h;
	struct umc_sm_msg r;
	ssize_t n;
	int i, t;

	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	umc_sa_hdr_decode(mad, UMC_MAD_SIZE, &req);
	for (i = 0; i < HOLDERS; i++)
		for (t = 1; t <= PER_PORT; t++, sent++) {
			put_be64(mad + 8, (uint64_t)t);
			raw_send(&holders[i], &(struct umc_sm_msg){ .hdr = { .type = UMC_SM_SA },
								    .mad = mad });
		}
	while (t_now_ms() < end) {
		struct pollfd none;

		poll(&none, 0, HOLD_ACK_MS);
		for (i = 0; i < HOLDERS; i++) {
			while ((n = recv(holders[i].fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				if (!umc_sm_msg_decode(buf, (size_t)n, &r) &&
				    r.hdr.type == UMC_SM_SA_REPLY && r.hdr.status == UMC_SM_OK &&
				    !umc_sa_hdr_decode(r.mad, UMC_MAD_SIZE, &h) && h.mad.tid >= 1 &&
				    h.mad.tid <= PER_PORT && h.rmpp.type == UMC_RMPP_TYPE_DATA &&
				    h.rmpp.seg_num == 1 && !h.mad.status && !acked[i][h.mad.tid])
					acked[i][h.mad.tid] = 1; /* started: ACK 1 first */
			for (t = 1; t <= PER_PORT; t++) {
				if (!acked[i][t])
					continue;
				req.mad.tid = (uint64_t)t;
				umc_rmpp_ctl_encode(mad, &req, UMC_RMPP_TYPE_ACK, 0, acked[i][t],
						    acked[i][t] + 1);
				raw_send(&holders[i],
					 &(struct umc_sm_msg){ .hdr = { .type = UMC_SM_SA }, .mad = mad });
				acked[i][t]++;
				sent++;
			}
		}
	}
	return sent;
}

/* The flooder's life; its exit status is 0 when it flooded as told. */
static int flooder_main(struct flooder *f)
{
	struct raw_port ports[HOLDERS];
	unsigned nports = f->kind == FLOOD_RMPP_HOLD ? HOLDERS : f->kind == FLOOD_GETTABLE;
	unsigned long sent = 0;
	uint64_t t0, t1;
	char go, line[256];
	unsigned i;
	int n;

	close(f->ready[0]);
	close(f->go[1]);
	srand((unsigned)getpid());
	if (f->other_user && become_other_user())
		return 10;
	for (i = 0; i < nports; i++) {
		memset(&ports[i], 0, sizeof(ports[i]));
		ports[i].fd = raw_socket(&f->sm, 0, 0, 0);
		if (ports[i].fd < 0 || raw_register(&ports[i]))
			return 11;
	}
	if (f->groups && raw_create(&ports[0], 0x10000, f->groups))
		return 12;
	if (write(f->ready[1], "r", 1) != 1 || read(f->go[0], &go, 1) != 1)
		return 13;
	t0 = t_now_ms();
	switch (f->kind) {
	case FLOOD_GETTABLE:
		sent = flood_gettable(&ports[0], t0 + FLOOD_MS);
		break;
	case FLOOD_REGISTER:
		sent = flood_register(&f->sm, t0 + FLOOD_MS);
		break;
	case FLOOD_RMPP_HOLD:
		sent = flood_rmpp_hold(ports, t0 + FLOOD_MS);
		break;
	}
	t1 = t_now_ms();
	n = snprintf(line, sizeof(line), "%lu datagrams in %llu ms (%.0f/s)\n", sent,
		     (unsigned long long)(t1 - t0), (double)sent * 1000.0 / (double)(t1 - t0 + 1));
	if (write(f->ready[1], line, (size_t)n) != n)
		return 14;
	return sent ? 0 : 15;
}

/* Fork the flooder and wait until it has prepared; the test's process has no thread yet. */
static void flooder_start(struct flooder *f)
{
	char c = 0;

	assert_int_equal(pipe(f->ready), 0);
	assert_int_equal(pipe(f->go), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (!f->pid)
		_exit(flooder_main(f));
	close(f->ready[1]);
	close(f->go[0]);
	assert_true(t_read_full(f->ready[0], &c, 1, WAIT_MS)); /* none: the flooder failed */
	assert_int_equal(c, 'r');
}

static void flooder_go(struct flooder *f)
{
	f->start = t_now_ms();
	assert_int_equal(write(f->go[1], "g", 1), 1);
}

/* Is it still flooding?  When it is done, its report is read. */
static bool flooder_running(struct flooder *f)
{
	ssize_t n;

	if (f->end)
		return false;
	if (!t_wait_fd(f->ready[0], 0))
		return t_now_ms() < f->start + FLOOD_MS + WAIT_MS;
	n = read(f->ready[0], f->report, sizeof(f->report) - 1);
	f->report[n > 0 ? n : 0] = 0;
	f->end = t_now_ms();
	return false;
}

/* Reap the flooder (killed if it overstays); its exit status must be 0. */
static void flooder_stop(struct flooder *f)
{
	int st = t_reap(f->pid, WAIT_MS);

	close(f->ready[0]);
	close(f->go[1]);
	printf("# flooder: %s", f->report[0] ? f->report : "no report\n");
	assert_int_equal(st, 0);
	assert_true(f->end != 0);
}

/* ------------------------------------------------------------------------- */
/* The victim.                                                               */

struct samples {
	double ms[MAX_SAMPLES];
	unsigned n, failed;
	int first_error; /* the first failure's MAD status or -errno */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, struct samples *s)
{
	qsort(s->ms, s->n, sizeof(s->ms[0]), cmp_double);
	printf("# victim %s: %u, %u failed (first: %d); latency median %.2f ms, p99 %.2f ms, "
	       "max %.2f ms\n",
	       what, s->n, s->failed, s->first_error, s->n ? s->ms[s->n / 2] : 0.0,
	       s->n ? s->ms[s->n * 99 / 100] : 0.0, s->n ? s->ms[s->n - 1] : 0.0);
}

/* One operation of @ms that ended with @err (0: success). */
static void add(struct samples *s, double ms, int err)
{
	if (err && !s->failed++)
		s->first_error = err;
	else if (!err && s->n < MAX_SAMPLES)
		s->ms[s->n++] = ms;
}

struct victim {
	struct umc_sa_client *c;
	struct umc_sa_port_attr pa;
	int events[2];	       /* the client's events, one byte each */
	struct raw_port probe; /* a second port of the victim's process, renewing by hand */
	pthread_t probe_thread;
	volatile bool probe_stop;
	unsigned probe_misses;	     /* RENEWs unanswered within PROBE_WAIT_MS */
	double probe_ok, probe_gap; /* the last answer; the longest time without one */
	struct samples joins, leaves, renews;
};

static void on_event(void *ctx, enum umc_sa_event ev)
{
	struct victim *v = ctx;
	uint8_t b = (uint8_t)ev;

	if (write(v->events[1], &b, 1) != 1)
		abort();
}

/* One RENEW of the probe port, sent up to 3 times: the answer's status, or -ETIMEDOUT. */
static int probe_renew(struct victim *v)
{
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_RENEW } }, r;
	uint8_t buf[UMC_SM_MAX_MSG + 1];
	int tries;

	for (tries = 0; tries < 3; tries++) {
		raw_send(&v->probe, &m);
		if (!raw_reply(&v->probe, &r, buf, PROBE_WAIT_MS) && r.hdr.type == UMC_SM_RENEW_REPLY)
			return r.hdr.status;
	}
	return -ETIMEDOUT;
}

/* The probe port: a RENEW every PROBE_MS, each given PROBE_WAIT_MS for its answer. */
static void *probe_main(void *arg)
{
	struct victim *v = arg;
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_RENEW } }, r;
	uint8_t buf[UMC_SM_MAX_MSG + 1];
	double t0;

	v->probe_ok = now_ms_f();
	while (!v->probe_stop) {
		struct pollfd none;

		t0 = now_ms_f();
		raw_send(&v->probe, &m);
		if (!raw_reply(&v->probe, &r, buf, PROBE_WAIT_MS) && r.hdr.type == UMC_SM_RENEW_REPLY) {
			add(&v->renews, now_ms_f() - t0, r.hdr.status); /* UNKNOWN_PORT: failed */
			if (now_ms_f() - v->probe_ok > v->probe_gap)
				v->probe_gap = now_ms_f() - v->probe_ok;
			v->probe_ok = now_ms_f();
		} else {
			v->probe_misses++;
		}
		poll(&none, 0, PROBE_MS);
	}
	return NULL;
}

static void victim_open(struct victim *v, const struct test_sm *sm)
{
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS, .event = on_event, .event_ctx = v };
	struct sockaddr_in smaddr;

	assert_int_equal(pipe(v->events), 0);
	test_sm_addr(sm, &a.sm);
	assert_int_equal(umc_sa_open(&a, &v->c), 0);
	umc_sa_query_port(v->c, &v->pa);
	test_sm_addr(sm, &smaddr);
	v->probe.fd = raw_socket(&smaddr, 0, 0, 0);
	assert_true(v->probe.fd >= 0);
	assert_int_equal(raw_register(&v->probe), 0);
	assert_int_equal(pthread_create(&v->probe_thread, NULL, probe_main, v), 0);
}

/* A Set or Delete of group @n from the victim's own port: its status, or -errno. */
static int victim_mcm(struct victim *v, uint8_t method, unsigned n, double *ms)
{
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	double t0 = now_ms_f();
	int rc;

	mgid_n(mgid, n);
	sa_rec_init(&r, mgid, v->pa.gid, UMC_JOIN_FULL);
	sa_mad_build(mad, method, UMC_SA_ATTR_MCMEMBER_RECORD,
		     method == UMC_MAD_METHOD_SET ? UMC_MCM_CREATE_MASK : UMC_MCM_JOIN_MASK, 0, &r);
	rc = umc_sa_call(v->c, mad, 0, UMC_SA_RETRIES, &res);
	*ms = now_ms_f() - t0;
	if (!rc)
		rc = res.status;
	umc_sa_result_free(&res);
	return rc;
}

/*
 * Join and leave group after group while @f floods (the probe renews on
 * its own); @midway (if any) once, @at ms after the start.  Returns false
 * if the flood ended before @midway's turn.
 */
static bool victim_run(struct victim *v, struct flooder *f, uint64_t at, void (*midway)(void *),
		       void *ctx)
{
	unsigned k;
	double ms;
	int st;

	flooder_go(f);
	for (k = 0; flooder_running(f); k++) {
		if (midway && t_now_ms() >= f->start + at) {
			midway(ctx);
			midway = NULL;
		}
		st = victim_mcm(v, UMC_MAD_METHOD_SET, 100 + k, &ms);
		add(&v->joins, ms, st);
		if (!st) {
			st = victim_mcm(v, UMC_SA_METHOD_DELETE, 100 + k, &ms);
			add(&v->leaves, ms, st);
		}
	}
	return !midway;
}

/* The victim's checks and figures after the flood; its persistent membership is group 1. */
static void victim_check(struct victim *v)
{
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];

	v->probe_stop = true;
	assert_int_equal(pthread_join(v->probe_thread, NULL), 0);
	report("joins", &v->joins);
	report("leaves", &v->leaves);
	report("renewals", &v->renews);
	printf("# victim renewals unanswered: %u; longest time without an answer %.0f ms\n",
	       v->probe_misses, v->probe_gap);
	assert_false(t_wait_fd(v->events[0], 0)); /* no UMC_SA_EVENT_PORT_LOST: no -ENETRESET */
	assert_int_equal(v->joins.failed, 0);
	assert_int_equal(v->leaves.failed, 0);
	/* every answer OK, and the last one after the flood too: the probe never expired */
	assert_int_equal(v->renews.failed, 0);
	assert_int_equal(probe_renew(v), UMC_SM_OK);
	assert_true(v->joins.n >= VICTIM_MIN && v->leaves.n >= VICTIM_MIN &&
		    v->renews.n >= VICTIM_MIN);
	mgid_n(mgid, 1);
	sa_rec_init(&r, mgid, v->pa.gid, 0);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		     UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, UMC_SM_DEFAULT_SM_KEY, &r);
	assert_int_equal(umc_sa_call(v->c, mad, 0, UMC_SA_RETRIES, &res), 0);
	assert_int_equal(res.status, 0); /* still a member: the port was never lost */
	umc_sa_result_free(&res);
}

static void victim_close(struct victim *v)
{
	umc_sa_close(v->c);
	close(v->probe.fd);
	close(v->events[0]);
	close(v->events[1]);
}

/* ------------------------------------------------------------------------- */
/* The tests.                                                                */

struct run {
	struct test_sm sm;
	struct flooder f;
	struct victim *v;
};

/*
 * umc-sm with --lease @lease_ms and @args, a flooder of @kind prepared,
 * the victim in group 1.
 */
static void run_start(struct run *r, unsigned lease_ms, const char *const *args,
		      enum flood_kind kind, unsigned groups, bool other_user)
{
	const char *argv[16] = { "--lease" };
	char lease[16];
	double ms;
	int i;

	snprintf(lease, sizeof(lease), "%u", lease_ms);
	argv[1] = lease;
	for (i = 0; args && args[i]; i++)
		argv[2 + i] = args[i];
	assert_int_equal(test_sm_start(&r->sm, 0, argv), 0);
	r->f = (struct flooder){ .kind = kind, .groups = groups, .other_user = other_user };
	test_sm_addr(&r->sm, &r->f.sm);
	flooder_start(&r->f); /* before the victim's client thread exists */
	r->v = calloc(1, sizeof(*r->v));
	assert_non_null(r->v);
	victim_open(r->v, &r->sm);
	assert_int_equal(victim_mcm(r->v, UMC_MAD_METHOD_SET, 1, &ms), 0);
}

/* After the flood: the victim's checks, the flooder's exit, umc-sm's counters. */
static void run_end(struct run *r, const char *const *counters)
{
	int i;

	flooder_stop(&r->f);
	victim_check(r->v);
	victim_close(r->v);
	free(r->v);
	assert_int_equal(test_sm_stop(&r->sm), 0);
	printf("# umc-sm:");
	for (i = 0; counters[i]; i++)
		printf(" %s %ld", counters[i], test_sm_counter(&r->sm, counters[i]));
	printf("\n");
}

/* May the flooder run as another user (nobody)?  Only as root. */
static bool can_be_other_user(void)
{
	return geteuid() == 0;
}

/*
 * Defect 2: one port created GROUPS_16K groups and sends GetTables of them
 * all as fast as it can; each used to be built and sorted before the BUSY
 * check, the SM fell behind, and the victim's renewals waited in its
 * backlog until the victim was expired.  The flooder is the victim's own
 * user: nothing but the order in which umc-sm serves protects the victim.
 */
static void test_gettable_flood(void **state)
{
	const char *const args[] = { "--max-groups-per-port", "16384", "--max-groups-per-host",
				     "16384", NULL };
	const char *const counters[] = { "deferred", "shed_query", "cap_rmpp", "sa_busy",
					 "rmpp_transfers", "lease_expired", NULL };
	struct run r;

	(void)state;
	run_start(&r, LEASE_MS, args, FLOOD_GETTABLE, GROUPS_16K, false);
	assert_true(victim_run(r.v, &r.f, 0, NULL, NULL));
	run_end(&r, counters);
	assert_true(test_sm_counter(&r.sm, "sa_busy") > 0); /* the flood was refused, cheaply */
	test_sm_free(&r.sm);
}

/* A new port registers, as a new process would; the time it took. */
static double fresh_port(const struct test_sm *sm)
{
	struct umc_sa_open_args a = { .timeout_ms = UMC_SA_REGISTER_TIMEOUT_MS };
	struct umc_sa_client *c;
	double t0 = now_ms_f();

	test_sm_addr(sm, &a.sm);
	assert_int_equal(umc_sa_open(&a, &c), 0);
	umc_sa_close(c);
	return now_ms_f() - t0;
}

struct fresh {
	const struct test_sm *sm;
	double ms;
};

static void fresh_midway(void *ctx)
{
	struct fresh *fr = ctx;

	fr->ms = fresh_port(fr->sm);
}

/*
 * Defect 3: REGISTERs from as many endpoints of 127/8 as the flooder can
 * open used to take every LID, and every later registration got
 * NO_RESOURCES for a whole lease (umc-sm's default here, so that the
 * flooder's ports live as long as they did).  The flooder's ports now
 * count against its source host (--max-ports-per-host), here another
 * user: a process of the victim's user registers during the flood and
 * after it, within the library's own registration timeout.
 */
static void test_register_flood(void **state)
{
	const char *const counters[] = { "deferred", "shed_register", "reg_new", "cap_ports",
					 "reg_refused", "lease_expired", NULL };
	struct fresh fr;
	struct run r;
	double after;
	bool midway;

	(void)state;
	if (!can_be_other_user())
		skip(); /* the flooder must be another user than the victim */
	run_start(&r, UMC_SM_LEASE_MS, NULL, FLOOD_REGISTER, 0, true);
	fr.sm = &r.sm;
	midway = victim_run(r.v, &r.f, FLOOD_MS / 2, fresh_midway, &fr);
	after = fresh_port(&r.sm);
	printf("# a new port registered in %.1f ms during the flood, %.1f ms after it\n", fr.ms,
	       after);
	run_end(&r, counters);
	assert_true(midway); /* else the victim's joins and leaves took the whole flood */
	assert_true(test_sm_counter(&r.sm, "cap_ports") > 0);
	test_sm_free(&r.sm);
}

/* The victim's GetTable of every group, during the hold: it needs a transfer of its own. */
static void table_midway(void *ctx)
{
	struct victim *v = ctx;
	struct umc_sa_result res;
	uint8_t mad[UMC_MAD_SIZE];
	double t0 = now_ms_f();

	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	assert_int_equal(umc_sa_call(v->c, mad, 0, UMC_SA_RETRIES, &res), 0);
	assert_int_equal(res.status, 0);
	assert_true(res.data_len >= (size_t)GROUPS_16K * UMC_MCMEMBER_STRIDE);
	printf("# victim GetTable of %zu records: %.1f ms\n", res.data_len / UMC_MCMEMBER_STRIDE,
	       now_ms_f() - t0);
	umc_sa_result_free(&res);
}

/*
 * Defect 5: HOLDERS ports of another user each start 4 GetTables of
 * GROUPS_16K groups and ACK one more segment every HOLD_ACK_MS: that held
 * the whole memory for transfers for minutes, and every other GetTable
 * got BUSY.  Their host now holds at most --max-rmpp-per-host transfers,
 * each for at most --rmpp-time-limit (2 s here, within the flood): the
 * victim's GetTable, while they hold theirs, is served.
 */
static void test_rmpp_hold(void **state)
{
	const char *const args[] = { "--max-groups-per-port", "16384", "--max-groups-per-host",
				     "16384", "--rmpp-time-limit", "2000", NULL };
	const char *const counters[] = { "rmpp_transfers", "shed_query", "cap_rmpp", "sa_busy",
					 "rmpp_too_long", "rmpp_acks", NULL };
	struct run r;
	bool midway;

	(void)state;
	if (!can_be_other_user())
		skip(); /* the holders must be another user than the victim */
	run_start(&r, LEASE_MS, args, FLOOD_RMPP_HOLD, GROUPS_16K, true);
	midway = victim_run(r.v, &r.f, FLOOD_MS / 4, table_midway, r.v);
	run_end(&r, counters);
	assert_true(midway); /* else the victim's joins and leaves took the whole flood */
	/* the holders' host got its --max-rmpp-per-host transfers, each ended at the limit */
	assert_true(test_sm_counter(&r.sm, "sa_busy") > 0);
	assert_true(test_sm_counter(&r.sm, "rmpp_too_long") >= UMC_SM_RMPP_MAX_PER_HOST);
	test_sm_free(&r.sm);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		cmocka_unit_test(test_gettable_flood),
		cmocka_unit_test(test_register_flood),
		cmocka_unit_test(test_rmpp_hold),
	};

	return cmocka_run_selected("sm_flood", all, sizeof(all) / sizeof(all[0]), argc, argv);
}
