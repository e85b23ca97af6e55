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
 * Cases, each in a child of fork bounded by alarm(2):
 *   qp        ibv_create_qp on umc_lo (the QPN's socket, the agent's);
 *   ib_probe  the first device probe with umc-sm (umc_ib0's sockets,
 *             made with the device list's lock held: fork takes that lock
 *             too, and must take the two in the library's one order, or
 *             the fork and the probe wait for each other for ever).
 */
#include "test_verbs_common.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define RACE_WAIT_MS 300 /* how long a made socket waits for the fork to fall in */

/* ------------------------------------------------------------------------- */
/* socket(2), raced.                                                          */

static struct {
	pthread_t caller; /* whose next socket() of family @family is raced */
	int family;
	bool armed;
	int fd; /* the socket raced, and its identity */
	struct stat st;
	int go[2], forked[2]; /* to the forker, and back once its fork returned */
	int child_status;
} race;

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);
	struct pollfd pfd;
	int fd;

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	fd = real(domain, type, protocol);
	if (fd < 0 || !race.armed || domain != race.family ||
	    !pthread_equal(pthread_self(), race.caller))
		return fd;
	race.armed = false;
	race.fd = fd;
	fstat(fd, &race.st);
	(void)!write(race.go[1], "f", 1);
	pfd = (struct pollfd){.fd = race.forked[0], .events = POLLIN};
	(void)poll(&pfd, 1, RACE_WAIT_MS); /* the fork falls in here, unless held off */
	return fd;
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

/* Run @call(@arg) with the calling thread's next socket() of @family raced by a fork. */
static void raced(int family, void (*call)(void *), void *arg)
{
	pthread_t t;

	need(pipe(race.go) == 0 && pipe(race.forked) == 0, "pipe");
	need(pthread_create(&t, NULL, forker, NULL) == 0, "pthread_create");
	race.caller = pthread_self();
	race.family = family;
	race.fd = -1;
	race.armed = true;
	call(arg);
	need(!race.armed, "the call made a socket");
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

static void body_qp(void)
{
	struct ibv_context *ctx = t_open_dev("umc_lo");

	need(ctx != NULL, "umc_lo");
	g_pd = ibv_alloc_pd(ctx);
	g_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	need(g_pd && g_cq, "ibv_alloc_pd, ibv_create_cq");
	raced(AF_UNIX, c_create_qp, NULL);
	need(g_qp != NULL, "ibv_create_qp");
	need(ibv_destroy_qp(g_qp) == 0, "ibv_destroy_qp");
	need(ibv_destroy_cq(g_cq) == 0 && ibv_dealloc_pd(g_pd) == 0, "teardown");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
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
	const struct CMUnitTest tests[] = {T_CHILD_CASE(qp, false), T_CHILD_CASE(ib_probe, true)};

	/* umc-sm before anything probes, so that every case probes afresh, with umc_ib0. */
	return cmocka_run_group_tests(tests, t_sm_optional, t_sm_stop);
}
