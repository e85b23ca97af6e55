// SPDX-License-Identifier: MIT
/*
 * test_verbs_fork_race.c - a fork(2) in another thread while the library
 * makes a descriptor: the child holds none of the library's descriptors,
 * and the fork never deadlocks against the call (umcast(7), FORK).
 *
 * The test defines socket(2) itself, so the library's calls reach it
 * first: when armed, it makes the socket, then asks a second thread to
 * fork and waits up to RACE_WAIT_MS for that fork to return, before it
 * returns the socket to the library.  The child reports whether it holds
 * the socket (the same inode at the same number).  A library that makes
 * and records a descriptor as one step holds fork(2) off until the
 * descriptor is recorded, and the child of fork closes it; one that makes
 * it first and records it after lets the fork fall in between, and the
 * child keeps the socket for good (the unicast demultiplexer's address,
 * a QPN, a group membership).
 *
 * A descriptor can also come in with a datagram: a unicast
 * demultiplexer hands each client process a socket of its SO_REUSEPORT
 * group with SCM_RIGHTS, to the receive engine's unicast input.  The test
 * defines syscall(2) too (the engine's raw recvmmsg): when armed, a batch
 * that carries a descriptor asks for the fork in the same way before it
 * returns.  A child that kept such a socket would hold the group's port
 * for as long as it lives.
 *
 * Cases, each in a child of fork bounded by alarm(2):
 *   qp        ibv_create_qp on umc_lo (the QPN's socket, the agent's);
 *   uc_sock   a group socket the demultiplexer (a helper process) hands
 *             this process's engine when its QP registers;
 *   ib_probe  the first device probe with umc-sm (umc_ib0's sockets,
 *             made with the device list's lock held: fork takes that lock
 *             too, and must take the two in the library's one order, or
 *             the fork and the probe wait for each other for ever).
 */
#include "verbs_util.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define RACE_WAIT_MS 300 /* how long a made socket waits for the fork to fall in */

/* ------------------------------------------------------------------------- */
/* socket(2) and the engine's recvmmsg, raced.                               */

enum { RACE_SCM_RIGHTS = -1 }; /* race.family: a received descriptor, in any thread */

static struct {
	pthread_t caller; /* whose next socket() of family @family is raced */
	int family;
	bool armed;	  /* claimed with an atomic exchange: the engine may be another thread */
	int fd; /* the socket raced, and its identity */
	struct stat st;
	int go[2], forked[2]; /* to the forker, and back once its fork returned */
	int child_status;
} race;

/* @fd was just made or received: have the forker fork, and wait for it up to RACE_WAIT_MS. */
static void race_fork_now(int fd)
{
	struct pollfd pfd = {.fd = race.forked[0], .events = POLLIN};

	race.fd = fd;
	fstat(fd, &race.st);
	(void)!write(race.go[1], "f", 1);
	(void)poll(&pfd, 1, RACE_WAIT_MS); /* the fork falls in here, unless held off */
}

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);
	int fd;

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	fd = real(domain, type, protocol);
	if (fd < 0 || domain != race.family || !pthread_equal(pthread_self(), race.caller) ||
	    !__atomic_exchange_n(&race.armed, false, __ATOMIC_ACQ_REL))
		return fd;
	race_fork_now(fd);
	return fd;
}

/* The first descriptor that @n received datagrams carry (SCM_RIGHTS), or -1. */
static int scm_fd(struct mmsghdr *msg, long n)
{
	for (long i = 0; i < n; i++) {
		struct msghdr *mh = &msg[i].msg_hdr;

		for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
				int fd;

				memcpy(&fd, CMSG_DATA(c), sizeof(fd));
				return fd;
			}
	}
	return -1;
}

/* syscall(2), through which the engine makes its recvmmsg (umc_sys.h). */
long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], r;
	va_list ap;
	int fd;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	r = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (nr != SYS_recvmmsg || r <= 0 || race.family != RACE_SCM_RIGHTS ||
	    !__atomic_load_n(&race.armed, __ATOMIC_ACQUIRE))
		return r;
	fd = scm_fd((struct mmsghdr *)a[1], r);
	if (fd >= 0 && __atomic_exchange_n(&race.armed, false, __ATOMIC_ACQ_REL))
		race_fork_now(fd);
	return r;
}

/* The forker: one fork on request; the child says 1 if it holds the raced socket. */
static void *forker(void *arg)
{
	struct stat st;
	char c;
	pid_t pid;

	(void)arg;
	if (read(race.go[0], &c, 1) != 1)
		return NULL;
	pid = fork();
	if (pid == 0)
		_exit(fstat(race.fd, &st) == 0 && st.st_ino == race.st.st_ino &&
		      st.st_dev == race.st.st_dev);
	(void)!write(race.forked[1], "d", 1);
	if (pid < 0 || waitpid(pid, &race.child_status, 0) != pid)
		race.child_status = -1;
	return NULL;
}

/* The case's checks: exit 12 with @what on stderr when @ok is false. */
static void need(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "failed: %s (errno %d)\n", what, errno);
		_exit(12);
	}
}

/*
 * Run @call(@arg) with the calling thread's next socket() of @family raced
 * by a fork, or (RACE_SCM_RIGHTS) the first descriptor any thread receives.
 */
static void raced(int family, void (*call)(void *), void *arg)
{
	pthread_t t;

	need(pipe(race.go) == 0 && pipe(race.forked) == 0, "pipe");
	need(pthread_create(&t, NULL, forker, NULL) == 0, "pthread_create");
	race.caller = pthread_self();
	race.family = family;
	race.fd = -1;
	__atomic_store_n(&race.armed, true, __ATOMIC_RELEASE);
	call(arg);
	need(!__atomic_load_n(&race.armed, __ATOMIC_ACQUIRE),
	     family == RACE_SCM_RIGHTS ? "a descriptor came in" : "the call made a socket");
	need(pthread_join(t, NULL) == 0, "pthread_join");
	need(WIFEXITED(race.child_status), "the child of the fork exited");
	if (WEXITSTATUS(race.child_status) != 0) {
		fprintf(stderr, "the child of fork holds the library's socket (fd %d)\n", race.fd);
		_exit(13);
	}
}

/* ------------------------------------------------------------------------- */
/* The cases.                                                                */

static struct ibv_pd *g_pd;
static struct ibv_cq *g_cq;
static struct ibv_qp *g_qp;

static void c_create_qp(void *arg)
{
	(void)arg;
	g_qp = t_create_qp(g_pd, g_cq, 0);
}

/* On umc_lo, @call makes g_qp with race(@family) armed; then all goes. */
static void qp_raced(int family, void (*call)(void *))
{
	struct ibv_context *ctx = t_open_dev("umc_lo");

	need(ctx != NULL, "umc_lo");
	g_pd = ibv_alloc_pd(ctx);
	g_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	need(g_pd && g_cq, "ibv_alloc_pd, ibv_create_cq");
	raced(family, call, NULL);
	need(g_qp != NULL, "ibv_create_qp");
	need(ibv_destroy_qp(g_qp) == 0, "ibv_destroy_qp");
	need(ibv_destroy_cq(g_cq) == 0 && ibv_dealloc_pd(g_pd) == 0, "teardown");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

static void body_qp(void)
{
	qp_raced(AF_UNIX, c_create_qp);
}

/*
 * The helper: a process of its own with a QP on umc_lo, which makes it
 * the demultiplexer of 127.0.0.1 (or a client of the one there is); it
 * says so on @ready and lives until @hold is closed (or its alarm).
 */
static void uc_helper(int ready, int hold)
{
	struct ibv_context *ctx = t_open_dev("umc_lo");
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp = cq ? t_create_qp(pd, cq, 0) : NULL;
	char c;

	alarm(T_CHILD_ALARM_S);
	(void)!write(ready, qp ? "y" : "n", 1);
	(void)!read(hold, &c, 1);
	_exit(0);
}

/* The QP registers with the demultiplexer; its engine runs until a descriptor came in. */
static void c_uc_register(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	g_qp = t_create_qp(g_pd, g_cq, 0);
	for (int ms = 0; g_qp && ms < 3000 && __atomic_load_n(&race.armed, __ATOMIC_ACQUIRE);
	     ms++) {
		(void)ibv_poll_cq(g_cq, 1, &wc);
		usleep(1000);
	}
}

static void body_uc_sock(void)
{
	int ready[2], hold[2];
	pid_t helper;
	char c = 0;

	need(pipe(ready) == 0 && pipe(hold) == 0, "pipe");
	helper = fork();
	need(helper >= 0, "fork the helper");
	if (helper == 0) {
		close(hold[1]);
		uc_helper(ready[1], hold[0]);
	}
	close(hold[0]);
	need(read(ready[0], &c, 1) == 1 && c == 'y', "the helper's QP on umc_lo");
	qp_raced(RACE_SCM_RIGHTS, c_uc_register);
	close(hold[1]);
	need(waitpid(helper, NULL, 0) == helper, "the helper's exit");
}

/* Does the demultiplexer hand sockets over?  Not with UMC_UC_STEER=0: it passes every datagram on. */
static bool uc_steering(void)
{
	const char *steer = getenv("UMC_UC_STEER");

	return !steer || *steer != '0';
}

static void c_device_list(void *arg)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	*(bool *)arg = list != NULL;
	if (list)
		ibv_free_device_list(list);
}

static void body_ib_probe(void)
{
	struct ibv_context *ctx;
	bool listed = false;

	raced(AF_INET, c_device_list, &listed);
	need(listed, "the device list");
	ctx = t_open_dev("umc_ib0");
	need(ctx && t_ib_port_active(ctx), "umc_ib0 ACTIVE");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* ------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		T_CHILD_CASE(qp, NULL),
		T_CHILD_CASE(uc_sock, uc_steering),
		T_CHILD_CASE(ib_probe, t_sm_running),
	};

	/* umc-sm before anything probes, so that every case probes afresh, with umc_ib0. */
	return cmocka_run_group_tests(tests, t_sm_optional, t_sm_stop);
}
