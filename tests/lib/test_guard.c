// SPDX-License-Identifier: MIT
/*
 * test_guard - run one test so that nothing it starts outlives it.
 *
 *   test_guard SECONDS CMD [ARG...]
 *
 * ctest runs every test under it (umc_test() in tests/CMakeLists.txt).  It
 * makes itself a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER), so a
 * process the test leaves behind becomes its child instead of init's, and
 * runs CMD:
 *
 *  - When CMD exits, every descendant still running a moment later
 *    (GRACE_MS: one on its way out, such as a daemon that saw its pipe
 *    close, is let go) is named on stderr and killed with SIGKILL, and the
 *    test fails even if CMD passed or skipped.
 *  - When CMD runs longer than SECONDS, every process of the test is named
 *    with its state and the kernel function it sleeps in (wchan), all are
 *    killed, and the test fails: a hang ends with the place it hung in,
 *    before ctest's own TIMEOUT (set higher, as a backstop) would kill the
 *    guard alone and orphan the rest.
 *  - As root, the test gets a mount namespace of its own with an empty
 *    tmpfs on /run/netns, where ip-netns(8) keeps the network namespaces it
 *    names: a namespace the test created and did not delete is named and
 *    deleted, and the test fails.  Two tests running at once never see each
 *    other's names there, and none survives the guard (its mount namespace
 *    goes with it).  Anonymous namespaces (unshare(2)) live only as long as
 *    their processes, which the first rule ends.
 *
 * SIGINT, SIGTERM and SIGHUP end the test the same way (everything killed).
 * Exit status: CMD's (128 + the signal that ended it), or 1 when the guard
 * had to kill or delete anything or CMD timed out; 125 on a bad command
 * line, 127 when CMD cannot be executed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NETNS_DIR "/run/netns"

enum {
	GRACE_MS = 1000, /* a descendant may take this long to go after CMD exited */
	KILL_WAIT_MS = 5000,
	MAX_PROCS = 4096,
};

static const char *me = "test_guard";

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------------- */
/* The test's processes.                                                     */

/* A task's parent and state from /proc/@pid/stat; false once it is gone. */
static bool proc_stat(pid_t pid, pid_t *ppid, char *state)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "pid (comm) S ppid ...": comm may hold spaces and parentheses. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", state, ppid) != 2)
		return false;
	return true;
}

/*
 * The processes below this one that still run (zombies too, with
 * @zombies), in @pids, at most @cap; returns how many.  A process is below
 * this one if the chain of its parents reaches it: what the test left is
 * reparented to the guard, so the chain never breaks at an exited process.
 */
static int descendants(pid_t *pids, int cap, bool zombies)
{
	static pid_t all[MAX_PROCS], parent[MAX_PROCS];
	static char state[MAX_PROCS];
	static bool below[MAX_PROCS];
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0, found = 0;
	bool grew = true;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < MAX_PROCS) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || !proc_stat((pid_t)pid, &parent[n], &state[n]))
			continue;
		all[n] = (pid_t)pid;
		below[n] = parent[n] == getpid();
		n++;
	}
	closedir(d);
	while (grew) {
		grew = false;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n && !below[i]; j++)
				if (below[j] && parent[i] == all[j])
					below[i] = grew = true;
	}
	for (int i = 0; i < n && found < cap; i++)
		if (below[i] && (zombies || (state[i] != 'Z' && state[i] != 'X')))
			pids[found++] = all[i];
	return found;
}

/* Name process @pid on stderr: its command line, and with @where its state and wchan. */
static void describe(pid_t pid, bool where)
{
	char path[64], cmd[256] = "", wchan[64] = "?";
	pid_t ppid = 0;
	char state = '?';
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
	if (fd >= 0)
		close(fd);
	while (n > 0 && !cmd[n - 1])
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[n > 0 ? n : 0] = 0;
	if (!where) {
		fprintf(stderr, "%s:   pid %d: %s\n", me, (int)pid, cmd);
		return;
	}
	proc_stat(pid, &ppid, &state);
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, wchan, sizeof(wchan) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		wchan[n] = 0;
	fprintf(stderr, "%s:   pid %d (parent %d, state %c, in %s): %s\n", me, (int)pid, (int)ppid,
		state, wchan[0] && strcmp(wchan, "0") ? wchan : "-", cmd);
}

/* Reap every child that has exited; true if @main was one (its status in *@st). */
static bool reap(pid_t main, int *st)
{
	bool got = false;
	pid_t p;
	int s;

	while ((p = waitpid(-1, &s, WNOHANG)) > 0)
		if (p == main) {
			*st = s;
			got = true;
		}
	return got;
}

/*
 * Wait up to @ms for the descendants to be gone by themselves.  Returns
 * how many still run, in @pids.
 */
static int linger(pid_t *pids, int cap, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int n, st;

	while ((n = descendants(pids, cap, false)) && now_ms() < end) {
		reap(0, &st);
		usleep(10000); /* bounded by end */
	}
	return n;
}

/*
 * Reap the zombies left below: a dead process is reparented to the guard
 * only once its own parent is reaped.  None is left to the guard's parent.
 */
static void reap_all(void)
{
	static pid_t pids[MAX_PROCS];
	uint64_t end = now_ms() + KILL_WAIT_MS;
	int st;

	while (reap(0, &st), descendants(pids, MAX_PROCS, true) && now_ms() < end)
		usleep(10000); /* bounded by end */
}

/* SIGKILL every descendant (named on stderr) until none is left; returns how many. */
static int kill_all(const char *why, bool where)
{
	static pid_t pids[MAX_PROCS];
	int total = 0, n = linger(pids, MAX_PROCS, 0);

	if (n)
		fprintf(stderr, "%s: %s:\n", me, why);
	for (int i = 0; i < n; i++)
		describe(pids[i], where);
	/* Killing a parent hands its children to the guard: repeat until none is left. */
	for (uint64_t end = now_ms() + KILL_WAIT_MS; n && now_ms() < end;) {
		for (int i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		total += n;
		n = linger(pids, MAX_PROCS, 100);
	}
	if (n)
		fprintf(stderr, "%s: %d process(es) survived SIGKILL\n", me, n);
	return total;
}

/* ------------------------------------------------------------------------- */
/* Named network namespaces.                                                 */

/*
 * As root: a mount namespace of this process's own, mounts not propagated
 * back, with an empty tmpfs on /run/netns.  Returns true if the test's
 * namespaces can be checked.
 */
static bool netns_private(void)
{
	if (geteuid() != 0 || unshare(CLONE_NEWNS))
		return false;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		fprintf(stderr, "%s: cannot make / private: %s\n", me, strerror(errno));
		exit(125);
	}
	if ((mkdir(NETNS_DIR, 0755) && errno != EEXIST) ||
	    mount("tmpfs", NETNS_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755")) {
		fprintf(stderr, "%s: no tmpfs on %s (%s): namespaces not checked\n", me, NETNS_DIR,
			strerror(errno));
		return false;
	}
	return true;
}

/* Name and delete (as ip netns delete) every namespace left in /run/netns; returns how many. */
static int netns_left(void)
{
	DIR *d = opendir(NETNS_DIR);
	struct dirent *e;
	char path[PATH_MAX];
	int n = 0;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (!n++)
			fprintf(stderr, "%s: network namespaces left by the test (deleted):\n", me);
		fprintf(stderr, "%s:   %s\n", me, e->d_name);
		snprintf(path, sizeof(path), "%s/%s", NETNS_DIR, e->d_name);
		umount2(path, MNT_DETACH);
		unlink(path);
	}
	if (d)
		closedir(d);
	return n;
}

/* ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static pid_t pids[MAX_PROCS];
	sigset_t sigs, old;
	siginfo_t si;
	bool netns, done = false, bad = false;
	uint64_t end;
	char *tail;
	long secs;
	pid_t pid;
	int st = 0, sig = 0, n;

	secs = argc > 2 ? strtol(argv[1], &tail, 10) : 0;
	if (argc < 3 || *tail || secs <= 0) {
		fprintf(stderr, "usage: %s SECONDS CMD [ARG...]\n", me);
		return 125;
	}
	netns = netns_private();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 125;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 125;
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "%s: %s: %s\n", me, argv[2], strerror(errno));
		_exit(127);
	}

	end = now_ms() + (uint64_t)secs * 1000u;
	while (!done && !sig) {
		uint64_t now = now_ms();
		struct timespec left;

		if (now >= end) {
			fprintf(stderr, "%s: %s did not end within %ld s\n", me, argv[2], secs);
			kill_all("the test's processes, killed", true);
			bad = true;
			break;
		}
		left.tv_sec = (time_t)((end - now) / 1000u);
		left.tv_nsec = (long)((end - now) % 1000u) * 1000000L;
		n = sigtimedwait(&sigs, &si, &left);
		if (n == SIGCHLD)
			done = reap(pid, &st);
		else if (n > 0)
			sig = n;
	}
	if (sig) {
		fprintf(stderr, "%s: %s, the test stopped\n", me, strsignal(sig));
		kill_all("the test's processes, killed", false);
	} else if (done && linger(pids, MAX_PROCS, GRACE_MS)) {
		kill_all("left running by the test, killed", false);
		bad = true;
	}
	reap_all();
	if (netns && netns_left())
		bad = true;
	if (sig)
		return 128 + sig;
	if (bad)
		return done && WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 77
			       ? WEXITSTATUS(st)
			       : 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
