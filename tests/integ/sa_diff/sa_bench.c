// SPDX-License-Identifier: MIT
/*
 * sa_bench.c - the SA join benchmark's measuring side (bench/sm-bench.sh
 * runs it against umc-sm and against OpenSM on ibsim):
 *
 *   sa_client --opensm|--sm ADDR:PORT bench joins PROCS COUNT
 *       PROCS worker processes, one port each (ibsim nodes H2.., or ports
 *       registered with umc-sm), each makes COUNT full-member joins of
 *       MGIDs no one else uses (each join creates its group), one after
 *       the other.  Prints "result joins_per_sec R": all joins divided by
 *       the time from the first worker's start to the last one's end.
 *   sa_client --opensm|--sm ADDR:PORT bench create COUNT
 *       one worker creates COUNT groups, one after the other, all existing
 *       at the end (OpenSM needs an ibsim MulticastFDBCap above COUNT:
 *       opensm.sh -M).  Prints "result create_seconds S".
 *
 * Workers are this program executed again (sa_spawn), and start together:
 * each opens its port, says it is ready, and waits for its stdin to close.
 * Every create must succeed (status 0, MLID in the multicast range), or the
 * run fails.  Exit status: 0, 1 when a join failed, 2 on other errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sa_client.h"

enum {
	BENCH_MAX_PROCS = 16,
	BENCH_READY_MS = 30000,
	BENCH_RUN_MS = 600000,
	BENCH_XACT_MS = 5000,
};

/* What a worker sends: once when ready, once when done. */
struct bench_msg {
	int32_t rc;	  /* 0, or the failed join's -errno / SA status */
	int32_t done;	  /* joins made */
	int64_t t0, t1;	  /* CLOCK_MONOTONIC ns: start, end */
};

static void set_field(uint8_t *rec, const char *key, uint64_t v)
{
	const struct sa_field *f = sa_field_by_key(sa_mcmr_fields, key);

	sa_set_bits(rec, f->bit, f->width, v);
}

static void build_mcmr(uint8_t *mad, uint8_t method, uint64_t mask, const struct sa_node *n,
		       const uint8_t *mgid)
{
	uint8_t *rec = mad + SA_HDR_LEN;

	memset(mad, 0, SA_MAD_SIZE);
	mad[0] = 1;
	mad[1] = SA_MGMT_CLASS;
	mad[2] = SA_CLASS_VERSION;
	mad[3] = method;
	sa_set_bits(mad, 64, 64, sa_next_tid());
	sa_set_bits(mad, 128, 16, SA_ATTR_MCMR);
	sa_set_bits(mad, 384, 64, mask);
	memcpy(rec, mgid, 16);
	sa_set_bits(rec, 128, 64, n->prefix);
	sa_set_bits(rec, 192, 64, n->guid);
	set_field(rec, "join", 1);
}

/**
 * sa_build_create - write a full-member create of @mgid for node @n: the
 * kernel's component mask (0x130C7), RDMA_PS_UDP's Q_Key, the default P_Key.
 * @mad:  SA_MAD_SIZE bytes
 * @n:    the joining port (its GID is the PortGID)
 * @mgid: 16 bytes
 *
 * Context: pure, but for a fresh TransactionID (sa_next_tid).
 */
void sa_build_create(uint8_t *mad, const struct sa_node *n, const uint8_t *mgid)
{
	uint8_t *rec = mad + SA_HDR_LEN;

	build_mcmr(mad, SA_METHOD_SET, 0x130c7, n, mgid);
	set_field(rec, "qkey", 0x01234567);
	set_field(rec, "pkey", 0xffff);
}

/* MGID ff12:4001:TTTT:WWWW:0:0:IIII:IIII: tag, worker, index. */
static void bench_mgid(uint8_t *mgid, unsigned tag, unsigned worker, uint32_t i)
{
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12;
	mgid[2] = 0x40;
	mgid[3] = 0x01;
	sa_set_bits(mgid, 32, 16, tag);
	sa_set_bits(mgid, 48, 16, worker);
	sa_set_bits(mgid, 96, 32, i);
}

/* One SA transaction that must succeed: 0, -errno, or the SA status (> 0). */
static int must_xact(struct sa_xport *x, struct sa_node *n, uint8_t *req)
{
	uint8_t rep[SA_MAD_SIZE];
	int rc = x->ops->xact(x, n, req, rep, BENCH_XACT_MS);
	uint16_t status;

	if (rc)
		return rc;
	status = (uint16_t)sa_get_bits(rep, 32, 16);
	if (status)
		return status;
	if ((req[3] & 0x7f) == SA_METHOD_SET && sa_get_bits(rep + SA_HDR_LEN, 288, 16) < 0xc000)
		return -EPROTO;
	return 0;
}

/**
 * sa_bench_worker_main - one bench worker: opens NODE's port, reports
 * ready on stdout, waits for stdin to close, makes COUNT creates of its own
 * MGIDs and reports the times.
 * @x:    the transport, in-process mode
 * @argc: 4
 * @argv: NODE COUNT TAG INDEX (TAG and INDEX make its MGIDs its own)
 *
 * Returns: the exit status: 0, 1 when a create failed, 2 on other errors.
 */
int sa_bench_worker_main(struct sa_xport *x, int argc, char **argv)
{
	struct sa_node n = { 0 };
	struct bench_msg m = { 0 };
	unsigned tag, index;
	uint32_t count, i;
	char c;

	if (argc != 4)
		return 2;
	snprintf(n.name, sizeof(n.name), "%s", argv[0]);
	count = (uint32_t)strtoul(argv[1], NULL, 0);
	tag = (unsigned)strtoul(argv[2], NULL, 0);
	index = (unsigned)strtoul(argv[3], NULL, 0);
	m.rc = x->ops->open(x, &n);
	if (sa_write_all(1, &m, sizeof(m)) || m.rc) {
		x->ops->close(x, &n);
		return 2;
	}
	while (read(0, &c, 1) > 0) /* the start: stdin closes */
		;
	m.t0 = sa_now_ns();
	for (i = 0; i < count; i++) {
		uint8_t mad[SA_MAD_SIZE], mgid[16];

		bench_mgid(mgid, tag, index, i);
		sa_build_create(mad, &n, mgid);
		m.rc = must_xact(x, &n, mad);
		if (m.rc)
			break;
		m.done++;
	}
	m.t1 = sa_now_ns();
	sa_write_all(1, &m, sizeof(m));
	x->ops->close(x, &n);
	return m.rc ? 1 : 0;
}

struct bench_proc {
	pid_t pid;
	int to, from;
	struct bench_msg m;
};

/* Run @nprocs workers with @count creates each; fills @p[i].m. */
static int run_workers(struct sa_xport *x, struct bench_proc *p, int nprocs, uint32_t count)
{
	unsigned tag = (unsigned)(getpid() & 0xffff);
	int i, rc = 0;

	for (i = 0; i < nprocs; i++) {
		char node[SA_NAME_LEN], cnt[16], tg[16], idx[16];
		char *args[] = { "--worker", x->sm_addr ? "--sm" : "--opensm", NULL, NULL,
				 NULL, NULL, NULL, NULL };
		int k = 2;

		if (x->sm_addr)
			args[k++] = (char *)x->sm_addr;
		snprintf(node, sizeof(node), "H%d", i + 2);
		snprintf(cnt, sizeof(cnt), "%u", count);
		snprintf(tg, sizeof(tg), "%u", tag);
		snprintf(idx, sizeof(idx), "%d", i);
		args[k++] = node;
		args[k++] = cnt;
		args[k++] = tg;
		args[k++] = idx;
		p[i].pid = sa_spawn(x, x->sm_addr ? NULL : node, args, &p[i].to, &p[i].from);
		if (p[i].pid < 0) {
			nprocs = i;
			rc = -EAGAIN;
			break;
		}
	}
	for (i = 0; !rc && i < nprocs; i++) { /* all ready */
		rc = sa_read_all(p[i].from, &p[i].m, sizeof(p[i].m), BENCH_READY_MS);
		if (!rc && p[i].m.rc)
			rc = p[i].m.rc;
		if (rc)
			fprintf(stderr, "sa_client bench: worker H%d did not start: %s\n", i + 2,
				strerror(-rc));
	}
	for (i = 0; i < nprocs; i++) /* the start */
		close(p[i].to);
	for (i = 0; !rc && i < nprocs; i++) {
		rc = sa_read_all(p[i].from, &p[i].m, sizeof(p[i].m), BENCH_RUN_MS);
		if (!rc && p[i].m.rc) {
			fprintf(stderr, "sa_client bench: worker H%d: create %d failed: %s%d\n",
				i + 2, p[i].m.done + 1, p[i].m.rc > 0 ? "SA status 0x" : "errno ",
				p[i].m.rc > 0 ? p[i].m.rc : -p[i].m.rc);
			rc = 1;
		}
	}
	for (i = 0; i < nprocs; i++) {
		close(p[i].from);
		sa_reap(p[i].pid, BENCH_READY_MS);
	}
	return rc;
}

/**
 * sa_bench_main - "bench joins PROCS COUNT" or "bench create COUNT" (top
 * of this file): run the workers and print the result line.
 * @x:    the transport (the workers use the same)
 * @argc: arguments from "bench" on
 * @argv: them
 *
 * Returns: the exit status: 0, 1 when a join failed, 2 on other errors.
 */
int sa_bench_main(struct sa_xport *x, int argc, char **argv)
{
	struct bench_proc p[BENCH_MAX_PROCS] = { 0 };
	int64_t t0 = INT64_MAX, t1 = 0, total = 0;
	uint32_t count;
	int nprocs, i, rc;

	if (argc == 4 && !strcmp(argv[1], "joins")) {
		nprocs = atoi(argv[2]);
		count = (uint32_t)strtoul(argv[3], NULL, 0);
	} else if (argc == 3 && !strcmp(argv[1], "create")) {
		nprocs = 1;
		count = (uint32_t)strtoul(argv[2], NULL, 0);
	} else {
		fprintf(stderr, "usage: ... bench joins PROCS COUNT | bench create COUNT\n");
		return 2;
	}
	if (nprocs < 1 || nprocs > BENCH_MAX_PROCS || !count) {
		fprintf(stderr, "sa_client bench: 1..%d processes, COUNT > 0\n", BENCH_MAX_PROCS);
		return 2;
	}
	rc = run_workers(x, p, nprocs, count);
	if (rc)
		return rc == 1 ? 1 : 2;
	for (i = 0; i < nprocs; i++) {
		t0 = p[i].m.t0 < t0 ? p[i].m.t0 : t0;
		t1 = p[i].m.t1 > t1 ? p[i].m.t1 : t1;
		total += p[i].m.done;
	}
	if (!strcmp(argv[1], "joins"))
		printf("result joins_per_sec %.1f\n", (double)total * 1e9 / (double)(t1 - t0));
	else
		printf("result create_seconds %.4f\n", (double)(p[0].m.t1 - p[0].m.t0) / 1e9);
	return 0;
}
