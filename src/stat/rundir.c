// SPDX-License-Identifier: MIT
/*
 * rundir.c - the per-user directory of counters files and control sockets
 * (rundir.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stat/rundir.h"

/* /dev/shm when it is a directory (memory), else /tmp. */
static const char *base_dir(void)
{
	struct stat st;

	return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

int umc_rundir_path(uid_t uid, char *buf, size_t size)
{
	const char *env = getenv("UMC_RUN_DIR");
	int n = env && *env ? snprintf(buf, size, "%s", env)
			    : snprintf(buf, size, "%s/umcast-%u", base_dir(), (unsigned)uid);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int umc_rundir_of(pid_t pid, char *buf, size_t size)
{
	char proc[32];
	struct stat st;
	uid_t uid = geteuid();

	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &st) == 0)
		uid = st.st_uid;
	return umc_rundir_path(uid, buf, size);
}

const char *umc_rundir_glob(char *buf, size_t size)
{
	const char *env = getenv("UMC_RUN_DIR");

	if (env && *env)
		snprintf(buf, size, "%s", env);
	else
		snprintf(buf, size, "%s/umcast-*", base_dir());
	return buf;
}

/*
 * Is @path a private directory of @uid: a directory, not a link, owned by
 * @uid, without group or other bits?  0, or -EPERM with the reason in @why.
 */
static int private_dir(const char *path, uid_t uid, char *why, size_t why_size)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077)) {
		snprintf(why, why_size, "%s is not a private directory of uid %u (%s, uid %u, mode %04o)",
			 path, (unsigned)uid, S_ISDIR(st.st_mode) ? "directory" : "not a directory",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

int umc_rundir_make(char *buf, size_t size, char *why, size_t why_size)
{
	uid_t uid = geteuid();
	int ret = umc_rundir_path(uid, buf, size);

	why[0] = 0;
	if (ret)
		return ret;
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return private_dir(buf, uid, why, why_size);
}

int umc_rundir_make_shm(char *buf, size_t size, char *why, size_t why_size)
{
	int ret = umc_rundir_make(buf, size, why, why_size);
	size_t n = strlen(buf);

	if (ret)
		return ret;
	if ((size_t)snprintf(buf + n, size - n, "/%s", UMC_RUNDIR_SHM) >= size - n)
		return -ENAMETOOLONG;
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return private_dir(buf, geteuid(), why, why_size);
}
