// SPDX-License-Identifier: MIT
/*
 * test_verbs_signals.c - the library's own threads take none of the
 * application's signals.
 *
 * libibverbs and librdmacm start no threads, so a program that blocks a
 * signal in its threads, to take it with signalfd(2) or sigwait(3), gets
 * every such signal there.  umcast starts threads of its own (the
 * background receive thread, the unicast agent, and on InfiniBand the SA
 * client and the port's registration): a process-directed signal goes to
 * any thread that does not block it (signal(7)), so each of them must
 * block every signal, whatever the mask of the thread that made it.
 * Each case runs in a child with every signal unblocked while the library
 * starts its threads; the child then blocks SIGUSR1 in its one thread,
 * reads /proc/self/task to find every thread blocking it, and sends the
 * process SIGUSR1, which must arrive on its signalfd (SIGUSR1's default
 * action would end the process, had another thread taken it).
 */
#include "verbs_util.h"

#include <dirent.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Does thread @tid of this process block signal @sig (SigBlk in its status)? */
static bool task_blocks(const char *tid, int sig)
{
	char path[300], line[256];
	unsigned long long mask = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			found = true;
	fclose(f);
	assert_true(found);
	return mask >> (sig - 1) & 1;
}

/* The threads of this process other than the caller: how many, and how many block @sig. */
static void other_threads(int sig, int *n, int *blocking)
{
	DIR *d = opendir("/proc/self/task");
	long self = syscall(SYS_gettid);
	struct dirent *de;

	assert_non_null(d);
	*n = *blocking = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strtol(de->d_name, NULL, 10) == self)
			continue;
		(*n)++;
		*blocking += task_blocks(de->d_name, sig);
	}
	closedir(d);
}

/*
 * In a child: with every signal unblocked, @start makes the library start
 * its threads (at least @min_threads of them); then SIGUSR1, blocked in
 * the child's own thread, must come through its signalfd.
 */
static void check_in_child(void (*start)(void), int min_threads)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct signalfd_siginfo si;
		sigset_t none, usr1;
		int n, blocking, sfd;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		start();
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		other_threads(SIGUSR1, &n, &blocking);
		if (n < min_threads || blocking != n) {
			fprintf(stderr, "%d other threads, %d of them block SIGUSR1\n", n, blocking);
			_exit(2);
		}
		sfd = signalfd(-1, &usr1, SFD_CLOEXEC);
		kill(getpid(), SIGUSR1);
		struct pollfd p = {.fd = sfd, .events = POLLIN};

		if (poll(&p, 1, T_WAIT_MS) != 1 || read(sfd, &si, sizeof(si)) != sizeof(si) ||
		    si.ssi_signo != SIGUSR1)
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fail_msg("the child was ended by signal %d: another thread took it",
			 WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* RoCE: a QP (the unicast agent) and a poll (the background receive thread). */
static void start_roce(void)
{
	struct t_env e;
	struct t_qp q;
	struct ibv_wc wc;

	t_env_open(&e, 0, false);
	t_qp_make(&q, e.pd, 0, T_QKEY);
	(void)ibv_poll_cq(q.cq, 1, &wc);
	/* Left open: the threads stay for the check. */
}

static void test_roce_threads_block_signals(void **state)
{
	check_in_child(start_roce, 2);
}

/* InfiniBand: the port registered with umc-sm (the SA client) and a QP. */
static void start_ib(void)
{
	struct ibv_context *ctx = t_open_dev("umc_ib0");
	struct ibv_pd *pd;
	struct t_qp q;
	struct ibv_wc wc;

	if (!ctx || !t_ib_port_active(ctx))
		_exit(4);
	pd = ibv_alloc_pd(ctx);
	t_qp_make(&q, pd, 0, T_QKEY);
	(void)ibv_poll_cq(q.cq, 1, &wc);
}

static void test_ib_threads_block_signals(void **state)
{
	if (!t_sm_running())
		skip();
	check_in_child(start_ib, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roce_threads_block_signals),
	    cmocka_unit_test(test_ib_threads_block_signals),
	};

	return cmocka_run_group_tests(tests, t_sm_optional, t_sm_stop);
}
