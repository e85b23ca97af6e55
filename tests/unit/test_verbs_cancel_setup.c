// SPDX-License-Identifier: MIT
/*
 * test_verbs_cancel_setup.c - a call that sets up or tears down, made by a
 * thread with a cancel pending, is not ended inside with one of the
 * library's locks held (pthreads(7); thread.c lists the stretches).
 *
 * A thread whose cancel was requested while its cancellation was disabled,
 * then enabled again, ends at its first cancellation point.  Each case
 * makes one call on such a thread: the call must return with its usual
 * result (the cancel then takes effect after it), and the calls that
 * follow on the same objects must succeed, where a lock left held would
 * hang them.  Every case runs in a child of fork, so that the device list
 * is probed afresh there, under alarm(2) as the bound on a hang.
 *
 * Without the fixes these calls were ended in getifaddrs(3) (the first
 * probe and the re-probe of an unknown address, under the device list's
 * lock), in connect(2) (rdma_resolve_addr's route lookup and
 * rdma_join_multicast's, under the id's lock), in open(2) of
 * /proc/self/maps (ibv_reg_mr, leaking the descriptor), in the fork
 * handler's open(2) (the child of a fork() ended before fork() returned
 * in it), and on InfiniBand in the SA client's LID resolution
 * (ibv_create_ah: its lock held and a waiter left on a dead stack) and in
 * a leave's write(2) to the SA thread (under the id's lock).
 */
#include "test_cm_util.h"
#include "verbs_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#define GROUP "239.1.77.1"
#define IB_ADDR "127.0.0.2" /* umc_ib0's IPoIB address (UMC_IB_ADDR's default) */

/* ------------------------------------------------------------------------- */
/* One call on a thread with a cancel pending.                               */

struct pending {
	intptr_t (*call)(void *arg);
	void *arg;
	intptr_t ret;
	int err;
	bool returned;
};

static void *pending_thread(void *p)
{
	struct pending *pe = p;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cancel(pthread_self());
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	pe->ret = pe->call(pe->arg); /* no cancellation point after the call */
	pe->err = errno;
	pe->returned = true;
	return NULL;
}

/* In a child: @call(@arg) with a cancel pending: its result and errno; exit 10 if ended inside. */
static intptr_t call_pending(intptr_t (*call)(void *), void *arg)
{
	struct pending pe = {.call = call, .arg = arg};
	pthread_t t;

	if (pthread_create(&t, NULL, pending_thread, &pe) || pthread_join(t, NULL))
		_exit(11);
	if (!pe.returned) {
		fprintf(stderr, "the call was ended inside by the cancel\n");
		_exit(10);
	}
	errno = pe.err;
	return pe.ret;
}

/* The child's checks: exit 12 with @what on stderr when @ok is false. */
static void need(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "failed: %s (errno %d)\n", what, errno);
		_exit(12);
	}
}

/* The child's open descriptors. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	need(d != NULL, "opendir /proc/self/fd");
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the DIR's own */
}

/* The next CM event of @ch is @type (acked); false if another or none within T_WAIT_MS. */
static bool next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;
	bool ok;

	if (!tcm_readable(ch, T_WAIT_MS) || rdma_get_cm_event(ch, &ev))
		return false;
	ok = ev->event == type && ev->status == 0;
	rdma_ack_cm_event(ev);
	return ok;
}

/* ------------------------------------------------------------------------- */
/* The calls.                                                                */

static intptr_t c_device_list(void *arg)
{
	(void)arg;
	return (intptr_t)ibv_get_device_list(NULL);
}

static struct rdma_cm_id *g_id;
static struct rdma_event_channel *g_ch;
static struct sockaddr_in g_addr;

static intptr_t c_bind(void *arg)
{
	(void)arg;
	return rdma_bind_addr(g_id, SA(&g_addr));
}

static intptr_t c_resolve(void *arg)
{
	(void)arg;
	return rdma_resolve_addr(g_id, NULL, SA(&g_addr), 1000);
}

static intptr_t c_join(void *arg)
{
	return tcm_join(g_id, arg, RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL);
}

static intptr_t c_leave(void *arg)
{
	return tcm_leave(g_id, arg);
}

static struct ibv_pd *g_pd;
static struct ibv_cq *g_cq;

static intptr_t c_create_qp(void *arg)
{
	(void)arg;
	return (intptr_t)t_create_qp(g_pd, g_cq, 0);
}

static intptr_t c_destroy_qp(void *qp)
{
	return ibv_destroy_qp(qp);
}

static intptr_t c_reg_mr(void *buf)
{
	return (intptr_t)ibv_reg_mr(g_pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
}

static intptr_t c_fork(void *arg)
{
	pid_t pid = fork();

	(void)arg;
	if (pid == 0)
		_exit(7); /* reached only if the fork handlers did not end the child */
	return pid;
}

static struct ibv_ah_attr g_ah_attr;

static intptr_t c_create_ah(void *arg)
{
	(void)arg;
	return (intptr_t)ibv_create_ah(g_pd, &g_ah_attr);
}

/* ------------------------------------------------------------------------- */
/* The cases (bodies run in the child).                                      */

/* The first probe: ibv_get_device_list, then the list again and a device opened. */
static void body_first_probe(void)
{
	struct ibv_device **list = (void *)call_pending(c_device_list, NULL);
	struct ibv_context *ctx;

	need(list && list[0], "the device list, probed with a cancel pending");
	ibv_free_device_list(list);
	ctx = t_open_dev("umc_lo");
	need(ctx != NULL, "umc_lo opened after it");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* An id on a new channel. */
static void id_open(void)
{
	g_ch = rdma_create_event_channel();
	need(g_ch != NULL, "rdma_create_event_channel");
	need(rdma_create_id(g_ch, &g_id, NULL, RDMA_PS_UDP) == 0, "rdma_create_id");
}

static void id_close(void)
{
	need(rdma_destroy_id(g_id) == 0, "rdma_destroy_id");
	rdma_destroy_event_channel(g_ch);
}

/* rdma_bind_addr to an address no device has: the re-probe, then a bind that works. */
static void body_bind_unknown(void)
{
	id_open();
	g_addr = tcm_sin("10.254.253.252", 0);
	need(call_pending(c_bind, NULL) == -1 && errno == EADDRNOTAVAIL,
	     "EADDRNOTAVAIL for an address no device has");
	g_addr = tcm_sin(LOOPBACK, 0);
	need(rdma_bind_addr(g_id, SA(&g_addr)) == 0, "rdma_bind_addr 127.0.0.1 after it");
	id_close();
}

/* rdma_resolve_addr (the route lookup): 0, then ADDR_RESOLVED and a destroy. */
static void body_resolve(void)
{
	id_open();
	g_addr = tcm_sin(LOOPBACK, 0);
	need(call_pending(c_resolve, NULL) == 0, "rdma_resolve_addr");
	need(next_event(g_ch, RDMA_CM_EVENT_ADDR_RESOLVED), "ADDR_RESOLVED");
	id_close();
}

/* A bound id with a CM-made QP, on @addr. */
static void id_with_qp(const char *addr)
{
	struct ibv_qp_init_attr qa = tcm_ud_attr(4);

	id_open();
	g_addr = tcm_sin(addr, 0);
	need(rdma_bind_addr(g_id, SA(&g_addr)) == 0, "rdma_bind_addr");
	need(rdma_create_qp(g_id, NULL, &qa) == 0, "rdma_create_qp");
}

/* rdma_join_multicast on @addr's id (the route; the SA on InfiniBand), then leave. */
static void join_then_leave(const char *addr, const char *group)
{
	id_with_qp(addr);
	need(call_pending(c_join, (void *)group) == 0, "rdma_join_multicast_ex");
	need(next_event(g_ch, RDMA_CM_EVENT_MULTICAST_JOIN), "MULTICAST_JOIN");
	need(tcm_leave(g_id, group) == 0, "rdma_leave_multicast after it");
	rdma_destroy_qp(g_id);
	id_close();
}

static void body_join(void)
{
	join_then_leave(LOOPBACK, GROUP);
}

/* rdma_leave_multicast on @addr's id (the SA on InfiniBand), then the id destroyed. */
static void join_and_leave(const char *addr, const char *group)
{
	id_with_qp(addr);
	need(tcm_join(g_id, group, RDMA_MC_JOIN_FLAG_FULLMEMBER, NULL) == 0, "join");
	need(next_event(g_ch, RDMA_CM_EVENT_MULTICAST_JOIN), "MULTICAST_JOIN");
	need(call_pending(c_leave, (void *)group) == 0, "rdma_leave_multicast");
	rdma_destroy_qp(g_id);
	id_close();
}

static void body_leave(void)
{
	join_and_leave(LOOPBACK, GROUP);
}

/* A PD and a CQ on umc_lo (or @name). */
static struct ibv_context *verbs_open(const char *name)
{
	struct ibv_context *ctx = t_open_dev(name);

	need(ctx != NULL, name);
	g_pd = ibv_alloc_pd(ctx);
	g_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	need(g_pd && g_cq, "ibv_alloc_pd, ibv_create_cq");
	return ctx;
}

static void verbs_close(struct ibv_context *ctx)
{
	need(ibv_destroy_cq(g_cq) == 0, "ibv_destroy_cq");
	need(ibv_dealloc_pd(g_pd) == 0, "ibv_dealloc_pd");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* ibv_create_qp, ibv_destroy_qp (the unicast demultiplexer), then another QP. */
static void body_qp(void)
{
	struct ibv_context *ctx = verbs_open("umc_lo");
	struct ibv_qp *qp = (void *)call_pending(c_create_qp, NULL), *again;

	need(qp != NULL, "ibv_create_qp");
	need(call_pending(c_destroy_qp, qp) == 0, "ibv_destroy_qp");
	again = t_create_qp(g_pd, g_cq, 0);
	need(again != NULL, "ibv_create_qp after it");
	need(ibv_destroy_qp(again) == 0, "ibv_destroy_qp after it");
	verbs_close(ctx);
}

/* ibv_reg_mr (/proc/self/maps): an MR, and no descriptor left open. */
static void body_reg_mr(void)
{
	struct ibv_context *ctx = verbs_open("umc_lo");
	static uint8_t buf[4096];
	struct ibv_mr *mr;
	int fds = open_fds();

	mr = (void *)call_pending(c_reg_mr, buf);
	need(mr != NULL, "ibv_reg_mr");
	need(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	need(open_fds() == fds, "no descriptor left open");
	verbs_close(ctx);
}

/* fork(2), with a device open: the child runs on past fork() (the library's handlers). */
static void body_fork(void)
{
	struct ibv_context *ctx = verbs_open("umc_lo");
	pid_t pid = (pid_t)call_pending(c_fork, NULL);
	int status;

	need(pid > 0, "fork");
	need(waitpid(pid, &status, 0) == pid, "waitpid");
	need(WIFEXITED(status) && WEXITSTATUS(status) == 7, "the child ran on past fork()");
	verbs_close(ctx);
}

/* InfiniBand: the first probe registers umc_ib0 with umc-sm, which must bring it up. */
static void body_ib_probe(void)
{
	struct ibv_device **list = (void *)call_pending(c_device_list, NULL);
	struct ibv_context *ctx;

	need(list != NULL, "the device list");
	ibv_free_device_list(list);
	ctx = t_open_dev("umc_ib0");
	need(ctx && t_ib_port_active(ctx), "umc_ib0 ACTIVE after it");
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* InfiniBand: ibv_create_ah to the port's own LID waits for the SA's answer. */
static void body_ib_ah(void)
{
	struct ibv_context *ctx = verbs_open("umc_ib0");
	struct ibv_port_attr pa;
	struct ibv_ah *ah;

	need(t_ib_port_active(ctx) && ibv_query_port(ctx, 1, &pa) == 0, "umc_ib0 ACTIVE");
	g_ah_attr = (struct ibv_ah_attr){.dlid = pa.lid, .port_num = 1};
	ah = (void *)call_pending(c_create_ah, NULL);
	need(ah != NULL, "ibv_create_ah");
	need(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah");
	ah = ibv_create_ah(g_pd, &g_ah_attr);
	need(ah != NULL, "ibv_create_ah after it");
	need(ibv_destroy_ah(ah) == 0, "ibv_destroy_ah after it");
	verbs_close(ctx);
}

/* InfiniBand: rdma_join_multicast (the SA's MCMemberRecord), then leave. */
static void body_ib_join(void)
{
	struct ibv_context *ctx = t_open_dev("umc_ib0");

	need(ctx && t_ib_port_active(ctx), "umc_ib0 ACTIVE");
	join_then_leave(IB_ADDR, GROUP);
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* InfiniBand: rdma_leave_multicast (the SA's DELETE), then the id destroyed. */
static void body_ib_leave(void)
{
	struct ibv_context *ctx = t_open_dev("umc_ib0");

	need(ctx && t_ib_port_active(ctx), "umc_ib0 ACTIVE");
	join_and_leave(IB_ADDR, GROUP);
	need(ibv_close_device(ctx) == 0, "ibv_close_device");
}

/* ------------------------------------------------------------------------- */

int main(void)
{
	const struct CMUnitTest tests[] = {
		T_CHILD_CASE(first_probe, NULL),
		T_CHILD_CASE(bind_unknown, NULL),
		T_CHILD_CASE(resolve, NULL),
		T_CHILD_CASE(join, NULL),
		T_CHILD_CASE(leave, NULL),
		T_CHILD_CASE(qp, NULL),
		T_CHILD_CASE(reg_mr, NULL),
		T_CHILD_CASE(fork, NULL),
		T_CHILD_CASE(ib_probe, t_sm_running),
		T_CHILD_CASE(ib_ah, t_sm_running),
		T_CHILD_CASE(ib_join, t_sm_running),
		T_CHILD_CASE(ib_leave, t_sm_running),
	};

	/* umc-sm before anything probes, so that every child probes afresh, with umc_ib0. */
	return cmocka_run_group_tests(tests, t_sm_optional, t_sm_stop);
}
