/* SPDX-License-Identifier: MIT */
/*
 * isolate.h - give a test process a network namespace of its own.
 *
 * The RoCE unicast demultiplexer is per network namespace and every umcast
 * process in it takes part (link/roce/uc/), so a test that counts what
 * its own processes forwarded or allocated must not share the namespace
 * with other tests.  As root unshare(CLONE_NEWNET) does it; otherwise a new
 * user namespace (mapping the caller's uid and gid to root in it) comes
 * too, where the system allows one.  Loopback is brought up.
 *
 * Header-only, unlike the rest of tests/lib: bench/uc-hop uses it too, and
 * the benchmarks are built without the tests.
 */
#ifndef TESTS_LIB_ISOLATE_H
#define TESTS_LIB_ISOLATE_H

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

static inline bool t_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Returns true when the process now has a namespace of its own with lo up. */
static inline bool t_isolate_netns(void)
{
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();
	struct ifreq ifr;
	char map[32];
	bool ok;
	int fd;

	if (unshare(CLONE_NEWNET)) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET))
			return false;
		snprintf(map, sizeof(map), "0 %u 1", uid);
		ok = t_write_file("/proc/self/uid_map", map);
		t_write_file("/proc/self/setgroups", "deny");
		snprintf(map, sizeof(map), "0 %u 1", gid);
		if (!ok || !t_write_file("/proc/self/gid_map", map))
			return false;
	}
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ok = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	ok = ok && ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

#endif /* TESTS_LIB_ISOLATE_H */
