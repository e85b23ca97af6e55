// SPDX-License-Identifier: MIT
/*
 * test_stat.c - the counters file (src/stat): what the writer puts where
 * stat.h says, what the reader gets back (consistent records while the
 * writer runs, torn ones reported, freed slots), the reader refusing
 * files that are not what their header claims, and the private run
 * directory (src/stat/rundir.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "stat/rundir.h"
#include "stat/stat.h"

static const char *const dev_names[] = {"rx_packets", "tx_packets", "fault_drop"};
static const char *const grp_names[] = {"rx_packets", "fault_dup"};
static const struct umc_stat_layout lay = {
	.ncnt = {[UMC_STAT_DEV] = 3, [UMC_STAT_GRP] = 2},
	.names = {[UMC_STAT_DEV] = dev_names, [UMC_STAT_GRP] = grp_names},
};

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/umc-test-stat-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static struct umc_stat_file *make(void)
{
	static struct umc_stat_file f;

	assert_int_equal(umc_stat_create(&f, dir, &lay), 0);
	return &f;
}

static void open_view(struct umc_stat_view *v, const char *path)
{
	char err[128];

	if (umc_stat_open(path, v, err))
		fail_msg("%s", err);
}

/* Field 22 of /proc/self/stat, read independently of writer.c. */
static unsigned long long start_ticks(void)
{
	FILE *fp = fopen("/proc/self/stat", "r");
	char buf[1024], *p;
	unsigned long long t = 0;

	assert_non_null(fgets(buf, sizeof(buf), fp));
	fclose(fp);
	p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 22; field++)
		p = strchr(p, ' ') + 1;
	sscanf(p, "%llu", &t);
	return t;
}

static void test_header_and_names(void **state)
{
	struct umc_stat_file *f = make();
	struct umc_stat_view v;
	char path[128], name[UMC_STAT_NAME_LEN + 1];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/%d.stat", dir, (int)getpid());
	assert_string_equal(f->path, path);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal((size_t)st.st_size, f->size);
	open_view(&v, path);
	assert_int_equal(v.hdr.pid, getpid());
	assert_int_equal(v.hdr.uid, geteuid());
	assert_int_equal(v.hdr.version, UMC_STAT_VERSION);
	assert_true(v.hdr.start_ticks == start_ticks());
	assert_true(umc_stat_proc_start(getpid()) == start_ticks());
	assert_true(umc_stat_proc_start(0x7ffffff0) == 0);
	assert_string_equal(v.hdr.comm, "test_stat");
	assert_non_null(strstr(v.hdr.cmdline, "test_stat"));
	assert_int_equal(umc_stat_state(&v), UMC_STAT_RUNNING);
	assert_int_equal(umc_stat_slots(&v, UMC_STAT_FAULTS), 1);
	assert_int_equal(umc_stat_slots(&v, UMC_STAT_DEV), UMC_STAT_DEV_SLOTS);
	assert_int_equal(umc_stat_slots(&v, UMC_STAT_QP), UMC_STAT_QP_SLOTS);
	assert_int_equal(umc_stat_slots(&v, UMC_STAT_GRP), UMC_STAT_GRP_SLOTS);
	assert_int_equal(umc_stat_ncounters(&v, UMC_STAT_DEV), 3);
	assert_int_equal(umc_stat_ncounters(&v, UMC_STAT_GRP), 2);
	assert_int_equal(umc_stat_ncounters(&v, UMC_STAT_QP), 0);
	assert_string_equal(umc_stat_counter_name(&v, UMC_STAT_DEV, 2, name), "fault_drop");
	assert_string_equal(umc_stat_counter_name(&v, UMC_STAT_GRP, 1, name), "fault_dup");
	assert_string_equal(umc_stat_counter_name(&v, UMC_STAT_GRP, 2, name), "");
	/* Records start on cache lines; every section lies inside the file. */
	for (int k = 0; k < UMC_STAT_NKIND; k++) {
		assert_int_equal(v.hdr.sect[k].off % UMC_STAT_ALIGN, 0);
		assert_int_equal(v.hdr.sect[k].size % UMC_STAT_ALIGN, 0);
		assert_true(v.hdr.sect[k].off + (uint64_t)v.hdr.sect[k].slots * v.hdr.sect[k].size <=
			    f->size);
	}
	umc_stat_set_state(f, UMC_STAT_EXITED);
	assert_int_equal(umc_stat_state(&v), UMC_STAT_EXITED);
	umc_stat_view_close(&v);
	umc_stat_close(f, true);
	assert_int_equal(stat(path, &st), -1);
}

static void test_records_and_counters(void **state)
{
	struct umc_stat_file *f = make();
	struct umc_stat_view v;
	struct umc_stat_dev d, *w;
	struct umc_stat_group g;
	_Atomic uint64_t *c;
	int i, j;

	(void)state;
	open_view(&v, f->path);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_DEV, 0, &d, sizeof(d)), -ENOENT);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_DEV, UMC_STAT_DEV_SLOTS, &d, sizeof(d)),
			 -ERANGE);
	i = umc_stat_slot_get(f, UMC_STAT_DEV);
	assert_int_equal(i, 0);
	w = umc_stat_rec(f, UMC_STAT_DEV, i);
	umc_stat_write_begin(&w->rec);
	strcpy(w->name, "umc_lo");
	w->lid = 7;
	umc_stat_write_end(&w->rec);
	c = umc_stat_counters(f, UMC_STAT_DEV, i);
	atomic_fetch_add(&c[0], 5);
	atomic_fetch_add(&c[2], 1ULL << 40);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_DEV, i, &d, sizeof(d)), 0);
	assert_string_equal(d.name, "umc_lo");
	assert_int_equal(d.lid, 7);
	assert_true(umc_stat_counter(&v, UMC_STAT_DEV, i, 0) == 5);
	assert_true(umc_stat_counter(&v, UMC_STAT_DEV, i, 1) == 0);
	assert_true(umc_stat_counter(&v, UMC_STAT_DEV, i, 2) == 1ULL << 40);
	assert_true(umc_stat_counter(&v, UMC_STAT_DEV, i, 3) == 0); /* no such counter */
	/* A freed slot reads as free, and its next tenant starts from zero. */
	umc_stat_slot_put(f, UMC_STAT_DEV, i);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_DEV, i, &d, sizeof(d)), -ENOENT);
	assert_int_equal(umc_stat_slot_get(f, UMC_STAT_DEV), i);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_DEV, i, &d, sizeof(d)), 0);
	assert_string_equal(d.name, "");
	assert_true(umc_stat_counter(&v, UMC_STAT_DEV, i, 0) == 0);
	/* Groups: every slot, then one too many, counted. */
	for (j = 0; j < UMC_STAT_GRP_SLOTS; j++)
		assert_int_equal(umc_stat_slot_get(f, UMC_STAT_GRP), j);
	assert_int_equal(umc_stat_slot_get(f, UMC_STAT_GRP), -ENOSPC);
	assert_true(v.base && ((const struct umc_stat_hdr *)v.base)->sect[UMC_STAT_GRP].overflow ==
				      1);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_GRP, UMC_STAT_GRP_SLOTS - 1, &g, sizeof(g)), 0);
	umc_stat_view_close(&v);
	umc_stat_close(f, true);
}

/* A record left odd (its writer killed in the middle) is reported torn, with what was there. */
static void test_torn(void **state)
{
	struct umc_stat_file *f = make();
	struct umc_stat_view v;
	struct umc_stat_qp q, *w;
	int i = umc_stat_slot_get(f, UMC_STAT_QP);

	(void)state;
	open_view(&v, f->path);
	w = umc_stat_rec(f, UMC_STAT_QP, i);
	umc_stat_write_begin(&w->rec);
	w->qpn = 0x11;
	assert_int_equal(umc_stat_read(&v, UMC_STAT_QP, i, &q, sizeof(q)), -EAGAIN);
	assert_int_equal(q.qpn, 0x11);
	umc_stat_write_end(&w->rec);
	assert_int_equal(umc_stat_read(&v, UMC_STAT_QP, i, &q, sizeof(q)), 0);
	umc_stat_view_close(&v);
	umc_stat_close(f, true);
}

/* While a writer rewrites a record, every read is one whole version of it. */
static atomic_bool stop;

static void *rewrite(void *arg)
{
	struct umc_stat_group *g = arg;

	for (uint8_t k = 0; !atomic_load(&stop); k++) {
		umc_stat_write_begin(&g->rec);
		memset(g->mgid, k, sizeof(g->mgid));
		for (int i = 0; i < UMC_STAT_GRP_QPS; i++)
			g->qpn[i] = k;
		g->mlid = k;
		umc_stat_write_end(&g->rec);
	}
	return NULL;
}

static void test_consistent_while_written(void **state)
{
	struct umc_stat_file *f = make();
	struct umc_stat_view v;
	struct umc_stat_group g;
	int i = umc_stat_slot_get(f, UMC_STAT_GRP), seen = 0;
	pthread_t t;

	(void)state;
	open_view(&v, f->path);
	atomic_store(&stop, false);
	assert_int_equal(pthread_create(&t, NULL, rewrite, umc_stat_rec(f, UMC_STAT_GRP, i)), 0);
	for (int n = 0; n < 20000; n++) {
		if (umc_stat_read(&v, UMC_STAT_GRP, i, &g, sizeof(g)))
			continue;
		for (int b = 0; b < 16; b++)
			assert_int_equal(g.mgid[b], g.mlid);
		for (int q = 0; q < UMC_STAT_GRP_QPS; q++)
			assert_int_equal(g.qpn[q], g.mlid);
		seen++;
	}
	atomic_store(&stop, true);
	pthread_join(t, NULL);
	assert_true(seen > 0);
	umc_stat_view_close(&v);
	umc_stat_close(f, true);
}

/* Counting works without a file: the same layout in anonymous memory. */
static void test_anonymous(void **state)
{
	static struct umc_stat_file f;
	int i;

	(void)state;
	assert_int_equal(umc_stat_create(&f, NULL, &lay), 0);
	assert_false(f.file);
	i = umc_stat_slot_get(&f, UMC_STAT_GRP);
	atomic_fetch_add(&umc_stat_counters(&f, UMC_STAT_GRP, i)[1], 3);
	assert_true(umc_stat_counters(&f, UMC_STAT_GRP, i)[1] == 3);
	umc_stat_close(&f, true);
}

/* Write @len bytes at @off of a copy of a good file, then open it. */
static int open_changed(const char *good, off_t off, const void *bytes, size_t len,
			off_t truncate_to, char *err)
{
	char path[128], cmd[300];
	struct umc_stat_view v;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/changed.stat", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", good, path);
	assert_int_equal(system(cmd), 0);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	if (len)
		assert_int_equal(pwrite(fd, bytes, len, off), (ssize_t)len);
	if (truncate_to >= 0)
		assert_int_equal(ftruncate(fd, truncate_to), 0);
	close(fd);
	rc = umc_stat_open(path, &v, err);
	if (!rc)
		umc_stat_view_close(&v);
	return rc;
}

static void test_hostile_files(void **state)
{
	struct umc_stat_file *f = make();
	const struct umc_stat_hdr *h = (const struct umc_stat_hdr *)f->base;
	size_t sect = offsetof(struct umc_stat_hdr, sect[UMC_STAT_GRP]);
	uint32_t big = 0x7fffffff, v2 = 2 << 16, small = 8, odd = 12;
	uint64_t far = f->size;
	char err[128], path[128];
	struct umc_stat_view v;

	(void)state;
	assert_int_equal(open_changed(f->path, 0, "UMCSTAT", 8, -1, err), -EBADMSG);
	assert_string_equal(err, "not an umcast counters file (or not written yet)");
	assert_int_equal(open_changed(f->path, offsetof(struct umc_stat_hdr, version), &v2, 4, -1,
				      err),
			 -EPROTONOSUPPORT);
	assert_string_equal(err, "counters file version 2.0, this reader knows 1.x");
	/* Cut short: the header's size no longer matches. */
	assert_int_equal(open_changed(f->path, 0, NULL, 0, (off_t)f->size - 4096, err), -EBADMSG);
	assert_string_equal(err, "the header does not fit the file");
	assert_int_equal(open_changed(f->path, 0, NULL, 0, 100, err), -EBADMSG);
	/* Sections that leave the file or records too small for their fields. */
	assert_int_equal(open_changed(f->path, (off_t)(sect + offsetof(struct umc_stat_sect, slots)),
				      &big, 4, -1, err),
			 -EBADMSG);
	assert_string_equal(err, "section 3 does not fit the file");
	assert_int_equal(open_changed(f->path, (off_t)(sect + offsetof(struct umc_stat_sect, off)),
				      &far, 8, -1, err),
			 -EBADMSG);
	assert_int_equal(open_changed(f->path, (off_t)(sect + offsetof(struct umc_stat_sect, size)),
				      &small, 4, -1, err),
			 -EBADMSG);
	assert_int_equal(open_changed(f->path,
				      (off_t)(sect + offsetof(struct umc_stat_sect, cnt_off)), &odd,
				      4, -1, err),
			 -EBADMSG);
	assert_int_equal(open_changed(f->path, (off_t)(sect + offsetof(struct umc_stat_sect, ncnt)),
				      &big, 4, -1, err),
			 -EBADMSG);
	assert_int_equal(open_changed(f->path,
				      (off_t)(sect + offsetof(struct umc_stat_sect, names_off)),
				      &far, 8, -1, err),
			 -EBADMSG);
	(void)h;
	/* Not a regular file; a symbolic link is not followed. */
	assert_int_equal(umc_stat_open(dir, &v, err), -EBADMSG);
	snprintf(path, sizeof(path), "%s/link.stat", dir);
	assert_int_equal(symlink(f->path, path), 0);
	assert_int_equal(umc_stat_open(path, &v, err), -ELOOP);
	unlink(path);
	umc_stat_close(f, true);
}

/* A counters file of a process that is gone (a PID with another start time), made @created. */
static void fake_gone(const char *name, int64_t created)
{
	struct umc_stat_hdr h = {.version = UMC_STAT_VERSION, .pid = getpid(), .start_ticks = 1,
				 .created_sec = created};
	char path[128];
	int fd;

	memcpy(h.magic, UMC_STAT_MAGIC, sizeof(UMC_STAT_MAGIC));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof(h)), (ssize_t)sizeof(h));
	close(fd);
}

static bool exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* The newest files of gone processes stay, @keep of them; the rest go with their sockets. */
static void test_prune(void **state)
{
	struct umc_stat_file *f = make();
	char mine[64];

	(void)state;
	fake_gone("101.stat", 1000);
	fake_gone("102.stat", 3000);
	fake_gone("103.stat", 2000);
	fake_gone("104.stat", 500);
	fake_gone("101.ctl", 0);
	fake_gone("notes.txt", 0);
	umc_stat_prune(dir, 2);
	assert_true(exists("102.stat") && exists("103.stat"));
	assert_false(exists("101.stat") || exists("104.stat") || exists("101.ctl"));
	assert_true(exists("notes.txt"));
	snprintf(mine, sizeof(mine), "%d.stat", (int)getpid());
	assert_true(exists(mine)); /* a running process's */
	umc_stat_prune(dir, 0);
	assert_false(exists("102.stat") || exists("103.stat"));
	assert_true(exists(mine));
	umc_stat_close(f, true);
}

static void test_rundir(void **state)
{
	char path[UMC_RUNDIR_MAX], why[256], want[256];
	struct stat st;
	const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";

	(void)state;
	snprintf(want, sizeof(want), "%s/run", dir);
	setenv("UMC_RUN_DIR", want, 1);
	assert_int_equal(umc_rundir_make(path, sizeof(path), why, sizeof(why)), 0);
	assert_string_equal(path, want);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	/* Made again: found as it is. */
	assert_int_equal(umc_rundir_make(path, sizeof(path), why, sizeof(why)), 0);
	/* Opened to others: refused, and said why. */
	chmod(path, 0755);
	assert_int_equal(umc_rundir_make(path, sizeof(path), why, sizeof(why)), -EPERM);
	snprintf(want, sizeof(want),
		 "%s/run is not a private directory of uid %u (directory, uid %u, mode 0755)", dir,
		 (unsigned)geteuid(), (unsigned)geteuid());
	assert_string_equal(why, want);
	rmdir(path);
	/* A symbolic link to a private directory is not used. */
	assert_int_equal(symlink(dir, path), 0);
	assert_int_equal(umc_rundir_make(path, sizeof(path), why, sizeof(why)), -EPERM);
	unlink(path);
	/* The same-host path's subdirectory: made 0700 inside, checked alike. */
	snprintf(want, sizeof(want), "%s/run/shm", dir);
	assert_int_equal(umc_rundir_make_shm(path, sizeof(path), why, sizeof(why)), 0);
	assert_string_equal(path, want);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	chmod(path, 0750);
	assert_int_equal(umc_rundir_make_shm(path, sizeof(path), why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "/run/shm is not a private directory"));
	rmdir(path);
	snprintf(want, sizeof(want), "%s/run", dir);
	rmdir(want);
	unsetenv("UMC_RUN_DIR");
	/* The default: memory (/dev/shm) when there is such a directory. */
	assert_int_equal(umc_rundir_path(1234, path, sizeof(path)), 0);
	snprintf(want, sizeof(want), "%s/umcast-1234", base);
	assert_string_equal(path, want);
	snprintf(want, sizeof(want), "%s/umcast-*", base);
	assert_string_equal(umc_rundir_glob(why, sizeof(why)), want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_and_names),
		cmocka_unit_test(test_records_and_counters),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_consistent_while_written),
		cmocka_unit_test(test_anonymous),
		cmocka_unit_test(test_hostile_files),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_rundir),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
