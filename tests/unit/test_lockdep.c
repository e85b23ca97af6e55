// SPDX-License-Identifier: MIT
/*
 * test_lockdep.c - the lock order check of a UMC_LOCKDEP build (umc_lock.h,
 * verbs/lockdep.c): locks taken in rank order pass, a lock of an earlier
 * rank taken while a later one is held aborts the process naming both,
 * two of one rank nest only through the _nested wrapper, a trylock is
 * never refused, and an unlocked lock no longer counts.  Each case runs in
 * a child, whose end (exit or SIGABRT) and stderr are checked.  Without
 * UMC_LOCKDEP (the plain suite) the wrappers are the pthread calls and
 * every case is skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "umc_int.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER; /* as UMC_LOCK_DEV_RX */
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER; /* as UMC_LOCK_DEV */
static pthread_mutex_t peer = PTHREAD_MUTEX_INITIALIZER;  /* another of inner's rank */

/* Run @fn in a child; its stderr into @err (NUL-terminated).  Returns its wait status. */
static int run_child(void (*fn)(void), char *err, size_t cap)
{
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got + 1 < (ssize_t)cap && (n = read(fds[0], err + got, cap - 1 - got)) > 0)
		got += n;
	err[got] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void in_order(void)
{
	pthread_spinlock_t s;

	pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE);
	umc_mutex_lock(&outer, UMC_LOCK_DEV_RX);
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	umc_spin_lock(&s, UMC_LOCK_QP_RQ);
	umc_spin_unlock(&s);
	umc_mutex_unlock(&inner);
	umc_mutex_unlock(&outer);
}

static void reversed(void)
{
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	umc_mutex_lock(&outer, UMC_LOCK_DEV_RX);
}

static void same_rank(void)
{
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	umc_mutex_lock(&peer, UMC_LOCK_DEV);
}

static void same_rank_nested(void)
{
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	umc_mutex_lock_nested(&peer, UMC_LOCK_DEV);
	umc_mutex_unlock(&peer);
	umc_mutex_unlock(&inner);
}

static void trylock_reversed(void)
{
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	if (umc_mutex_trylock(&outer, UMC_LOCK_DEV_RX) == 0)
		umc_mutex_unlock(&outer);
	umc_mutex_unlock(&inner);
}

static void unlocked_then_outer(void)
{
	umc_mutex_lock(&inner, UMC_LOCK_DEV);
	umc_mutex_unlock(&inner);
	umc_mutex_lock(&outer, UMC_LOCK_DEV_RX);
	umc_mutex_unlock(&outer);
}

#ifdef UMC_LOCKDEP
#define NEED_LOCKDEP()
#else
#define NEED_LOCKDEP() skip()
#endif

static void expect_exit0(void (*fn)(void))
{
	char err[1024];
	int status = run_child(fn, err, sizeof(err));

	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_string_equal(err, "");
}

static void expect_abort(void (*fn)(void), const char *wanted, const char *held)
{
	char err[1024];
	int status = run_child(fn, err, sizeof(err));

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_non_null(strstr(err, wanted));
	assert_non_null(strstr(err, held));
	assert_non_null(strstr(err, "test_lockdep.c:"));
}

static void test_in_order(void **state)
{
	NEED_LOCKDEP();
	expect_exit0(in_order);
}

static void test_reversed_aborts(void **state)
{
	NEED_LOCKDEP();
	expect_abort(reversed, "out of order: UMC_LOCK_DEV_RX", "while holding UMC_LOCK_DEV taken");
}

static void test_same_rank(void **state)
{
	NEED_LOCKDEP();
	expect_abort(same_rank, "out of order: UMC_LOCK_DEV at", "while holding UMC_LOCK_DEV taken");
	expect_exit0(same_rank_nested);
}

static void test_trylock_and_unlock(void **state)
{
	NEED_LOCKDEP();
	expect_exit0(trylock_reversed);
	expect_exit0(unlocked_then_outer);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_reversed_aborts),
		cmocka_unit_test(test_same_rank),
		cmocka_unit_test(test_trylock_and_unlock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
