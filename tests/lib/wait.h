/* SPDX-License-Identifier: MIT */
/*
 * wait.h - the bounded waits of the C tests (tests/lib/wait.c).
 *
 * Every wait of a test ends by itself: when what it waits for comes, or at
 * its bound, a few seconds after the moment it was expected.  A test never
 * sleeps for a fixed time and never waits without a bound; a phase that
 * waits for several things in turn takes one deadline (t_deadline) and
 * gives each wait what is left of it (t_left_ms), so that a failure costs
 * the phase's bound once, not once per thing awaited.  Processes a test
 * starts are reaped with a bound too, and killed at it.
 *
 * The shell tests' counterpart is tests/lib/wait.sh.
 */
#ifndef TESTS_LIB_WAIT_H
#define TESTS_LIB_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* t_now_ms - CLOCK_MONOTONIC in milliseconds. */
uint64_t t_now_ms(void);

/* t_deadline - the moment @ms milliseconds from now (t_now_ms() scale). */
uint64_t t_deadline(int ms);

/* t_left_ms - milliseconds until @end, 0 once it has passed: a poll(2) timeout. */
int t_left_ms(uint64_t end);

/*
 * t_wait_fd - wait up to @ms (or, with @ms < 0, without a bound) until
 * @fd is readable (or at EOF or in error).  Returns true if it is.
 */
bool t_wait_fd(int fd, int ms);

/* t_read_full - read exactly @n bytes from @fd within @ms; false on EOF, error or timeout. */
bool t_read_full(int fd, void *buf, size_t n, int ms);

/*
 * t_read_line - read one line (at most @cap - 1 bytes, without its
 * newline, NUL-terminated) from @fd within @ms, or without a bound if
 * @ms < 0; false on EOF, error or timeout.  Reads byte by byte, so nothing
 * after the newline is taken from @fd.
 */
bool t_read_line(int fd, char *line, size_t cap, int ms);

/*
 * t_reap - wait up to @ms for child @pid to exit; SIGKILL it after that.
 * Returns its exit status, 128 + the signal that ended it, or -1 if it
 * had to be killed (or was no child).
 */
int t_reap(pid_t pid, int ms);

/* t_stop - SIGTERM child @pid, then t_reap(@pid, @ms). */
int t_stop(pid_t pid, int ms);

#endif /* TESTS_LIB_WAIT_H */
