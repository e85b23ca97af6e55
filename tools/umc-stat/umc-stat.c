// SPDX-License-Identifier: MIT
/*
 * umc-stat - the state and counters of running (or killed) umcast
 * processes, read from their counters files without their help
 * (umc-stat(1); the file's layout is src/stat/stat.h).
 *
 * With no PID it lists the processes whose files the caller may read;
 * with PIDs it prints each one's devices, ports, QPs and groups with every
 * counter, the injected faults apart, as text or (-j) one JSON object per
 * process and line; -w repeats.  A file its owner truncates while we read
 * it faults (SIGBUS): that process is reported and skipped.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <infiniband/verbs.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stat/rundir.h"
#include "stat/stat.h"

static const char usage_text[] =
	"usage: umc-stat [-j] [-w SECS] [PID...]\n"
	"       umc-stat --clean\n"
	"  (no PID)       list the umcast processes you may see\n"
	"  PID...         each one's devices, ports, QPs and groups with every counter\n"
	"  -j, --json     one JSON object per process and line\n"
	"  -w, --watch SECS  print again every SECS seconds, until interrupted\n"
	"      --clean    remove the files of processes that are gone, and the\n"
	"                 same-host path's files no process uses\n"
	"  -h, --help     this text\n"
	"      --version  umcast's version\n";

struct opts {
	bool json, clean;
	double watch;
	int npids;
	pid_t *pids;
};

/* ------------------------------------------------------------------------- */
/* Names.                                                                    */

static const char *port_state_str(unsigned s)
{
	static const char *const n[] = {"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static const char *qp_state_str(unsigned s)
{
	static const char *const n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static const char *qp_type_str(unsigned t)
{
	return t == IBV_QPT_UD ? "UD" : t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "?";
}

static const char *link_str(unsigned l)
{
	return l == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
	       : l == IBV_LINK_LAYER_ETHERNET ? "Ethernet"
					      : "?";
}

static const char *join_state_str(unsigned s)
{
	return s == UMC_STAT_JOINING ? "joining"
	       : s == UMC_STAT_JOINED ? "joined"
	       : s == UMC_STAT_ERROR  ? "error"
				      : "?";
}

static unsigned mtu_bytes(unsigned mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 0;
}

static bool is_fault_counter(const char *name)
{
	return strncmp(name, "fault_", 6) == 0;
}

/* The process's fate: what its file says, and whether that PID still runs it. */
static const char *proc_state(const struct umc_stat_view *v)
{
	if (umc_stat_state(v) == UMC_STAT_EXITED)
		return "exited";
	if (v->hdr.start_ticks && umc_stat_proc_start(v->hdr.pid) == v->hdr.start_ticks)
		return "running";
	return "gone"; /* without exit(3): killed, or _exit(2) */
}

/* ------------------------------------------------------------------------- */
/* Output: text or JSON, through one set of calls.                          */

static bool json;
static bool first_item; /* JSON: no comma before the next item */

static void jstr(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void jkey(const char *key)
{
	if (!first_item)
		putchar(',');
	first_item = false;
	jstr(key);
	putchar(':');
}

static void jopen(const char *key, char bracket)
{
	if (key)
		jkey(key);
	else if (!first_item)
		putchar(',');
	putchar(bracket);
	first_item = true;
}

static void jclose(char bracket)
{
	putchar(bracket);
	first_item = false;
}

static void jnum(const char *key, unsigned long long v)
{
	jkey(key);
	printf("%llu", v);
}

static void jtext(const char *key, const char *v)
{
	jkey(key);
	jstr(v);
}

static void gid_str(const uint8_t *gid, char *buf)
{
	inet_ntop(AF_INET6, gid, buf, INET6_ADDRSTRLEN);
}

/* The counters of slot @i of @kind; text: natural ones, then the injected apart. */
static void print_counters(const struct umc_stat_view *v, enum umc_stat_kind kind, int i,
			   const char *indent)
{
	char name[UMC_STAT_NAME_LEN + 1];
	uint32_t n = umc_stat_ncounters(v, kind);

	if (json) {
		jopen("counters", '{');
		for (uint32_t c = 0; c < n; c++)
			jnum(umc_stat_counter_name(v, kind, c, name), umc_stat_counter(v, kind, i, c));
		jclose('}');
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		bool any = false;

		for (uint32_t c = 0; c < n; c++) {
			umc_stat_counter_name(v, kind, c, name);
			if (is_fault_counter(name) != (pass == 1))
				continue;
			if (!any && pass)
				printf("%sinjected faults:\n", indent);
			any = true;
			printf("%s  %-20s %llu\n", indent, name,
			       (unsigned long long)umc_stat_counter(v, kind, i, c));
		}
	}
}

static const char *torn_note(int rc)
{
	return rc == -EAGAIN ? " (torn: the process stopped while changing it)" : "";
}

static void print_faults(const struct umc_stat_view *v)
{
	struct umc_stat_faults *f = malloc(sizeof(*f));
	int rc = f ? umc_stat_read(v, UMC_STAT_FAULTS, 0, f, sizeof(*f)) : -ENOMEM;

	if (rc == -EAGAIN || rc == 0)
		f->spec[sizeof(f->spec) - 1] = 0;
	if (json) {
		jkey("faults");
		if (rc == 0 || rc == -EAGAIN)
			jstr(f->spec);
		else
			printf("null");
	} else if (rc == 0 || rc == -EAGAIN) {
		printf("  faults: %s%s\n", f->spec, torn_note(rc));
	} else {
		printf("  faults: none\n");
	}
	free(f);
}

static const char *dev_name(const struct umc_stat_view *v, int i, char *buf, size_t size)
{
	struct umc_stat_dev d;

	if (umc_stat_read(v, UMC_STAT_DEV, i, &d, sizeof(d)) && !d.rec.used)
		snprintf(buf, size, "#%d", i);
	else
		snprintf(buf, size, "%.*s", (int)sizeof(d.name), d.name);
	return buf;
}

static void print_devices(const struct umc_stat_view *v)
{
	char gid[INET6_ADDRSTRLEN];

	if (json)
		jopen("devices", '[');
	for (int i = 0; i < umc_stat_slots(v, UMC_STAT_DEV); i++) {
		struct umc_stat_dev d;
		int rc = umc_stat_read(v, UMC_STAT_DEV, i, &d, sizeof(d));

		if (rc == -ENOENT)
			continue;
		d.name[sizeof(d.name) - 1] = d.netdev[sizeof(d.netdev) - 1] = 0;
		gid_str(d.gid, gid);
		if (json) {
			jopen(NULL, '{');
			jtext("name", d.name);
			jtext("link_layer", link_str(d.link_layer));
			jtext("netdev", d.netdev);
			jnum("port", 1);
			jtext("port_state", port_state_str(d.port_state));
			jnum("active_mtu", mtu_bytes(d.active_mtu));
			jnum("lid", d.lid);
			jnum("sm_lid", d.sm_lid);
			jtext("gid", gid);
			jnum("node_guid", d.node_guid);
			jkey("torn");
			printf(rc ? "true" : "false");
			print_counters(v, UMC_STAT_DEV, i, "");
			jclose('}');
			continue;
		}
		printf("device %s: %s%s%s%s, port 1 %s, mtu %u, gid %s", d.name,
		       link_str(d.link_layer), d.netdev[0] ? " (" : "", d.netdev,
		       d.netdev[0] ? ")" : "", port_state_str(d.port_state),
		       mtu_bytes(d.active_mtu), gid);
		if (d.link_layer == IBV_LINK_LAYER_INFINIBAND)
			printf(", lid 0x%x, sm_lid 0x%x", d.lid, d.sm_lid);
		printf("%s\n", torn_note(rc));
		print_counters(v, UMC_STAT_DEV, i, "  ");
	}
	if (json)
		jclose(']');
}

static void print_qps(const struct umc_stat_view *v)
{
	char dev[80];

	if (json)
		jopen("qps", '[');
	for (int i = 0; i < umc_stat_slots(v, UMC_STAT_QP); i++) {
		struct umc_stat_qp q;
		int rc = umc_stat_read(v, UMC_STAT_QP, i, &q, sizeof(q));

		if (rc == -ENOENT)
			continue;
		dev_name(v, q.dev, dev, sizeof(dev));
		if (json) {
			jopen(NULL, '{');
			jnum("qpn", q.qpn);
			jtext("device", dev);
			jtext("type", qp_type_str(q.qp_type));
			jtext("state", qp_state_str(q.state));
			jnum("qkey", q.qkey);
			jnum("pkey_index", q.pkey_index);
			jnum("groups", q.nattach);
			jnum("max_send_wr", q.max_send_wr);
			jnum("max_recv_wr", q.max_recv_wr);
			jclose('}');
			continue;
		}
		printf("qp 0x%x on %s: %s %s, qkey 0x%08x, pkey_index %u, max_send_wr %u, "
		       "max_recv_wr %u, attached to %u group%s%s\n",
		       q.qpn, dev, qp_type_str(q.qp_type), qp_state_str(q.state), q.qkey,
		       q.pkey_index, q.max_send_wr, q.max_recv_wr, q.nattach, q.nattach == 1 ? "" : "s",
		       torn_note(rc));
	}
	if (json)
		jclose(']');
}

static void print_group(const struct umc_stat_view *v, int i, const struct umc_stat_group *g,
			int rc)
{
	char dev[80], mgid[INET6_ADDRSTRLEN], addr[INET6_ADDRSTRLEN] = "";
	int nqp = g->nqp < UMC_STAT_GRP_QPS ? g->nqp : UMC_STAT_GRP_QPS;
	int njoin = g->njoin < UMC_STAT_GRP_IDS ? g->njoin : UMC_STAT_GRP_IDS;

	dev_name(v, g->dev, dev, sizeof(dev));
	gid_str(g->mgid, mgid);
	if (g->family == 4 || g->family == 6)
		inet_ntop(g->family == 4 ? AF_INET : AF_INET6, g->addr, addr, sizeof(addr));
	if (json) {
		jopen(NULL, '{');
		jtext("device", dev);
		jtext("address", addr);
		jtext("mgid", mgid);
		jnum("mlid", g->mlid);
		jnum("join_state", g->join_state);
		jopen("qps", '[');
		for (int q = 0; q < nqp; q++) {
			if (q)
				putchar(',');
			printf("%u", g->qpn[q]);
		}
		jclose(']');
		jnum("nqp", g->nqp);
		jopen("joins", '[');
		for (int j = 0; j < njoin; j++) {
			jopen(NULL, '{');
			jnum("id", g->join[j].id);
			jnum("join_state", g->join[j].join_state);
			jtext("state", join_state_str(g->join[j].state));
			jclose('}');
		}
		jclose(']');
		jnum("njoin", g->njoin);
		jkey("torn");
		printf(rc ? "true" : "false");
		print_counters(v, UMC_STAT_GRP, i, "");
		jclose('}');
		return;
	}
	printf("group %s on %s: mgid %s, mlid 0x%04x, JoinState 0x%x%s\n", addr[0] ? addr : mgid,
	       dev, mgid, g->mlid, g->join_state, torn_note(rc));
	printf("  qps:");
	for (int q = 0; q < nqp; q++)
		printf(" 0x%x", g->qpn[q]);
	if (g->nqp > nqp)
		printf(" (and %d more)", g->nqp - nqp);
	printf("%s\n  joins:", g->nqp ? "" : " none");
	for (int j = 0; j < njoin; j++)
		printf(" id %u JoinState 0x%x %s%s", g->join[j].id, g->join[j].join_state,
		       join_state_str(g->join[j].state), j + 1 < njoin ? "," : "");
	if (g->njoin > njoin)
		printf(" (and %d more)", g->njoin - njoin);
	printf("%s\n", g->njoin ? "" : " none");
	print_counters(v, UMC_STAT_GRP, i, "  ");
}

static void print_groups(const struct umc_stat_view *v)
{
	if (json)
		jopen("groups", '[');
	for (int i = 0; i < umc_stat_slots(v, UMC_STAT_GRP); i++) {
		struct umc_stat_group g;
		int rc = umc_stat_read(v, UMC_STAT_GRP, i, &g, sizeof(g));

		if (rc != -ENOENT)
			print_group(v, i, &g, rc);
	}
	if (json)
		jclose(']');
}

static uint64_t overflow(const struct umc_stat_view *v, enum umc_stat_kind kind)
{
	const struct umc_stat_hdr *h = (const struct umc_stat_hdr *)v->base;

	return (uint32_t)kind < v->hdr.nsect ? atomic_load(&h->sect[kind].overflow) : 0;
}

static void print_process(const struct umc_stat_view *v, const char *path)
{
	const struct umc_stat_hdr *h = &v->hdr;

	if (json) {
		first_item = true;
		putchar('{');
		jnum("pid", (unsigned long long)h->pid);
		jtext("comm", h->comm);
		jtext("cmdline", h->cmdline);
		jnum("uid", h->uid);
		jtext("state", proc_state(v));
		jnum("start_ticks", h->start_ticks);
		jnum("created", (unsigned long long)h->created_sec);
		jtext("file", path);
		print_faults(v);
		print_devices(v);
		print_qps(v);
		print_groups(v);
		jnum("qps_not_shown", overflow(v, UMC_STAT_QP));
		jnum("groups_not_shown", overflow(v, UMC_STAT_GRP));
		printf("}\n");
		return;
	}
	printf("process %d (%s), uid %u, %s\n  command: %s\n  file: %s\n", h->pid, h->comm, h->uid,
	       proc_state(v), h->cmdline, path);
	print_faults(v);
	print_devices(v);
	print_qps(v);
	print_groups(v);
	if (overflow(v, UMC_STAT_QP) || overflow(v, UMC_STAT_GRP))
		printf("not shown: %llu QPs, %llu groups (no room left in the file)\n",
		       (unsigned long long)overflow(v, UMC_STAT_QP),
		       (unsigned long long)overflow(v, UMC_STAT_GRP));
}

/* ------------------------------------------------------------------------- */
/* Finding and reading the files.                                            */

static sigjmp_buf bus_jump;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jump, 1);
}

/*
 * The counters file of @pid: in its run directory (umc_rundir_of); root
 * looks in every user's for a process that is gone.
 */
static void stat_path(pid_t pid, char *buf, size_t size)
{
	char dir[UMC_RUNDIR_MAX], pattern[UMC_RUNDIR_MAX + 16];
	glob_t g;

	umc_rundir_of(pid, dir, sizeof(dir));
	snprintf(buf, size, "%s/%d.stat", dir, (int)pid);
	if (geteuid() != 0 || access(buf, F_OK) == 0)
		return;
	snprintf(pattern, sizeof(pattern), "%s/%d.stat", umc_rundir_glob(dir, sizeof(dir)),
		 (int)pid);
	if (glob(pattern, 0, NULL, &g) == 0) {
		snprintf(buf, size, "%s", g.gl_pathv[0]);
		globfree(&g);
	}
}

/* Print the process whose file is @path; 0, or 1 after saying why not. */
static int show_file(const char *path, bool summary)
{
	struct umc_stat_view v;
	char err[128];
	int rc = umc_stat_open(path, &v, err);

	if (rc) {
		fprintf(stderr, "umc-stat: %s\n", err);
		return 1;
	}
	if (sigsetjmp(bus_jump, 1)) {
		fflush(stdout);
		fprintf(stderr, "umc-stat: %s: the file was cut short while it was read\n", path);
		umc_stat_view_close(&v);
		return 1;
	}
	if (summary) {
		int ndev = 0, ngrp = 0;
		struct umc_stat_group g;
		struct umc_stat_dev d;
		struct umc_stat_faults *f = malloc(sizeof(*f));

		for (int i = 0; i < umc_stat_slots(&v, UMC_STAT_DEV); i++)
			ndev += umc_stat_read(&v, UMC_STAT_DEV, i, &d, sizeof(d)) != -ENOENT;
		for (int i = 0; i < umc_stat_slots(&v, UMC_STAT_GRP); i++)
			ngrp += umc_stat_read(&v, UMC_STAT_GRP, i, &g, sizeof(g)) != -ENOENT;
		rc = f ? umc_stat_read(&v, UMC_STAT_FAULTS, 0, f, sizeof(*f)) : -ENOMEM;
		printf("%-8d %-8s %-16s %7d %7d  %s\n", v.hdr.pid, proc_state(&v), v.hdr.comm, ndev,
		       ngrp, rc == 0 || rc == -EAGAIN ? "yes" : "no");
		free(f);
	} else {
		print_process(&v, path);
	}
	umc_stat_view_close(&v);
	return 0;
}

/* PATH/PID.stat by their PIDs. */
static int by_pid(const void *a, const void *b)
{
	const char *x = strrchr(*(char *const *)a, '/'), *y = strrchr(*(char *const *)b, '/');
	long px = x ? atol(x + 1) : 0, py = y ? atol(y + 1) : 0;

	return px < py ? -1 : px > py;
}

/* The run directories the caller may see, a glob(3) pattern: root every user's, others theirs. */
static const char *visible_rundirs(char *buf, size_t size)
{
	if (geteuid() == 0)
		return umc_rundir_glob(buf, size);
	umc_rundir_path(geteuid(), buf, size);
	return buf;
}

/* Call @fn on each RUNDIR/PID@suffix the caller may see, by PID. */
static int for_each(const char *suffix, int (*fn)(const char *path, bool arg), bool arg)
{
	char pattern[UMC_RUNDIR_MAX + 16], dir[UMC_RUNDIR_MAX];
	glob_t g;
	int ret = 0;

	snprintf(pattern, sizeof(pattern), "%s/*%s", visible_rundirs(dir, sizeof(dir)), suffix);
	if (glob(pattern, 0, NULL, &g) == 0) {
		qsort(g.gl_pathv, g.gl_pathc, sizeof(char *), by_pid);
		for (size_t i = 0; i < g.gl_pathc; i++)
			ret |= fn(g.gl_pathv[i], arg);
		globfree(&g);
	}
	return ret;
}

static int for_each_file(int (*fn)(const char *path, bool arg), bool arg)
{
	return for_each(".stat", fn, arg);
}

/* --clean: the files of a process that is gone (exited or killed). */
static int clean_file(const char *path, bool unused)
{
	struct umc_stat_view v;
	char err[128], ctl[UMC_RUNDIR_MAX + 32];
	const char *state;
	size_t n = strlen(path);

	(void)unused;
	if (umc_stat_open(path, &v, err))
		return 0;
	state = proc_state(&v);
	umc_stat_view_close(&v);
	if (!strcmp(state, "running"))
		return 0;
	snprintf(ctl, sizeof(ctl), "%.*s.ctl", (int)(n - 5), path);
	unlink(ctl);
	if (unlink(path)) {
		fprintf(stderr, "umc-stat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("removed %s (%s)\n", path, state);
	return 0;
}

/*
 * --clean: a control socket without a counters file beside it (umc-sm
 * has no counters file) whose process no longer exists.  A PID in use
 * again keeps it: the socket is replaced when that process binds its own.
 */
static int clean_ctl(const char *path, bool unused)
{
	char stat_path[UMC_RUNDIR_MAX + 32];
	const char *base = strrchr(path, '/');
	size_t n = strlen(path);
	struct stat st;
	long pid = base ? atol(base + 1) : 0;

	(void)unused;
	snprintf(stat_path, sizeof(stat_path), "%.*s.stat", (int)(n - 4), path);
	if (pid <= 0 || lstat(path, &st) || !S_ISSOCK(st.st_mode) || !access(stat_path, F_OK) ||
	    !kill((pid_t)pid, 0) || errno != ESRCH)
		return 0;
	if (unlink(path)) {
		fprintf(stderr, "umc-stat: %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("removed %s (gone)\n", path);
	return 0;
}

/*
 * --clean: the same-host path's files (umcast(7), SAME-HOST PATH) in @dir
 * that no process uses: a group's file (shm-NETNS-IFINDEX-GROUP) or one
 * its maker left half made (.PID.tmp), and a reader's wake-up FIFO
 * (.wSLOT-TOKEN).  The kernel tells, whoever the processes are:
 *
 * - a regular file takes a write lease (fcntl(2) F_SETLEASE F_WRLCK) only
 *   while no other process has it open or mapped (a process that uses a
 *   group's file keeps it mapped, not open), and it is removed under that
 *   lease: a process that opens it meanwhile waits for the lease to end,
 *   and, as it maps a group's file by its name once it has read its
 *   header (link/shm/group.c), never maps the removed one;
 * - a FIFO opens for writing without blocking (O_NONBLOCK) only while a
 *   process has it open for reading, as its reader does until it leaves.
 *
 * A file changed in the last UMC_CLEAN_SETTLE_S seconds is left alone: its
 * maker may be between making it and opening it.  Nothing else of the
 * directory is touched.
 */
enum { UMC_CLEAN_SETTLE_S = 10 };

/* Is the regular file @name of @dfd unused?  Then it is removed, under the lease. */
static bool shm_file_unused_removed(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool removed = false;

	if (fd < 0)
		return false;
	if (fcntl(fd, F_SETLEASE, F_WRLCK) == 0) {
		removed = unlinkat(dfd, name, 0) == 0;
		fcntl(fd, F_SETLEASE, F_UNLCK);
	}
	close(fd);
	return removed;
}

/* Has the FIFO @name of @dfd no reader?  (ENXIO: nobody has it open for reading.) */
static bool shm_fifo_unread(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return fd < 0 && errno == ENXIO;
}

static void clean_shm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	time_t now = time(NULL);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		bool removed;

		if (strncmp(e->d_name, "shm-", 4) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    st.st_mtime > now - UMC_CLEAN_SETTLE_S)
			continue;
		if (S_ISREG(st.st_mode))
			removed = shm_file_unused_removed(dirfd(d), e->d_name);
		else if (S_ISFIFO(st.st_mode) && shm_fifo_unread(dirfd(d), e->d_name))
			removed = unlinkat(dirfd(d), e->d_name, 0) == 0;
		else
			continue;
		if (removed)
			printf("removed %s/%s (unused)\n", dir, e->d_name);
	}
	closedir(d);
}

/*
 * --clean: the same-host path's files nobody uses, in RUNDIR/shm and in
 * RUNDIR itself, where earlier versions kept them (root: every user's).
 */
static void clean_shm(void)
{
	char dir[UMC_RUNDIR_MAX], sub[UMC_RUNDIR_MAX + 8];
	glob_t g;

	/* A lease broken meanwhile is told by SIGIO, whose default would end us. */
	signal(SIGIO, SIG_IGN);
	if (glob(visible_rundirs(dir, sizeof(dir)), GLOB_ONLYDIR, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", g.gl_pathv[i], UMC_RUNDIR_SHM);
		clean_shm_dir(sub);
		clean_shm_dir(g.gl_pathv[i]);
	}
	globfree(&g);
}

static int run_once(const struct opts *o)
{
	char path[UMC_RUNDIR_MAX + 32];
	int ret = 0;

	if (!o->npids) {
		if (json)
			return for_each_file(show_file, false);
		printf("%-8s %-8s %-16s %7s %7s  %s\n", "PID", "STATE", "COMMAND", "DEVICES",
		       "GROUPS", "FAULTS");
		return for_each_file(show_file, true);
	}
	for (int i = 0; i < o->npids; i++) {
		stat_path(o->pids[i], path, sizeof(path));
		ret |= show_file(path, false);
	}
	return ret;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"watch", required_argument, NULL, 'w'},
		{"clean", no_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "jw:h", lopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j':
			o->json = true;
			break;
		case 'w':
			o->watch = strtod(optarg, &end);
			if (*end || !(o->watch > 0) || o->watch > 86400) {
				fprintf(stderr, "umc-stat: -w takes seconds, more than 0\n");
				return 2;
			}
			break;
		case 'c':
			o->clean = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("umc-stat (umcast) %s\n", UMC_VERSION);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (o->clean && (optind < argc || o->json || o->watch)) {
		fputs(usage_text, stderr);
		return 2;
	}
	o->npids = argc - optind;
	o->pids = calloc((size_t)o->npids + 1, sizeof(*o->pids));
	if (!o->pids) {
		perror("umc-stat");
		return 1;
	}
	for (int i = 0; i < o->npids; i++) {
		char *end;
		long pid = strtol(argv[optind + i], &end, 10);

		if (*end || pid <= 0 || pid > 0x3fffffff) {
			fprintf(stderr, "umc-stat: '%s' is not a PID\n", argv[optind + i]);
			free(o->pids);
			return 2;
		}
		o->pids[i] = (pid_t)pid;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_sigbus};
	struct opts o;
	int ret = parse(argc, argv, &o);

	if (ret)
		return ret;
	json = o.json;
	sigaction(SIGBUS, &sa, NULL);
	if (o.clean) {
		int ret;

		free(o.pids);
		ret = for_each_file(clean_file, false);
		ret |= for_each(".ctl", clean_ctl, false);
		clean_shm();
		return ret;
	}
	for (;;) {
		ret = run_once(&o);
		fflush(stdout);
		if (!o.watch)
			break;
		struct timespec ts = {.tv_sec = (time_t)o.watch,
				      .tv_nsec = (long)((o.watch - (double)(time_t)o.watch) * 1e9)};

		nanosleep(&ts, NULL);
		if (!json)
			putchar('\n');
	}
	free(o.pids);
	return ret;
}
