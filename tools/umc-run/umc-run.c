/* SPDX-License-Identifier: MIT */
/*
 * umc-run - run a program built against rdma-core's libibverbs and
 * librdmacm on umcast, unchanged (umc-run.1.md).
 *
 * It puts umcast's drop-in libraries (lib/umcast/compat next to the bin/
 * directory this program is in, or $UMC_COMPAT_DIR) first on
 * LD_LIBRARY_PATH and replaces itself with the program (execvp), so the
 * program keeps umc-run's pid and its exit status is the program's.
 *
 * Programs that look a device up in sysfs (rdma-core's pyverbs tests read
 * /sys/class/infiniband/<device>/device/net/ to find its netdev) need that
 * directory to exist, and no kernel module provides it here.  When run as
 * root, umc-run therefore first moves into a mount namespace of its own and
 * lays a read-only overlay on /sys/class that adds
 * infiniband/<device>/device/net/<ifname> (a link to /sys/class/net/<ifname>)
 * for each umcast device that has a network interface.  Nothing changes
 * outside that namespace; --no-sysfs leaves /sys as it is.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

/* Exit statuses of umc-run itself, as env(1) uses them. */
enum {
	UMC_RUN_FAILED = 125,	 /* usage error, no drop-in libraries */
	UMC_RUN_NOEXEC = 126,	 /* the program cannot be executed */
	UMC_RUN_NOTFOUND = 127, /* the program was not found */
};

#define UMC_RUN_COMPAT_REL "../lib/umcast/compat"
#define UMC_RUN_SYSFS_CLASS "/sys/class"

static void usage(FILE *f)
{
	fprintf(f, "usage: umc-run [--no-sysfs] [--] PROGRAM [ARGUMENT...]\n"
		   "Run PROGRAM, built against rdma-core's libibverbs/librdmacm, on umcast.\n"
		   "  --no-sysfs   no private sysfs view of the devices' interfaces (as root)\n"
		   "  -h, --help   this text\n"
		   "  --version    umcast's version\n");
}

/* The drop-in directory: $UMC_COMPAT_DIR, else ../lib/umcast/compat from here. */
static int compat_dir(char *dir, size_t size)
{
	const char *env = getenv("UMC_COMPAT_DIR");
	char exe[PATH_MAX], probe[PATH_MAX + 32];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if (snprintf(dir, size, "%s", env) >= (int)size)
			return -ENAMETOOLONG;
	} else {
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n < 0)
			return -errno;
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (!slash)
			return -ENOENT;
		*slash = '\0';
		if (snprintf(dir, size, "%s/%s", exe, UMC_RUN_COMPAT_REL) >= (int)size)
			return -ENAMETOOLONG;
	}
	snprintf(probe, sizeof(probe), "%s/libibverbs.so.1", dir);
	return access(probe, R_OK) ? -errno : 0;
}

static int set_library_path(const char *dir)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char *value;
	int ret;

	if (old && *old)
		ret = asprintf(&value, "%s:%s", dir, old);
	else
		ret = asprintf(&value, "%s", dir);
	if (ret < 0)
		return -ENOMEM;
	ret = setenv("LD_LIBRARY_PATH", value, 1) ? -errno : 0;
	free(value);
	return ret;
}

/* mkdir -p of @path inside the view (every component after @root). */
static int mkdirs(char *path, size_t root_len)
{
	for (char *p = path + root_len + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -errno : 0;
}

/* The layer: infiniband/<device>/device/net/<ifname> -> /sys/class/net/<ifname>. */
static int fill_layer(const char *layer)
{
	struct umc_device **devs;
	int n = umc_devices(&devs);
	char path[PATH_MAX], target[PATH_MAX];
	int ret;

	for (int i = 0; i < n; i++) {
		const char *name = devs[i]->ibdev.name;
		char ifname[IF_NAMESIZE];
		unsigned ifindex;

		if (devs[i]->link->netdev(devs[i], ifname, &ifindex))
			continue; /* no netdev behind this device */
		if (snprintf(path, sizeof(path), "%s/infiniband/%s/device/net", layer, name) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		ret = mkdirs(path, strlen(layer));
		if (ret)
			return ret;
		if (snprintf(target, sizeof(target), UMC_RUN_SYSFS_CLASS "/net/%s", ifname) >=
			    (int)sizeof(target) ||
		    snprintf(path, sizeof(path), "%s/infiniband/%s/device/net/%s", layer, name,
			     ifname) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		if (symlink(target, path))
			return -errno;
	}
	return 0;
}

/*
 * Give this process (and so the program) a mount namespace in which
 * /sys/class also holds the infiniband/ view.  The layer is a tmpfs that
 * is detached from the tree again once the overlay holds it.
 */
static int sysfs_view(const char **what)
{
	const char *tmp = getenv("TMPDIR");
	char layer[PATH_MAX], opts[2 * PATH_MAX];
	int ret;

	*what = "unshare(CLONE_NEWNS)";
	if (unshare(CLONE_NEWNS))
		return -errno;
	*what = "making / private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	snprintf(layer, sizeof(layer), "%s/umc-run.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	*what = "mkdtemp";
	if (!mkdtemp(layer))
		return -errno;
	*what = "mounting a tmpfs";
	ret = mount("umc-sysfs", layer, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755")
		      ? -errno
		      : 0;
	if (!ret) {
		*what = "building the view";
		ret = fill_layer(layer);
		snprintf(opts, sizeof(opts), "lowerdir=%s:" UMC_RUN_SYSFS_CLASS, layer);
		if (!ret) {
			*what = "mounting the overlay on " UMC_RUN_SYSFS_CLASS;
			if (mount("umc-sysfs", UMC_RUN_SYSFS_CLASS, "overlay", MS_RDONLY, opts))
				ret = -errno;
		}
		umount2(layer, MNT_DETACH);
	}
	rmdir(layer);
	return ret;
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX] = "";
	bool sysfs = true;
	const char *what;
	int i, ret;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (!strcmp(argv[i], "--no-sysfs")) {
			sysfs = false;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("umc-run (umcast) %s\n", UMC_VERSION);
			return 0;
		} else {
			fprintf(stderr, "umc-run: unknown option %s\n", argv[i]);
			usage(stderr);
			return UMC_RUN_FAILED;
		}
	}
	if (i == argc) {
		usage(stderr);
		return UMC_RUN_FAILED;
	}
	ret = compat_dir(dir, sizeof(dir));
	if (ret) {
		fprintf(stderr, "umc-run: no drop-in libraries in %s: %s\n", dir, strerror(-ret));
		return UMC_RUN_FAILED;
	}
	ret = set_library_path(dir);
	if (ret) {
		fprintf(stderr, "umc-run: LD_LIBRARY_PATH: %s\n", strerror(-ret));
		return UMC_RUN_FAILED;
	}
	if (sysfs && geteuid() == 0) {
		ret = sysfs_view(&what);
		if (ret)
			fprintf(stderr, "umc-run: no %s/infiniband view (%s: %s)\n",
				UMC_RUN_SYSFS_CLASS, what, strerror(-ret));
	}
	execvp(argv[i], &argv[i]);
	ret = errno;
	fprintf(stderr, "umc-run: %s: %s\n", argv[i], strerror(ret));
	return ret == ENOENT ? UMC_RUN_NOTFOUND : UMC_RUN_NOEXEC;
}
