// SPDX-License-Identifier: MIT
/*
 * sa-bench - SA join rate of a running umc-sm.
 *
 *   sa-bench [--sm ADDR:PORT] [-p procs] [-n joins] [-w window] [-g groups]
 *
 * Phase 1: -p processes (default 8) each register a port, wait for a
 * common start, then send -n (default 1000) MCMemberRecord Sets as
 * FullMember, -w (default 1) in flight at a time, each to a group of its
 * own (so every Set creates a group), then Delete them.  Printed:
 * the Sets per second of all processes together, from the start to the
 * last answer.  Phase 2: one process creates -g (default 10 000) groups,
 * 64 Sets in flight, and the time that takes is printed (umc-sm lets one
 * port, and one user, create 8192 unless started with --max-groups-per-port
 * and --max-groups-per-host).
 * Every Set must succeed (status 0), or sa-bench exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sa/sa_addr.h"
#include "sa/sa_client.h"
#include "umc_param.h"
#include "wire/be.h"

struct flight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight, failed;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void done(void *ctx, int err, const struct umc_sa_reply *r)
{
	struct flight *f = ctx;

	pthread_mutex_lock(&f->lock);
	if (err || r->status)
		f->failed++;
	f->inflight--;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void build(uint8_t *mad, uint8_t method, const uint8_t gid[16], unsigned proc, unsigned i)
{
	struct umc_sa_hdr h = {
		.mad = { .base_version = 1, .mgmt_class = UMC_MGMT_CLASS_SUBN_ADM, .class_version = 2,
			 .method = method, .attr_id = UMC_SA_ATTR_MCMEMBER_RECORD },
		.comp_mask = method == UMC_MAD_METHOD_SET ? UMC_MCM_CREATE_MASK : UMC_MCM_JOIN_MASK,
	};
	struct umc_mcmember r = { .qkey = 0x01234567, .pkey = 0xffff, .join_state = UMC_JOIN_FULL };

	/* ff12:4001:ffff::<proc>:<i>, an RDMA CM style MGID per (process, join) */
	r.mgid[0] = 0xff, r.mgid[1] = 0x12, r.mgid[2] = 0x40, r.mgid[3] = 0x01;
	r.mgid[4] = r.mgid[5] = 0xff;
	put_be16(r.mgid + 10, (uint16_t)proc);
	put_be32(r.mgid + 12, i);
	memcpy(r.port_gid, gid, 16);
	memset(mad, 0, UMC_MAD_SIZE);
	umc_sa_hdr_encode(mad, &h);
	umc_mcmember_encode(mad + UMC_SA_HDR_LEN, &r);
}

/* @n requests of @method, @window in flight; returns the failures. */
static unsigned run(struct umc_sa_client *c, uint8_t method, unsigned proc, unsigned n,
		    unsigned window)
{
	struct flight f = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };
	struct umc_sa_port_attr a;
	uint8_t mad[UMC_MAD_SIZE];
	unsigned i;

	umc_sa_query_port(c, &a);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&f.lock);
		while (f.inflight >= window)
			pthread_cond_wait(&f.cond, &f.lock);
		f.inflight++;
		pthread_mutex_unlock(&f.lock);
		build(mad, method, a.gid, proc, i);
		if (umc_sa_send(c, mad, 0, 2, done, &f, NULL)) {
			pthread_mutex_lock(&f.lock);
			f.failed++;
			f.inflight--;
			pthread_mutex_unlock(&f.lock);
		}
	}
	pthread_mutex_lock(&f.lock);
	while (f.inflight)
		pthread_cond_wait(&f.cond, &f.lock);
	pthread_mutex_unlock(&f.lock);
	return f.failed;
}

static int open_port(const struct sockaddr_in *sm, struct umc_sa_client **c)
{
	struct umc_sa_open_args a = { .sm = *sm, .data = { .sin_family = AF_INET } };
	int rc = umc_sa_open(&a, c);

	if (rc)
		fprintf(stderr, "sa-bench: cannot register: %s\n", strerror(-rc));
	return rc;
}

static void child(const struct sockaddr_in *sm, unsigned proc, unsigned n, unsigned window,
		  int ready, int go, int result)
{
	struct umc_sa_client *c;
	char b = 0;
	unsigned failed;

	if (open_port(sm, &c)) {
		b = 1; /* tells main() not to start the others */
		_exit(write(ready, &b, 1) == 1 ? 1 : 2);
	}
	if (write(ready, &b, 1) != 1 || read(go, &b, 1) != 1)
		_exit(1);
	failed = run(c, UMC_MAD_METHOD_SET, proc, n, window);
	if (write(result, &failed, sizeof(failed)) != sizeof(failed))
		_exit(1);
	failed += run(c, UMC_SA_METHOD_DELETE, proc, n, window);
	umc_sa_close(c);
	_exit(failed ? 1 : 0);
}

int main(int argc, char **argv)
{
	unsigned procs = 8, n = 1000, window = 1, groups = 10000, i, failed = 0, f;
	int ready[2], go[2], result[2], st, opt, bad = 0;
	const char *smtext = getenv("UMC_SM");
	struct umc_sa_client *c;
	struct sockaddr_in sm;
	double t0, t1;
	char b;

	while ((opt = getopt(argc, argv, "S:p:n:w:g:")) != -1) {
		switch (opt) {
		case 'S': smtext = optarg; break;
		case 'p': procs = (unsigned)atoi(optarg); break;
		case 'n': n = (unsigned)atoi(optarg); break;
		case 'w': window = (unsigned)atoi(optarg); break;
		case 'g': groups = (unsigned)atoi(optarg); break;
		default: bad = 1;
		}
	}
	if (bad || !procs || !n || !window ||
	    umc_sa_parse_endpoint(smtext ? smtext : "127.0.0.1", UMC_SM_UDP_PORT, &sm)) {
		fputs("usage: sa-bench [-S ADDR:PORT] [-p procs] [-n joins] [-w window] [-g groups]\n",
		      stderr);
		return 2;
	}
	if (pipe(ready) || pipe(go) || pipe(result))
		return 1;
	for (i = 0; i < procs; i++)
		if (!fork())
			child(&sm, i + 1, n, window, ready[1], go[0], result[1]);
	/*
	 * A child that cannot register says so and exits; closing go then
	 * ends the others.  One that dies later ends the result reads: main()
	 * holds no write end of its own.
	 */
	close(ready[1]);
	close(result[1]);
	for (i = 0; i < procs; i++)
		if (read(ready[0], &b, 1) != 1 || b) {
			close(go[1]);
			while (wait(NULL) > 0)
				;
			return 1;
		}
	t0 = now_s();
	for (i = 0; i < procs; i++)
		if (write(go[1], &b, 1) != 1)
			return 1;
	for (i = 0; i < procs; i++) {
		if (read(result[0], &f, sizeof(f)) != sizeof(f))
			return 1;
		failed += f;
	}
	t1 = now_s();
	for (i = 0; i < procs; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed++;
	printf("sa-bench: %u processes x %u joins (window %u): %.0f joins/s (%.3f s)\n", procs, n,
	       window, procs * n / (t1 - t0), t1 - t0);
	if (groups) {
		if (open_port(&sm, &c))
			return 1;
		t0 = now_s();
		failed += run(c, UMC_MAD_METHOD_SET, 0, groups, 64);
		t1 = now_s();
		printf("sa-bench: %u groups created (1 process, 64 in flight): %.1f ms\n", groups,
		       (t1 - t0) * 1e3);
		failed += run(c, UMC_SA_METHOD_DELETE, 0, groups, 64);
		umc_sa_close(c);
	}
	if (failed)
		fprintf(stderr, "sa-bench: %u requests failed\n", failed);
	return failed ? 1 : 0;
}
