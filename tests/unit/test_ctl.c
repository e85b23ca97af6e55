// SPDX-License-Identifier: MIT
/*
 * test_ctl.c - both ends of the run-time control socket (src/ctl/sock.c):
 * a request answered, a private socket, messages that do not decode
 * closed without a reply, another version answered -EPROTONOSUPPORT, a
 * silent server timed out, a dead one refused, and a peer of another uid
 * refused by its credentials even when it can reach the socket.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/ctl.h"

static char dir[64], path[128];
static int lfd;
static pthread_t server;
static atomic_bool stop;
static atomic_int handled;

/* Echo the request's text back, "ok: " in front; FAULTS "bad" fails. */
static void handler(void *ctx, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep)
{
	char text[UMC_CTL_TEXT_MAX + 8];

	assert_ptr_equal(ctx, &lfd);
	atomic_fetch_add(&handled, 1);
	if (req->op == UMC_CTL_FAULTS && !strcmp(req->text, "bad")) {
		rep->status = -EINVAL;
		umc_ctl_set_text(rep, "column 1: bad");
		return;
	}
	snprintf(text, sizeof(text), "ok: %s", req->text);
	umc_ctl_set_text(rep, text);
	rep->arg = req->arg + 1;
}

static void *serve(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct pollfd p = {.fd = lfd, .events = POLLIN};

		if (poll(&p, 1, 50) > 0)
			umc_ctl_serve(lfd, handler, &lfd);
	}
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/umc-test-ctl-XXXXXX");
	if (!mkdtemp(dir) || umc_ctl_path(dir, 4242, path, sizeof(path)))
		return -1;
	lfd = umc_ctl_listen(path);
	if (lfd < 0)
		return -1;
	return pthread_create(&server, NULL, serve, NULL);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	atomic_store(&stop, true);
	pthread_join(server, NULL);
	close(lfd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static struct umc_ctl_msg request(uint8_t op, uint32_t arg, const char *text)
{
	struct umc_ctl_msg m;

	memset(&m, 0, sizeof(m));
	m.op = op;
	m.arg = arg;
	umc_ctl_set_text(&m, text);
	return m;
}

static void test_call(void **state)
{
	struct umc_ctl_msg req = request(UMC_CTL_PORT_DOWN, 5, "umc_ib0"), rep;
	struct stat st;
	char want[128];

	(void)state;
	snprintf(want, sizeof(want), "%s/4242.ctl", dir);
	assert_string_equal(path, want);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(umc_ctl_call(path, &req, &rep, 2000), 0);
	assert_int_equal(rep.op, UMC_CTL_PORT_DOWN | UMC_CTL_REPLY);
	assert_int_equal(rep.status, 0);
	assert_int_equal(rep.arg, 6);
	assert_string_equal(rep.text, "ok: umc_ib0");
	req = request(UMC_CTL_FAULTS, 0, "bad");
	assert_int_equal(umc_ctl_call(path, &req, &rep, 2000), 0);
	assert_int_equal(rep.status, -EINVAL);
	assert_string_equal(rep.text, "column 1: bad");
	/* Nobody there. */
	snprintf(want, sizeof(want), "%s/1.ctl", dir);
	assert_int_equal(umc_ctl_call(want, &req, &rep, 2000), -ENOENT);
}

/* Send @len raw bytes; the reply's decode result, or -ECONNRESET when closed without one. */
static int raw_call(const void *bytes, size_t len, struct umc_ctl_msg *rep)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	uint8_t buf[UMC_CTL_MAX_MSG];
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0), rc;
	struct pollfd p;
	ssize_t n;

	strcpy(a.sun_path, path);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(send(fd, bytes, len, 0), (ssize_t)len);
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 3000), 1);
	n = recv(fd, buf, sizeof(buf), 0);
	rc = n == 0 ? -ECONNRESET : umc_ctl_decode(buf, (size_t)n, rep);
	close(fd);
	return rc;
}

static void test_malformed(void **state)
{
	struct umc_ctl_msg req = request(UMC_CTL_FAULTS, 0, "rx drop=1"), rep;
	uint8_t buf[UMC_CTL_MAX_MSG];
	size_t n = umc_ctl_encode(buf, &req);
	int before = atomic_load(&handled);

	(void)state;
	assert_int_equal(raw_call("hello", 5, &rep), -ECONNRESET);
	assert_int_equal(raw_call(buf, n - 1, &rep), -ECONNRESET); /* truncated */
	buf[5] = UMC_CTL_FAULTS | UMC_CTL_REPLY;		     /* a reply, not a request */
	assert_int_equal(raw_call(buf, n, &rep), -ECONNRESET);
	buf[5] = UMC_CTL_FAULTS;
	buf[11] = 1; /* a status in a request */
	assert_int_equal(raw_call(buf, n, &rep), -ECONNRESET);
	buf[11] = 0;
	buf[4] = 2; /* version 2: told our version's answer */
	assert_int_equal(raw_call(buf, n, &rep), 0);
	assert_int_equal(rep.op, UMC_CTL_FAULTS | UMC_CTL_REPLY);
	assert_int_equal(rep.status, -EPROTONOSUPPORT);
	assert_int_equal(atomic_load(&handled), before);
}

/* A process that does not serve its socket (stopped, busy): the caller's wait ends. */
static void test_silent_server(void **state)
{
	struct umc_ctl_msg req = request(UMC_CTL_SM_FAILOVER, 0, ""), rep;
	char quiet[128];
	int fd;

	(void)state;
	umc_ctl_path(dir, 4343, quiet, sizeof(quiet));
	fd = umc_ctl_listen(quiet);
	assert_true(fd >= 0);
	assert_int_equal(umc_ctl_call(quiet, &req, &rep, 200), -ETIMEDOUT);
	close(fd);
	/* Its socket left behind, nobody listening: refused at once. */
	assert_int_equal(umc_ctl_call(quiet, &req, &rep, 2000), -ECONNREFUSED);
	unlink(quiet);
}

/*
 * Another user: the private directory keeps it out; a socket it can reach
 * anyway (made reachable here) refuses it by its credentials.
 */
static void test_other_user(void **state)
{
	struct umc_ctl_msg req = request(UMC_CTL_FAULTS, 0, ""), rep;
	int status, before = atomic_load(&handled);
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	chmod(dir, 0700);
	pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		_exit(umc_ctl_call(path, &req, &rep, 2000) == -EACCES ? 0 : 11);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	chmod(dir, 0755);
	chmod(path, 0666);
	pid = fork();
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		if (umc_ctl_call(path, &req, &rep, 2000))
			_exit(12);
		_exit(rep.status == -EPERM && !strcmp(rep.text, "refused: not this process's user")
			      ? 0
			      : 13);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	chmod(dir, 0700);
	chmod(path, 0600);
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(atomic_load(&handled), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_silent_server),
		cmocka_unit_test(test_other_user),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
