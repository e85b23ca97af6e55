// SPDX-License-Identifier: MIT
/*
 * sm_proc.c - umc-sm as a test helper process (sm_proc.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sm_proc.h"
#include "wait.h"

enum {
	READY_WAIT_MS = 10000, /* up, even under valgrind on a loaded machine */
	STOP_WAIT_MS = 10000,  /* SIGTERM to exit, valgrind's leak check included */
	MAX_ARGS = 32,
};

static void child(int out, int err, const char *listen, const char *const *args)
{
	const char *bin = getenv("UMC_BIN");
	const char *argv[MAX_ARGS + 12];
	char path[4096];
	int n = 0, i;

	snprintf(path, sizeof(path), "%s/umc-sm", bin ? bin : "build/bin");
	if (getenv("UMC_SM_VALGRIND") && atoi(getenv("UMC_SM_VALGRIND"))) {
		argv[n++] = "valgrind";
		argv[n++] = "-q";
		argv[n++] = "--error-exitcode=99";
		argv[n++] = "--leak-check=full";
		argv[n++] = "--errors-for-leak-kinds=definite,indirect,possible";
	}
	argv[n++] = path;
	argv[n++] = "-v";
	argv[n++] = "--listen";
	argv[n++] = listen;
	for (i = 0; args && args[i] && i < MAX_ARGS; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	/* Gone with the test process, even one that failed without stopping it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	dup2(out, 1);
	dup2(err, 2);
	execvp(argv[0], (char *const *)argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int test_sm_start(struct test_sm *sm, uint16_t port, const char *const *args)
{
	char listen[32], line[256];
	int out[2], err;
	unsigned p;
	unsigned long long epoch;

	memset(sm, 0, sizeof(*sm));
	snprintf(sm->log_path, sizeof(sm->log_path), "/tmp/umc-sm-test.XXXXXX");
	err = mkstemp(sm->log_path);
	if (err < 0 || pipe(out)) {
		perror("test_sm_start");
		return -1;
	}
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	sm->pid = fork();
	if (sm->pid < 0)
		return -1;
	if (!sm->pid) {
		close(out[0]);
		child(out[1], err, listen, args);
	}
	close(out[1]);
	close(err);
	if (!t_read_line(out[0], line, sizeof(line), READY_WAIT_MS))
		line[0] = 0;
	close(out[0]);
	if (sscanf(line, "umc-sm: ready on 127.0.0.1:%u epoch 0x%llx", &p, &epoch) != 2) {
		fprintf(stderr, "umc-sm did not get ready within %d ms: '%s'\n", READY_WAIT_MS, line);
		t_reap(sm->pid, 0);
		sm->pid = 0;
		unlink(sm->log_path);
		return -1;
	}
	sm->port = (uint16_t)p;
	sm->epoch = epoch;
	return 0;
}

static char *read_log(const struct test_sm *sm)
{
	FILE *f = fopen(sm->log_path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n);
	fclose(f);
	buf[len] = 0;
	return buf;
}

int test_sm_stop(struct test_sm *sm)
{
	int st;

	if (sm->pid <= 0)
		return -1;
	st = t_stop(sm->pid, STOP_WAIT_MS);
	sm->pid = 0;
	/* Killed by a signal (SIGKILL by t_stop, say): -1. */
	sm->status = st >= 0 && st < 128 ? st : -1;
	free(sm->log);
	sm->log = read_log(sm);
	unlink(sm->log_path);
	if (sm->status && sm->log)
		fprintf(stderr, "umc-sm exited with %d:\n%s", sm->status, sm->log);
	return sm->status;
}

void test_sm_free(struct test_sm *sm)
{
	free(sm->log);
	sm->log = NULL;
}

long test_sm_counter(const struct test_sm *sm, const char *name)
{
	char key[128], *p;

	if (!sm->log)
		return -1;
	snprintf(key, sizeof(key), "umc-sm: counter %s ", name);
	p = strstr(sm->log, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

int test_sm_log_has(const struct test_sm *sm, const char *text)
{
	return sm->log && strstr(sm->log, text);
}

void test_sm_addr(const struct test_sm *sm, struct sockaddr_in *a)
{
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = htons(sm->port);
}
