// SPDX-License-Identifier: MIT
/*
 * test_hotpath_alloc.c - the data path allocates nothing (issue 3: "no
 * allocation per message"; docs/design.md "Data path").
 *
 * This executable defines malloc, calloc, realloc and free itself, so every
 * allocation of the process, the library's included (it is linked in
 * statically), goes through a counter before reaching glibc.  After a
 * warm-up (which opens the send socket and the receive buffers), thousands
 * of ibv_post_send / ibv_post_recv / ibv_poll_cq calls carrying real
 * datagrams must not move the counter, on the loopback RoCEv2 device and on
 * the simulated InfiniBand link (against a umc-sm this program starts,
 * $UMC_BIN).  Group datagrams land straight in the posted buffers on both
 * (verbs/rx_lend.c: the lent receives); the runs count rx_in_place, so they
 * prove the landing path itself allocates nothing.  RoCE unicast goes
 * through the host's demultiplexer (link/roce/uc/): steered by the
 * kernel straight to the QP's socket, or, with UMC_UC_STEER=0, passed on by
 * the demultiplexer's agent thread.
 *
 * The process takes a network namespace of its own when it can
 * (tests/lib/isolate.h): then it is its own demultiplexer and every thread
 * counts.  Where it cannot, another umcast process may register with its
 * demultiplexer at any time, which allocates on the agent thread (control
 * path): that thread is then left out, and so is the unicast case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <sys/prctl.h>

#include "isolate.h"
#include "verbs_util.h"

static atomic_ulong allocs;
static bool isolated;

#if defined(__has_feature) /* clang */
#define UMC_HAS_FEATURE(x) __has_feature(x)
#else
#define UMC_HAS_FEATURE(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
	UMC_HAS_FEATURE(address_sanitizer) || UMC_HAS_FEATURE(thread_sanitizer)
#define UMC_COUNTING_ALLOCATOR 0 /* the sanitizer owns malloc */
#else
#define UMC_COUNTING_ALLOCATOR 1

/* Count this allocation?  Not the demultiplexer's, unless we are alone. */
static bool counted(void)
{
	char name[16] = "";

	return isolated || prctl(PR_GET_NAME, name) || strcmp(name, "umc-ucast") != 0;
}

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n)
{
	atomic_fetch_add(&allocs, counted());
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	atomic_fetch_add(&allocs, counted());
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&allocs, counted());
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
#endif

/*
 * A receive has room for the GRH area, the payload and what an IB packet
 * carries behind its headers (ImmDt, ICRC, VCRC), so that it lands in place.
 */
enum { BATCH = 64, ROUNDS = 200, SIZE = 256, SLOT = 40 + SIZE + 16 };

struct rig {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *tx, *rx;
	struct ibv_mr *mr;
	struct ibv_ah *ah, *uc_ah; /* to the group; RoCE: to 127.0.0.1 */
	union ibv_gid mgid;
	uint16_t mlid; /* IB: the group's MLID; RoCE: 0 */
	uint8_t *buf; /* BATCH receive slots, then one send buffer */
};

static struct ibv_qp *make_qp(struct rig *r)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.qp_type = IBV_QPT_UD,
		.cap = {.max_send_wr = BATCH, .max_recv_wr = BATCH, .max_send_sge = 1,
			.max_recv_sge = 1},
	};
	struct ibv_qp *qp = ibv_create_qp(r->pd, &ia);
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .qkey = 0x01234567, .port_num = 1};

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a,
				       IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_PORT | IBV_QP_PKEY_INDEX),
			 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

static void rig_up(struct rig *r, const char *name)
{
	bool ib = strcmp(name, "umc_lo") != 0;

	memset(r, 0, sizeof(*r));
	r->ctx = t_open_dev(name);
	assert_non_null(r->ctx);
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, 4 * BATCH, NULL, NULL, 0);
	assert_non_null(r->cq);
	r->tx = make_qp(r);
	r->rx = make_qp(r);
	r->buf = aligned_alloc(64, (BATCH + 1) * SLOT);
	r->mr = ibv_reg_mr(r->pd, r->buf, (BATCH + 1) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(r->mr);
	if (ib) {
		assert_true(t_ib_port_active(r->ctx));
		/* ff12:401b::3:1 on MLID 0xC301. */
		r->mgid = t_ib_mgid(3, 1);
		r->mlid = 0xC301;
	} else {
		r->mgid.raw[10] = r->mgid.raw[11] = 0xff;
		inet_pton(AF_INET, "239.77.1.9", r->mgid.raw + 12);
		assert_int_equal(umc_dev_member(ctx_dev(r->ctx), &r->mgid, +1), 0);
	}
	assert_int_equal(ibv_attach_mcast(r->rx, &r->mgid, r->mlid), 0);
	struct ibv_ah_attr aa = {.is_global = 1, .dlid = r->mlid, .port_num = 1,
				 .grh = {.dgid = r->mgid, .hop_limit = 64}};
	r->ah = ibv_create_ah(r->pd, &aa);
	assert_non_null(r->ah);
	if (!ib) {
		r->uc_ah = t_ipv4_ah(r->pd, INADDR_LOOPBACK);
		assert_non_null(r->uc_ah);
	}
}

static void rig_down(struct rig *r)
{
	assert_int_equal(ibv_detach_mcast(r->rx, &r->mgid, r->mlid), 0);
	if (!r->mlid)
		umc_dev_member(ctx_dev(r->ctx), &r->mgid, -1);
	ibv_destroy_ah(r->ah);
	if (r->uc_ah)
		ibv_destroy_ah(r->uc_ah);
	ibv_destroy_qp(r->tx);
	ibv_destroy_qp(r->rx);
	ibv_dereg_mr(r->mr);
	free(r->buf);
	ibv_destroy_cq(r->cq);
	ibv_dealloc_pd(r->pd);
	ibv_close_device(r->ctx);
}

/*
 * One batch: BATCH receives posted, BATCH sends in one chain, all
 * completions polled.  @unicast: to the rx QP's QPN at 127.0.0.1, else to
 * the group.
 */
static void round_trip(struct rig *r, unsigned round, bool unicast)
{
	struct ibv_sge rsge[BATCH], ssge[BATCH];
	struct ibv_recv_wr rwr[BATCH], *rbad;
	struct ibv_send_wr swr[BATCH], *sbad;
	struct ibv_wc wc[BATCH];
	uint8_t *sbuf = r->buf + BATCH * SLOT;
	int recvs = 0, sends = 0;

	for (int i = 0; i < BATCH; i++) {
		rsge[i] = (struct ibv_sge){(uintptr_t)(r->buf + i * SLOT), SLOT, r->mr->lkey};
		rwr[i] = (struct ibv_recv_wr){.wr_id = i, .sg_list = &rsge[i], .num_sge = 1,
					      .next = i + 1 < BATCH ? &rwr[i + 1] : NULL};
		ssge[i] = (struct ibv_sge){(uintptr_t)sbuf, SIZE, r->mr->lkey};
		swr[i] = (struct ibv_send_wr){
			.wr_id = i, .sg_list = &ssge[i], .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
			.imm_data = htonl(round), .next = i + 1 < BATCH ? &swr[i + 1] : NULL,
			.wr.ud = {.ah = unicast ? r->uc_ah : r->ah,
				  .remote_qpn = unicast ? r->rx->qp_num : 0xffffff,
				  .remote_qkey = 0x01234567},
		};
	}
	memset(sbuf, (int)round, SIZE);
	assert_int_equal(ibv_post_recv(r->rx, rwr, &rbad), 0);
	assert_int_equal(ibv_post_send(r->tx, swr, &sbad), 0);
	/* Bounded: loopback delivery is immediate; 10^7 empty polls would be a hang. */
	for (long spins = 0; (recvs < BATCH || sends < BATCH) && spins < 10000000; spins++) {
		int n = ibv_poll_cq(r->cq, BATCH, wc);

		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			if (wc[i].opcode == IBV_WC_RECV) {
				assert_int_equal(wc[i].byte_len, 40 + SIZE);
				assert_int_equal(ntohl(wc[i].imm_data), round);
				recvs++;
			} else {
				sends++;
			}
		}
	}
	assert_int_equal(recvs, BATCH);
	assert_int_equal(sends, BATCH);
}

/*
 * ROUNDS batches over device @name (@unicast: RoCE unicast to the rx QP)
 * allocate nothing; returns the receives completed in place.
 */
static unsigned long data_path_allocs(const char *name, bool unicast)
{
	struct rig r;

	if (!UMC_COUNTING_ALLOCATOR)
		skip(); /* under ASan the allocator is not ours to count */
	if (unicast && !isolated)
		skip(); /* the demultiplexer may be another process's, or serve others */
	rig_up(&r, name);
	round_trip(&r, 0, unicast); /* warm-up: send socket, receive buffers */

	unsigned long before = atomic_load(&allocs);
	unsigned long in_place = T_CNT(ctx_dev(r.ctx), rx_in_place);

	for (unsigned i = 1; i <= ROUNDS; i++)
		round_trip(&r, i, unicast);
	unsigned long during = atomic_load(&allocs) - before;

	in_place = T_CNT(ctx_dev(r.ctx), rx_in_place) - in_place;
	print_message("%s %s: %d datagrams sent and received (%lu in place), %lu allocations\n",
		      name, unicast ? "unicast" : "multicast", ROUNDS * BATCH, in_place, during);
	assert_int_equal(during, 0);
	/* The counter works: the set-up did allocate. */
	assert_true(before > 0);
	if (unicast) {
		const char *steer = getenv("UMC_UC_STEER");
		unsigned long fwd = T_CNT(ctx_dev(r.ctx), uc_forwarded);

		/* Steered straight to our socket, or (UMC_UC_STEER=0) passed on by our agent. */
		if (steer && *steer == '0')
			assert_true(fwd >= ROUNDS * BATCH);
		else
			assert_int_equal(fwd, 0);
	}
	rig_down(&r);
	return in_place;
}

/*
 * Both links land group datagrams in their posted receives, and that
 * allocates nothing.  How many land depends on how the bursts fall (the
 * engine lends what the last burst brought, plus one for large
 * datagrams), so only "some did" is asserted.
 */
static void test_data_path_allocates_nothing(void **state)
{
	(void)state;
	assert_true(data_path_allocs("umc_lo", false) > 0);
}

static void test_unicast_path_allocates_nothing(void **state)
{
	(void)state;
	data_path_allocs("umc_lo", true);
}

static void test_ib_landing_allocates_nothing(void **state)
{
	(void)state;
	assert_true(data_path_allocs("umc_ib0", false) > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data_path_allocates_nothing),
		cmocka_unit_test(test_unicast_path_allocates_nothing),
		cmocka_unit_test(test_ib_landing_allocates_nothing),
	};

	isolated = t_isolate_netns(); /* first: umc-sm and the devices live in it */
	/* The group's umc-sm starts before any device opens: the IB port registers with it. */
	return cmocka_run_group_tests(tests, t_sm_required, t_sm_stop);
}
