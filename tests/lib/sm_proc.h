/* SPDX-License-Identifier: MIT */
/*
 * sm_proc.h - run umc-sm as a helper process of a test: start it on
 * 127.0.0.1 (any port or a given one), wait for its ready line, stop it
 * with SIGTERM, read its counters from its -v log.
 *
 * The binary is $UMC_BIN/umc-sm (ctest sets UMC_BIN).  It gets SIGTERM
 * when the test process ends (PR_SET_PDEATHSIG), stopped or not.  With
 * UMC_SM_VALGRIND=1 it runs under valgrind, which must find no error and
 * no leak (exit status 99 otherwise).
 */
#ifndef TESTS_LIB_SM_PROC_H
#define TESTS_LIB_SM_PROC_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/types.h>

struct test_sm {
	pid_t pid;
	uint16_t port;
	uint64_t epoch;
	char log_path[64]; /* its stderr, while it runs */
	char *log;	   /* that file's text after test_sm_stop() */
	int status;	   /* exit status after test_sm_stop() */
};

/*
 * test_sm_start - start umc-sm -v --listen 127.0.0.1:@port plus @args
 * (NULL-terminated, may be NULL) and wait up to 10 s for "ready".
 * Returns 0, or -1 (with a message on stderr).
 */
int test_sm_start(struct test_sm *sm, uint16_t port, const char *const *args);

/*
 * test_sm_stop - SIGTERM, wait up to 10 s (then SIGKILL), keep its log
 * (printed to stderr when the exit status is not 0).  Returns the exit
 * status, -1 if a signal ended it.
 */
int test_sm_stop(struct test_sm *sm);

/* test_sm_free - free the kept log. */
void test_sm_free(struct test_sm *sm);

/* test_sm_counter - a counter from the log of a stopped umc-sm, -1 if absent. */
long test_sm_counter(const struct test_sm *sm, const char *name);

/* test_sm_log_has - the log of umc-sm contains @text. */
int test_sm_log_has(const struct test_sm *sm, const char *text);

/* test_sm_addr - where it listens. */
void test_sm_addr(const struct test_sm *sm, struct sockaddr_in *a);

#endif /* TESTS_LIB_SM_PROC_H */
