// SPDX-License-Identifier: MIT
/*
 * test_verbs_mr.c - memory regions: what ibv_reg_mr accepts, and that a
 * datagram is never written outside a live MR.
 *
 * References:
 *   Linux ib_umem_get (drivers/infiniband/core/umem.c): an address range
 *     that wraps, or whose page-aligned end wraps, is EINVAL; a range that
 *     covers no page (length 0 at a page boundary) is EINVAL; pages are
 *     pinned with FOLL_WRITE when the access is writable (LOCAL_WRITE,
 *     REMOTE_WRITE, REMOTE_ATOMIC), so memory that is not mapped, not
 *     readable, or (with a write access) not writable is EFAULT;
 *   IBA 10.6.3.1 / ibv_reg_mr(3): remote write or atomic needs local write;
 *   IBA's "local protection error" completion status (the receive WQE's
 *     buffer is not in a valid MR of the QP's PD); rxe's copy_data
 *     looks the L_Key up when the datagram arrives, not when the WQE is
 *     posted (rxe reports it as IBV_WC_LOC_QP_OP_ERR and moves the QP to
 *     the error state: umcast reports IBV_WC_LOC_PROT_ERR, as hardware
 *     does, and also moves the QP to the error state).
 */
#include <pthread.h>
#include <sys/mman.h>

#include "verbs_util.h"

static long pgsz(void)
{
	return sysconf(_SC_PAGESIZE);
}

static void expect_reg_fails(struct ibv_pd *pd, void *addr, size_t len, int access, int err)
{
	errno = 0;
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (mr) {
		ibv_dereg_mr(mr);
		fail_msg("ibv_reg_mr(%p, %zu, 0x%x) succeeded, expected errno %d", addr, len,
			 access, err);
	}
	assert_int_equal(errno, err);
}

static void expect_reg_ok(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		fail_msg("ibv_reg_mr(%p, %zu, 0x%x): errno %d", addr, len, access, errno);
	assert_ptr_equal(mr->addr, addr);
	assert_int_equal(mr->length, len);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* Memory that is not mapped: EFAULT whatever the access, as pinning fails. */
static void test_reg_unmapped(void **state)
{
	struct t_env e;
	long pg = pgsz();
	uint8_t *p = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	t_env_open(&e, 0, false);
	expect_reg_ok(e.pd, p, 3 * pg, IBV_ACCESS_LOCAL_WRITE);
	/* A hole in the middle. */
	assert_int_equal(munmap(p + pg, pg), 0);
	expect_reg_fails(e.pd, p, 3 * pg, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	expect_reg_fails(e.pd, p, 3 * pg, 0, EFAULT);
	expect_reg_fails(e.pd, p + pg - 1, 2, 0, EFAULT); /* one byte in the hole */
	expect_reg_ok(e.pd, p, pg, IBV_ACCESS_LOCAL_WRITE);
	expect_reg_ok(e.pd, p + 2 * pg, pg, IBV_ACCESS_LOCAL_WRITE);
	/* Nothing left at all. */
	assert_int_equal(munmap(p, 3 * pg), 0);
	expect_reg_fails(e.pd, p, 3 * pg, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	expect_reg_fails(e.pd, p + 10, 100, 0, EFAULT);
	t_env_close(&e);
}

/* Read-only memory: fine for sends (access 0), EFAULT with a write access. */
static void test_reg_readonly(void **state)
{
	struct t_env e;
	long pg = pgsz();
	uint8_t *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	t_env_open(&e, 0, false);
	assert_int_equal(mprotect(p, 2 * pg, PROT_READ), 0);
	expect_reg_ok(e.pd, p, 2 * pg, 0);
	expect_reg_ok(e.pd, p + 5, 100, IBV_ACCESS_REMOTE_READ);
	expect_reg_fails(e.pd, p, 2 * pg, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	expect_reg_fails(e.pd, p + 5, 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, EFAULT);
	expect_reg_fails(e.pd, p, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, EFAULT);
	/* Writable first page only: a range that reaches the second is refused. */
	assert_int_equal(mprotect(p, pg, PROT_READ | PROT_WRITE), 0);
	expect_reg_ok(e.pd, p, pg, IBV_ACCESS_LOCAL_WRITE);
	expect_reg_fails(e.pd, p + pg - 4, 8, IBV_ACCESS_LOCAL_WRITE, EFAULT);
	/* Not even readable: EFAULT for any access. */
	assert_int_equal(mprotect(p + pg, pg, PROT_NONE), 0);
	expect_reg_fails(e.pd, p + pg, pg, 0, EFAULT);
	/* The access check still comes first (remote write without local write). */
	expect_reg_fails(e.pd, p, pg, IBV_ACCESS_REMOTE_WRITE, EINVAL);
	assert_int_equal(munmap(p, 2 * pg), 0);
	t_env_close(&e);
}

/* Length 0 and wrapping ranges, as ib_umem_get. */
static void test_reg_length_and_wrap(void **state)
{
	struct t_env e;
	long pg = pgsz();
	uint8_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	t_env_open(&e, 0, false);
	/* No page at all: EINVAL (NULL included). */
	expect_reg_fails(e.pd, p, 0, IBV_ACCESS_LOCAL_WRITE, EINVAL);
	expect_reg_fails(e.pd, NULL, 0, 0, EINVAL);
	/* Inside a page, length 0 still names that page: it must be mapped. */
	expect_reg_ok(e.pd, p + 8, 0, IBV_ACCESS_LOCAL_WRITE);
	/* The end wraps, or rounding it up to a page wraps. */
	expect_reg_fails(e.pd, (void *)(UINTPTR_MAX - 15), 32, 0, EINVAL);
	expect_reg_fails(e.pd, (void *)(UINTPTR_MAX - 15), 8, 0, EINVAL);
	/* The NULL page is never mapped. */
	expect_reg_fails(e.pd, (void *)(uintptr_t)16, 16, 0, EFAULT);
	assert_int_equal(munmap(p, pg), 0);
	expect_reg_fails(e.pd, p + 8, 0, 0, EFAULT);
	t_env_close(&e);
}

/* ------------------------------------------------------------------------- */
/* Delivery into a WQE whose MR went away after the receive was posted.      */

struct fx {
	struct t_env e;
	struct t_qp s; /* sender */
	struct t_qp r; /* receiver: its own CQ and QP; buffers per test */
	unsigned long prot0;
};

static unsigned group_seq;

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	t_env_open(&f->e, t_group_ip(++group_seq), true);
	if (!f->e.pd || !f->e.ah)
		return -1;
	t_qp_make(&f->s, f->e.pd, 0, T_QKEY);
	t_qp_make(&f->r, f->e.pd, 0, T_QKEY);
	assert_int_equal(ibv_attach_mcast(f->r.qp, &f->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(f->e.dev, &f->e.mgid, +1), 0);
	f->prot0 = T_CNT(f->e.dev, rx_prot_err);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	assert_int_equal(ibv_detach_mcast(f->r.qp, &f->e.mgid, 0), 0);
	umc_dev_member(f->e.dev, &f->e.mgid, -1);
	t_qp_free(&f->s);
	t_qp_free(&f->r);
	t_env_close(&f->e);
	free(f);
	return 0;
}

/* Post one receive of @len bytes at @p, in MR @mr, on the receiver. */
static void post_at(struct fx *f, void *p, uint32_t len, struct ibv_mr *mr, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)p, .length = len, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	assert_int_equal(ibv_post_recv(f->r.qp, &wr, &bad), 0);
}

static void send_one(struct fx *f, uint32_t len, uint64_t wr_id)
{
	uint8_t data[256];

	t_fill(data, len, (unsigned)wr_id);
	assert_int_equal(t_send(&f->s, f->e.ah, data, len, T_QKEY, false, 0, 0, wr_id), 0);
	t_wait_send(f->s.cq, wr_id);
}

/*
 * The first receive (wr_id 1) completes with LOC_PROT_ERR, the QP goes to
 * the error state, and the second receive (wr_id 2, in the fixture's live
 * MR) is flushed: the QP's completions are exactly these two.
 */
static void expect_prot_err(struct fx *f)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(wc.qp_num, f->r.qp->qp_num);
	assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	t_assert_cq_empty(f->r.cq);
	assert_int_equal(ibv_query_qp(f->r.qp, &qa, IBV_QP_STATE, &qia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_ERR);
	assert_int_equal(T_CNT(f->e.dev, rx_prot_err), f->prot0 + 1);
	/* Nothing was written into the live buffer of the flushed WQE either. */
	for (int i = 0; i < 2048; i++)
		assert_int_equal(f->r.buf[i], 0xc3);
}

/*
 * Receive 1 posted at @buf (@len bytes, an MR of its own), receive 2 in the
 * fixture's live buffer (filled with 0xc3), then receive 1's MR
 * deregistered.
 */
static void post_then_dereg(struct fx *f, void *buf, uint32_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(f->e.pd, buf, len, IBV_ACCESS_LOCAL_WRITE);

	assert_non_null(mr);
	memset(f->r.buf, 0xc3, 2048);
	post_at(f, buf, len, mr, 1);
	post_at(f, f->r.buf, 2048, f->r.mr, 2);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* Deregistered, buffer kept: not one byte is written into it. */
static void test_dereg_kept_buffer(void **state)
{
	struct fx *f = *state;
	uint8_t *buf = malloc(4096);

	assert_non_null(buf);
	memset(buf, 0x5a, 4096);
	post_then_dereg(f, buf, 4096);
	send_one(f, 100, 7);
	expect_prot_err(f);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0x5a);
	free(buf);
}

/* Deregistered and freed: no write into freed memory (AddressSanitizer watches). */
static void test_dereg_freed_buffer(void **state)
{
	struct fx *f = *state;
	uint8_t *buf = malloc(4096);

	assert_non_null(buf);
	post_then_dereg(f, buf, 4096);
	free(buf);
	send_one(f, 100, 8);
	expect_prot_err(f);
}

/* Deregistered and unmapped: no SIGSEGV. */
static void test_dereg_unmapped_buffer(void **state)
{
	struct fx *f = *state;
	long pg = pgsz();
	uint8_t *buf = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(buf != MAP_FAILED);
	post_then_dereg(f, buf, (uint32_t)pg);
	assert_int_equal(munmap(buf, pg), 0);
	send_one(f, 100, 9);
	expect_prot_err(f);
}

/*
 * One SGE of three gone: the whole WQE is refused before anything is
 * written, even into the SGEs whose MRs are live.
 */
static void test_dereg_one_sge_of_three(void **state)
{
	struct fx *f = *state;
	uint8_t *buf = malloc(256);
	struct ibv_mr *mr;

	assert_non_null(buf);
	memset(buf, 0x5a, 256);
	memset(f->r.buf, 0xc3, 2048);
	mr = ibv_reg_mr(f->e.pd, buf, 256, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	struct ibv_sge sge[3] = {
		{(uintptr_t)f->r.buf + 2048, 40, f->r.mr->lkey},
		{(uintptr_t)buf, 256, mr->lkey},
		{(uintptr_t)f->r.buf + 4096, 1024, f->r.mr->lkey},
	};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = sge, .num_sge = 3}, *bad;

	memset(f->r.buf + 2048, 0xc3, 4096);
	assert_int_equal(ibv_post_recv(f->r.qp, &wr, &bad), 0);
	post_at(f, f->r.buf, 2048, f->r.mr, 2);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	send_one(f, 200, 10);
	expect_prot_err(f);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(f->r.buf[2048 + i], 0xc3);
	for (int i = 0; i < 256; i++)
		assert_int_equal(buf[i], 0x5a);
	free(buf);
}

/* A new MR in the same memory does not revive the old WQE's L_Key. */
static void test_reregistered_memory(void **state)
{
	struct fx *f = *state;
	uint8_t *buf = malloc(4096);
	struct ibv_mr *mr2;

	assert_non_null(buf);
	memset(buf, 0x5a, 4096);
	post_then_dereg(f, buf, 4096);
	mr2 = ibv_reg_mr(f->e.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr2);
	send_one(f, 100, 11);
	expect_prot_err(f);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0x5a);
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	free(buf);
}

/*
 * ibv_dereg_mr while other threads deliver datagrams into the MR: the
 * sender thread's ibv_poll_cq and the library's background thread run the
 * receive engine while this thread deregisters.  Once ibv_dereg_mr
 * returns nothing writes there any more: the buffer is unmapped at once,
 * so a late write would be a SIGSEGV.  Every receive completes exactly
 * once: successfully (before the deregistration), with LOC_PROT_ERR (the
 * first one after it) or flushed.
 */
enum { RACE_N = 64, RACE_SLOT = 512 };

struct race {
	struct fx *f;
	int go[2];
	atomic_int sent;
};

static void *race_sender(void *arg)
{
	struct race *r = arg;
	char c;

	if (read(r->go[0], &c, 1) != 1)
		return NULL;
	for (int i = 0; i < 4 * RACE_N; i++) {
		uint8_t data[64];
		struct ibv_wc wc;

		t_fill(data, sizeof(data), (unsigned)i);
		if (t_send(&r->f->s, r->f->e.ah, data, sizeof(data), T_QKEY, false, 0, 0,
			   (uint64_t)i))
			break;
		while (ibv_poll_cq(r->f->s.cq, 1, &wc) == 0)
			;
		atomic_fetch_add(&r->sent, 1);
	}
	return NULL;
}

static void test_dereg_races_delivery(void **state)
{
	struct fx *f = *state;
	size_t len = (size_t)RACE_N * RACE_SLOT;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct race r = {.f = f};
	struct ibv_mr *mr;
	pthread_t th;
	int ok = 0, prot = 0, flushed = 0;
	uint64_t deadline;

	assert_true(buf != MAP_FAILED);
	mr = ibv_reg_mr(f->e.pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (int i = 0; i < RACE_N; i++)
		post_at(f, buf + (size_t)i * RACE_SLOT, RACE_SLOT, mr, (uint64_t)i);
	assert_int_equal(pipe(r.go), 0);
	assert_int_equal(pthread_create(&th, NULL, race_sender, &r), 0);
	assert_int_equal(write(r.go[1], "g", 1), 1);
	/* Let some datagrams land, then pull the MR while more arrive. */
	deadline = t_now_ms() + T_WAIT_MS;
	while (ok < RACE_N / 4 && t_now_ms() < deadline) {
		struct ibv_wc wc;

		if (t_wait_wc(f->r.cq, &wc, T_WAIT_MS) != 1)
			break;
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 40 + 64);
		ok++;
	}
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(munmap(buf, len), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(r.go[0]);
	close(r.go[1]);

	while (ok + prot + flushed < RACE_N) {
		struct ibv_wc wc;

		assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (wc.status == IBV_WC_LOC_PROT_ERR)
			prot++;
		else if (wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else
			fail_msg("status %d", wc.status);
		assert_int_equal(flushed && !prot, 0);
	}
	print_message("before deregistration %d, protection error %d, flushed %d\n", ok, prot,
		      flushed);
	assert_true(prot <= 1);
	t_assert_cq_empty(f->r.cq);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reg_unmapped),
		cmocka_unit_test(test_reg_readonly),
		cmocka_unit_test(test_reg_length_and_wrap),
		cmocka_unit_test_setup_teardown(test_dereg_kept_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_freed_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_unmapped_buffer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_one_sge_of_three, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reregistered_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dereg_races_delivery, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
