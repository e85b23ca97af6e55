// SPDX-License-Identifier: MIT
/*
 * test_verbs_landing.c - a payload is copied at most once: the kernel
 * writes a datagram straight into the posted receive of the group's first
 * QP (rx_lend.c), and everything a receive completion promises
 * still holds, on every link that lands datagrams.
 *
 *   - one QP: every datagram completes in place (rx_in_place), with its
 *     payload, GRH area and byte_len, also with ImmDt and with the GRH
 *     area and the payload spread over several SGEs;
 *   - two QPs of one process: both get every datagram, the second a copy
 *     of the first's;
 *   - a datagram the first QP refuses (Q_Key) still reaches the second,
 *     and the first QP's receive it landed in stays posted for the next;
 *   - a corrupt datagram (bad ICRC or VCRC) lands, is dropped and counted,
 *     and its receive stays posted for the next good one;
 *   - receives that all share one buffer take a burst whole: a datagram
 *     is never written over one not yet checked;
 *   - a datagram longer than a receive slot is dropped even where the
 *     posted receive would hold it;
 *   - a receive whose MR was deregistered after the post (its buffer
 *     kept, or registered again under a new lkey) is never lent: it
 *     completes LOC_PROT_ERR without a byte written there, while the
 *     receive before it still completes in place;
 *   - a burst in which the first QP's receive is too small: that QP
 *     completes LOC_LEN_ERR and is flushed, in queue order, only after
 *     the second QP got the burst's later datagrams copied from the first
 *     QP's buffers.
 *
 * Each test runs on every link that lands datagrams: RoCEv2 on the
 * loopback device, and the simulated InfiniBand link, against a umc-sm
 * this program starts ($UMC_BIN).  The
 * background receive thread is off (UMC_RX_THREAD=0), so that only the
 * test's own polls receive and a burst is what the test sent.
 */
#include <sys/wait.h>

#include "verbs_util.h"

#include "link/ib/ib.h"

enum { SLOT = 2048 };

struct link_env {
	const char *name; /* the device */
	struct ibv_context *ctx;
	struct umc_device *dev;
	struct ibv_pd *pd;
	union ibv_gid mgid;
	uint16_t mlid;
	uint32_t gip; /* RoCE: the group's IPv4 address */
	bool ib;
	struct ibv_ah *ah;
	struct t_qp s, a, b;
};

static struct link_env ib_env = {.name = "umc_ib0", .ib = true};
static struct link_env roce_env = {.name = "umc_lo"};
static unsigned group_seq;

static int setup(void **state)
{
	struct link_env *e = *state;
	unsigned n = ++group_seq;

	e->ctx = t_open_dev(e->name);
	if (!e->ctx)
		return -1;
	e->dev = ctx_dev(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	if (e->ib) {
		if (!t_ib_port_active(e->ctx))
			return -1;
		/* A group of its own per test: ff12:401b::1:n on MLID 0xC100 + n. */
		e->mgid = t_ib_mgid(1, (uint8_t)n);
		e->mlid = (uint16_t)(0xC100 + n);
		struct ibv_ah_attr aa = {
			.is_global = 1, .dlid = e->mlid, .port_num = 1,
			.grh = {.dgid = e->mgid, .sgid_index = 0, .hop_limit = 1},
		};

		e->ah = ibv_create_ah(e->pd, &aa);
	} else {
		e->gip = t_group_ip(180 + n);
		e->mgid = t_gid_v4(e->gip);
		e->ah = t_ipv4_ah(e->pd, e->gip);
		if (umc_dev_member(e->dev, &e->mgid, +1))
			return -1;
	}
	if (!e->pd || !e->ah)
		return -1;
	t_qp_make(&e->s, e->pd, 0, T_QKEY);
	t_qp_make(&e->a, e->pd, 0, T_QKEY);
	t_qp_make(&e->b, e->pd, 0, T_QKEY);
	return 0;
}

static void detach(struct link_env *e, struct t_qp *t)
{
	while (to_uqp(t->qp)->attached)
		assert_int_equal(ibv_detach_mcast(t->qp, &e->mgid, e->mlid), 0);
}

static int teardown(void **state)
{
	struct link_env *e = *state;

	detach(e, &e->a);
	detach(e, &e->b);
	if (!e->ib)
		umc_dev_member(e->dev, &e->mgid, -1);
	t_qp_free(&e->s);
	t_qp_free(&e->a);
	t_qp_free(&e->b);
	ibv_destroy_ah(e->ah);
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);
	return 0;
}

static void attach(struct link_env *e, struct t_qp *t)
{
	assert_int_equal(ibv_attach_mcast(t->qp, &e->mgid, e->mlid), 0);
}

/* Send @len bytes of pattern @seed (with ImmDt @imm when not 0); the send completes. */
static void send_one(struct link_env *e, uint32_t len, unsigned seed, uint32_t qkey, uint32_t imm)
{
	uint8_t data[SLOT];

	t_fill(data, len, seed);
	assert_int_equal(t_send(&e->s, e->ah, data, len, qkey, imm != 0, htonl(imm), 0, seed), 0);
	t_wait_send(e->s.cq, seed);
}

/* One poll of @t's CQ (the engine runs once when it is empty): the completions it gives. */
static int poll_once(struct t_qp *t, struct ibv_wc *wc, int n)
{
	int got = ibv_poll_cq(t->cq, n, wc);

	assert_true(got >= 0);
	return got;
}

/*
 * The next completion of @t is a success of @len bytes, pattern @seed, in
 * buffer @off, to group @mgid.
 */
static void expect_recv_to(struct link_env *e, struct t_qp *t, const union ibv_gid *mgid,
			   uint64_t wr_id, size_t off, uint32_t len, unsigned seed)
{
	uint8_t want[SLOT];
	struct ibv_wc wc;

	assert_int_equal(t_wait_wc(t->cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.byte_len, 40 + len);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	t_fill(want, len, seed);
	assert_memory_equal(t->buf + off + 40, want, len);
	/* The GRH area: the group is its destination (IB: the DGID; RoCE: the IPv4 header's). */
	if (e->ib)
		assert_memory_equal(t->buf + off + 24, mgid->raw, 16);
	else
		assert_memory_equal(t->buf + off + 36, mgid->raw + 12, 4);
}

/* The same, to the test's group. */
static void expect_recv(struct link_env *e, struct t_qp *t, uint64_t wr_id, size_t off,
			uint32_t len, unsigned seed)
{
	expect_recv_to(e, t, &e->mgid, wr_id, off, len, seed);
}

#define IN_PLACE(e) T_CNT((e)->dev, rx_in_place)

static void test_in_place(void **state)
{
	struct link_env *e = *state;
	unsigned long base;

	attach(e, &e->a);
	base = IN_PLACE(e);
	for (unsigned i = 0; i < 8; i++) {
		uint32_t len = 1 + i * 211;

		assert_int_equal(t_post_recv(&e->a, 0, SLOT, i), 0);
		memset(e->a.buf, 0xee, SLOT);
		send_one(e, len, 10 + i, T_QKEY, 0);
		expect_recv(e, &e->a, i, 0, len, 10 + i);
	}
	assert_int_equal(IN_PLACE(e) - base, 8);
}

/* GRH area in an SGE of its own, the payload over two more; with and without ImmDt. */
static void test_in_place_imm_sges(void **state)
{
	struct link_env *e = *state;
	unsigned long base;

	attach(e, &e->a);
	base = IN_PLACE(e);
	for (unsigned i = 0; i < 4; i++) {
		uint8_t *p = e->a.buf;
		struct ibv_sge sge[3] = {
			{(uintptr_t)(p + 100), 40, e->a.mr->lkey},
			{(uintptr_t)(p + 3000), 7, e->a.mr->lkey},
			{(uintptr_t)(p + 200), 1000, e->a.mr->lkey},
		};
		struct ibv_recv_wr wr = {.wr_id = i, .sg_list = sge, .num_sge = 3}, *bad;
		uint32_t len = i < 2 ? 5 : 600, imm = i & 1 ? 0xfeed0000 + i : 0;
		uint8_t want[600], got[600];
		struct ibv_wc wc;

		memset(p, 0xee, 4096);
		assert_int_equal(ibv_post_recv(e->a.qp, &wr, &bad), 0);
		send_one(e, len, 20 + i, T_QKEY, imm);
		assert_int_equal(t_wait_wc(e->a.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 40 + len);
		assert_int_equal(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm != 0);
		if (imm)
			assert_int_equal(ntohl(wc.imm_data), imm);
		t_fill(want, len, 20 + i);
		memcpy(got, p + 3000, len < 7 ? len : 7);
		if (len > 7)
			memcpy(got + 7, p + 200, len - 7);
		assert_memory_equal(got, want, len);
		/*
		 * Past the payload's end the receive holds at most the datagram's
		 * tail: ImmDt's place, pad, ICRC, VCRC (umcast(7)).
		 */
		if (len > 7)
			for (size_t k = UMC_RX_TAIL_MAX; 200 + (len - 7) + k < 1200; k++)
				assert_int_equal(p[200 + (len - 7) + k], 0xee);
	}
	assert_int_equal(IN_PLACE(e) - base, 4);
}

static void test_fan_out_copies_from_first(void **state)
{
	struct link_env *e = *state;
	unsigned long base, delivered;

	attach(e, &e->a);
	attach(e, &e->b);
	base = IN_PLACE(e);
	delivered = T_CNT(e->dev, rx_delivered);
	for (unsigned i = 0; i < 6; i++) {
		uint32_t len = 64 + i * 300;

		assert_int_equal(t_post_recv(&e->a, 0, SLOT, 100 + i), 0);
		assert_int_equal(t_post_recv(&e->b, 0, SLOT, 200 + i), 0);
		send_one(e, len, 30 + i, T_QKEY, i & 1 ? 7 : 0);
		expect_recv(e, &e->a, 100 + i, 0, len, 30 + i);
		expect_recv(e, &e->b, 200 + i, 0, len, 30 + i);
	}
	assert_int_equal(T_CNT(e->dev, rx_delivered) - delivered, 12);
	assert_int_equal(IN_PLACE(e) - base, 6); /* one per datagram: the first QP's */
}

static void test_refused_receive_stays_posted(void **state)
{
	struct link_env *e = *state;
	struct ibv_qp_attr qa = {.qkey = 0x22222222};
	unsigned long viol = T_CNT(e->dev, rx_qkey_viol);

	attach(e, &e->a); /* the first QP: its receives are lent */
	attach(e, &e->b);
	assert_int_equal(ibv_modify_qp(e->b.qp, &qa, IBV_QP_QKEY), 0);
	assert_int_equal(t_post_recv(&e->a, 0, SLOT, 1), 0);
	assert_int_equal(t_post_recv(&e->a, SLOT, SLOT, 2), 0);
	assert_int_equal(t_post_recv(&e->b, 0, SLOT, 3), 0);
	/* For B only: it lands in A's first receive, which A does not take. */
	send_one(e, 300, 41, 0x22222222, 0);
	expect_recv(e, &e->b, 3, 0, 300, 41);
	assert_int_equal(T_CNT(e->dev, rx_qkey_viol) - viol, 1);
	t_assert_cq_empty(e->a.cq);
	/* For A only: its first receive takes it, in order, whole. */
	send_one(e, 200, 42, T_QKEY, 0);
	expect_recv(e, &e->a, 1, 0, 200, 42);
	assert_int_equal(T_CNT(e->dev, rx_qkey_viol) - viol, 2);
	t_assert_cq_empty(e->b.cq);
}

/*
 * A datagram to the group sent from a plain socket, so that no progress of
 * this process runs before the test polls, for DestQP @dqpn (on IB with
 * DGID @dgid, NULL: the group's, on the group's MLID): @len bytes of
 * pattern @seed, with its CRCs right when @good, left zero (wrong)
 * otherwise; with ImmDt @imm when not 0.
 */
static void send_raw_to(struct link_env *e, uint32_t dqpn, const union ibv_gid *dgid, uint32_t len,
			unsigned seed, bool good, uint32_t imm)
{
	struct umc_ud_hdr h = {
		.bth = {.opcode = imm ? UMC_OP_UD_SEND_ONLY_IMM : UMC_OP_UD_SEND_ONLY,
			.pkey = 0xffff, .dest_qpn = dqpn},
		.deth = {.qkey = T_QKEY, .src_qpn = 0x77},
		.imm_be = htonl(imm),
	};
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint8_t pkt[UMC_RX_SLOT + 2 * SLOT] = {0};
	size_t n;
	int fd = socket(AF_INET, SOCK_DGRAM, 0), ttl = 1;
	struct in_addr lo = {htonl(INADDR_LOOPBACK)};

	assert_true(len + 128 <= sizeof(pkt));
	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &lo, sizeof(lo)), 0);
	assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)), 0);
	if (e->ib) {
		const struct umc_sm_port_info *pi = &to_ib_port(e->dev)->pi;
		struct umc_ib_hdr ib = {
			.lrh = {.lnh = UMC_LNH_IBA_GLOBAL, .dlid = e->mlid, .slid = 0x99},
			.grh = {.ipver = UMC_GRH_IPVER, .next_hdr = UMC_GRH_NXTHDR_IBA,
				.hop_limit = 1},
		};
		memcpy(ib.grh.dgid, (dgid ? dgid : &e->mgid)->raw, 16);
		size_t hl = umc_ib_hdr_encode(pkt, &ib, &h, len);

		t_fill(pkt + hl, len, seed);
		n = hl + len + h.bth.pad_cnt; /* the pad: zeros */
		if (good) {
			uint32_t icrc = umc_ib_icrc_start(pkt, hl);

			icrc = umc_icrc_update(icrc, pkt + hl, n - hl);
			umc_icrc_put(pkt + n, umc_icrc_final(icrc));
			umc_vcrc_put(pkt + n + UMC_ICRC_LEN,
				     umc_vcrc_final(umc_vcrc_update(0xffff, pkt, n + UMC_ICRC_LEN)));
		}
		n += UMC_ICRC_LEN + UMC_VCRC_LEN;
		to.sin_addr.s_addr = htonl(umc_sm_mlid_to_ip(pi, e->mlid));
		to.sin_port = htons(pi->data_port);
	} else {
		struct sockaddr_in me = {.sin_family = AF_INET, .sin_addr = lo};
		socklen_t ml = sizeof(me);

		h.bth.pad_cnt = (uint8_t)(-len & 3);
		n = umc_ud_hdr_encode(pkt, &h);
		t_fill(pkt + n, len, seed);
		n += len + h.bth.pad_cnt + UMC_ICRC_LEN;
		to.sin_addr.s_addr = htonl(e->gip);
		to.sin_port = htons(T_PORT);
		/* The ICRC under the IP/UDP context the receiver sees (its ID: solved if not 0). */
		assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
		assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &ml), 0);
		struct umc_ip_ctx c = {.family = 4, .sport = ntohs(me.sin_port),
				       .dport = T_PORT, .df = true, .hop_limit = 1};

		memcpy(c.src, &lo, 4);
		memcpy(c.dst, &to.sin_addr, 4);
		if (good)
			umc_icrc_put(pkt + n - UMC_ICRC_LEN, umc_icrc_compute(&c, pkt, n));
	}
	assert_int_equal(sendto(fd, pkt, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
	close(fd);
}

static void send_raw(struct link_env *e, uint32_t len, unsigned seed, bool good, uint32_t imm)
{
	send_raw_to(e, 0xffffff, NULL, len, seed, good, imm);
}

static void send_corrupt(struct link_env *e)
{
	send_raw(e, 100, 0, false, 0);
}

static void test_corrupt_receive_stays_posted(void **state)
{
	struct link_env *e = *state;
	unsigned long bad = T_CNT(e->dev, rx_bad_icrc) + T_CNT(e->dev, rx_bad_vcrc);
	struct ibv_wc wc;

	attach(e, &e->a);
	assert_int_equal(t_post_recv(&e->a, 0, SLOT, 1), 0);
	send_corrupt(e);
	/* Received (one poll runs the engine), dropped, counted: no completion. */
	for (uint64_t end = t_now_ms() + T_WAIT_MS;
	     T_CNT(e->dev, rx_bad_icrc) + T_CNT(e->dev, rx_bad_vcrc) == bad && t_now_ms() < end;)
		t_poll_rx(e->dev, 10);
	assert_int_equal(T_CNT(e->dev, rx_bad_icrc) + T_CNT(e->dev, rx_bad_vcrc) - bad, 1);
	assert_int_equal(poll_once(&e->a, &wc, 1), 0);
	/* The receive it landed in takes the next good datagram. */
	send_one(e, 333, 51, T_QKEY, 0);
	expect_recv(e, &e->a, 1, 0, 333, 51);
}

/* Make the next burst of each endpoint lend all it may, as after a full burst. */
static void lend_fully(struct link_env *e)
{
	pthread_mutex_lock(&e->dev->rx_lock);
	for (int i = 0; i < e->dev->rx_nep; i++)
		e->dev->rx_eps[i]->lend_hint = UMC_RX_BATCH;
	pthread_mutex_unlock(&e->dev->rx_lock);
}

/*
 * Every receive posted with one buffer (as rdma-core's mckey does), and a
 * burst of datagrams for them: each is checked before the next one is
 * written there, so all complete, in order, and the buffer holds the last.
 */
static void test_one_buffer_for_every_receive(void **state)
{
	struct link_env *e = *state;
	unsigned long bad = T_CNT(e->dev, rx_bad_icrc) + T_CNT(e->dev, rx_bad_vcrc);
	unsigned long del = T_CNT(e->dev, rx_delivered);

	attach(e, &e->a);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(t_post_recv(&e->a, 0, SLOT, 60 + i), 0);
	for (unsigned i = 0; i < 4; i++)
		send_raw(e, 700 + i, 90 + i, true, 0);
	lend_fully(e);
	for (unsigned i = 0; i < 3; i++) {
		struct ibv_wc wc;

		assert_int_equal(t_wait_wc(e->a.cq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 60 + i);
		assert_int_equal(wc.byte_len, 40 + 700 + i);
	}
	expect_recv(e, &e->a, 63, 0, 703, 93);
	assert_int_equal(T_CNT(e->dev, rx_delivered) - del, 4);
	assert_int_equal(T_CNT(e->dev, rx_bad_icrc) + T_CNT(e->dev, rx_bad_vcrc), bad);
}

/*
 * A RoCE datagram longer than a receive slot (UMC_RX_SLOT), for a receive
 * big enough to hold it: dropped as too long (rx_too_long), as when it is
 * read into a slot, and the receive takes the next one.  (An IB packet
 * cannot be that long: its LRH length field ends at 8188 bytes.)
 */
static void test_longer_than_slot_not_landed(void **state)
{
	struct link_env *e = *state;
	unsigned long lng = T_CNT(e->dev, rx_too_long);
	uint32_t big = UMC_RX_SLOT + 256;

	if (e->ib)
		skip();
	assert_true(40 + big <= T_BUF);
	attach(e, &e->a);
	assert_int_equal(t_post_recv(&e->a, 0, T_BUF, 1), 0);
	send_raw(e, big, 70, true, 0);
	lend_fully(e);
	for (uint64_t end = t_now_ms() + T_WAIT_MS;
	     T_CNT(e->dev, rx_too_long) == lng && t_now_ms() < end;)
		t_poll_rx(e->dev, 10);
	assert_int_equal(T_CNT(e->dev, rx_too_long) - lng, 1);
	t_assert_cq_empty(e->a.cq);
	send_raw(e, 500, 71, true, 0);
	expect_recv(e, &e->a, 1, 0, 500, 71);
}

/*
 * Two QPs whose receives share one buffer (B posts A's, under A's MR, for
 * the same datagram and, offset by one, for the next): a burst with and
 * without ImmDt, and each completion finds its datagram whole, as a NIC
 * that fills one receive after the other leaves it.
 */
static void test_two_qps_one_buffer(void **state)
{
	struct link_env *e = *state;

	attach(e, &e->a);
	attach(e, &e->b);
	for (int shift = 0; shift < 2; shift++) {
		for (unsigned i = 0; i < 4; i++) {
			struct ibv_sge sge = {(uintptr_t)(e->a.buf + (i + shift) * SLOT), SLOT,
					      e->a.mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = 20 + i, .sg_list = &sge, .num_sge = 1}, *bad;

			assert_int_equal(t_post_recv(&e->a, i * SLOT, SLOT, 10 + i), 0);
			assert_int_equal(ibv_post_recv(e->b.qp, &wr, &bad), 0);
		}
		for (unsigned i = 0; i < 4; i++)
			send_raw(e, 600 + 4 * i, 60 + i, true, i & 1 ? 0x1234 : 0);
		lend_fully(e);
		/* B's receive i is A's receive i + shift: check each before the next lands. */
		for (unsigned i = 0; i < 4; i++) {
			struct ibv_wc wc;

			assert_int_equal(t_wait_wc(e->a.cq, &wc, T_WAIT_MS), 1);
			assert_int_equal(wc.wr_id, 10 + i);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.byte_len, 40 + 600 + 4 * i);
			assert_int_equal(t_wait_wc(e->b.cq, &wc, T_WAIT_MS), 1);
			assert_int_equal(wc.wr_id, 20 + i);
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
		}
		/* What each buffer holds last: the datagram of its last receive. */
		for (unsigned i = shift; i < 4; i++) {
			uint8_t want[SLOT];

			t_fill(want, 600 + 4 * i, 60 + i);
			assert_memory_equal(e->a.buf + i * SLOT + 40, want, 600 + 4 * i);
		}
	}
}

/*
 * Receives 1, 2 (4 KiB at @spill, in an MR of its own that is deregistered
 * once it is posted, and registered anew when @rereg: a fresh lkey that
 * must not revive the old one) and 3, then two datagrams: 1 completes in
 * place, 2 completes LOC_PROT_ERR and 3 is flushed, and neither @spill nor
 * receive 3's buffer got a byte.
 */
static void expect_unlent(struct link_env *e, bool rereg)
{
	uint8_t *spill = malloc(4096);
	struct ibv_mr *mr, *mr2 = NULL;
	unsigned long prot = T_CNT(e->dev, rx_prot_err), base;
	struct ibv_wc wc;

	assert_non_null(spill);
	memset(spill, 0xc3, 4096);
	mr = ibv_reg_mr(e->pd, spill, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	struct ibv_sge sge = {(uintptr_t)spill, 4096, mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1}, *bw;

	attach(e, &e->a);
	memset(e->a.buf, 0xc3, 2 * SLOT);
	assert_int_equal(t_post_recv(&e->a, 0, SLOT, 1), 0);
	assert_int_equal(ibv_post_recv(e->a.qp, &wr, &bw), 0);
	assert_int_equal(t_post_recv(&e->a, SLOT, SLOT, 3), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	if (rereg) {
		mr2 = ibv_reg_mr(e->pd, spill, 4096, IBV_ACCESS_LOCAL_WRITE);
		assert_non_null(mr2);
	}
	/*
	 * Both datagrams wait in the socket for one burst that lends all it
	 * may (its hint says a full burst came last): the lend must stop at
	 * receive 2, whose MR is gone.
	 */
	base = IN_PLACE(e);
	send_raw(e, 1500, 81, true, 0);
	send_raw(e, 1500, 82, true, 0);
	lend_fully(e);
	expect_recv(e, &e->a, 1, 0, 1500, 81);
	assert_int_equal(t_wait_wc(e->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(t_wait_wc(e->a.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	t_assert_cq_empty(e->a.cq);
	assert_int_equal(IN_PLACE(e) - base, 1);
	assert_int_equal(T_CNT(e->dev, rx_prot_err) - prot, 1);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(spill[i], 0xc3);
	for (int i = SLOT; i < 2 * SLOT; i++)
		assert_int_equal(e->a.buf[i], 0xc3);
	if (mr2)
		assert_int_equal(ibv_dereg_mr(mr2), 0);
	free(spill);
}

static void test_deregistered_mr_not_lent(void **state)
{
	expect_unlent(*state, false);
}

static void test_reregistered_buffer_not_lent(void **state)
{
	expect_unlent(*state, true);
}

/*
 * One burst of four datagrams, all four of A's receives lent, the second
 * too small: A completes #0, LOC_LEN_ERR for #1, and its #2 and #3 are
 * flushed; B, attached second, gets all four, #2 and #3 copied from A's
 * receives before they were flushed.
 */
static void test_len_err_flush_waits_for_burst(void **state)
{
	struct link_env *e = *state;
	struct ibv_wc wc[8];
	int got = 0;

	attach(e, &e->a);
	attach(e, &e->b);
	/* A warm-up burst of four, so that the engine lends four. */
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(t_post_recv(&e->a, i * SLOT, SLOT, i), 0);
		assert_int_equal(t_post_recv(&e->b, i * SLOT, SLOT, 10 + i), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		send_one(e, 100, 60 + i, T_QKEY, 0);
	while (got < 4)
		got += poll_once(&e->a, wc + got, 8 - got);
	for (unsigned i = 0; i < 4; i++)
		expect_recv(e, &e->b, 10 + i, i * SLOT, 100, 60 + i);

	assert_int_equal(t_post_recv(&e->a, 0, SLOT, 20), 0);
	assert_int_equal(t_post_recv(&e->a, SLOT, 100, 21), 0); /* too small for 500 */
	assert_int_equal(t_post_recv(&e->a, 2 * SLOT, SLOT, 22), 0);
	assert_int_equal(t_post_recv(&e->a, 3 * SLOT, SLOT, 23), 0);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(t_post_recv(&e->b, i * SLOT, SLOT, 30 + i), 0);
	for (unsigned i = 0; i < 4; i++)
		send_one(e, 500, 70 + i, T_QKEY, 0);
	got = 0;
	while (got < 4)
		got += poll_once(&e->a, wc + got, 8 - got);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].wr_id, 20);
	assert_int_equal(wc[1].status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(wc[1].wr_id, 21);
	assert_int_equal(wc[2].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[2].wr_id, 22);
	assert_int_equal(wc[3].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[3].wr_id, 23);
	for (unsigned i = 0; i < 4; i++)
		expect_recv(e, &e->b, 30 + i, i * SLOT, 500, 70 + i);
}

/*
 * IB: the engine reads copies that another socket of the MLID takes, until
 * rx_other_mcg is @n above @base, and @t completes none of them.
 */
static void expect_left_to_others(struct link_env *e, struct t_qp *t, unsigned long base,
				  unsigned long n)
{
	struct ibv_wc wc;

	for (uint64_t end = t_now_ms() + T_WAIT_MS;
	     T_CNT(e->dev, rx_other_mcg) - base < n && t_now_ms() < end;) {
		t_poll_rx(e->dev, 10);
		assert_int_equal(poll_once(t, &wc, 1), 0);
	}
	assert_int_equal(T_CNT(e->dev, rx_other_mcg) - base, n);
}

/*
 * Two groups on one MLID (an MLID may carry several groups, as OpenSM's
 * MLID sharing makes them): each group has a socket on the MLID's IP group,
 * and each socket gets its own copy of every packet.  A packet to A's DGID
 * reaches A's QP once, not once per socket; B's QP gets nothing.
 */
static void test_mlid_shared_by_two_groups(void **state)
{
	struct link_env *e = *state;
	union ibv_gid other = t_ib_mgid(2, (uint8_t)group_seq);
	unsigned long del = T_CNT(e->dev, rx_delivered), nogrp = T_CNT(e->dev, rx_no_group);
	unsigned long dup = T_CNT(e->dev, rx_other_mcg);
	struct ibv_wc wc;

	if (!e->ib)
		skip();
	attach(e, &e->a);
	assert_int_equal(ibv_attach_mcast(e->b.qp, &other, e->mlid), 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(t_post_recv(&e->a, i * SLOT, SLOT, i), 0);
		assert_int_equal(t_post_recv(&e->b, i * SLOT, SLOT, 10 + i), 0);
	}
	send_raw(e, 300, 95, true, 0);
	expect_recv(e, &e->a, 0, 0, 300, 95);
	/* Both sockets read (both copies were waiting), one more datagram after them. */
	send_raw(e, 200, 96, true, 0);
	expect_recv(e, &e->a, 1, SLOT, 200, 96);
	/* B's socket's copies: read, and left to A's socket. */
	expect_left_to_others(e, &e->a, dup, 2);
	assert_int_equal(poll_once(&e->a, &wc, 1), 0);
	assert_int_equal(poll_once(&e->b, &wc, 1), 0);
	assert_int_equal(T_CNT(e->dev, rx_delivered) - del, 2);
	assert_int_equal(T_CNT(e->dev, rx_no_group), nogrp);
	assert_int_equal(ibv_detach_mcast(e->b.qp, &other, e->mlid), 0);
}

/*
 * Three groups: A and B on the MLID, C on another.  A packet to C's DGID
 * on the MLID (a DGID names the group, as an HCA steers by it) reaches
 * both A's and B's sockets; C's QP gets it once, A's QP nothing.  Once
 * A's socket has gone, B's takes such packets.
 */
static void test_dgid_of_a_group_on_another_mlid(void **state)
{
	struct link_env *e = *state;
	union ibv_gid b = t_ib_mgid(2, (uint8_t)group_seq), c = t_ib_mgid(3, (uint8_t)group_seq);
	uint16_t mlid_c = (uint16_t)(e->mlid + 0x100);
	unsigned long del = T_CNT(e->dev, rx_delivered), other = T_CNT(e->dev, rx_other_mcg);
	struct ibv_wc wc;

	if (!e->ib)
		skip();
	attach(e, &e->a);
	assert_int_equal(ibv_attach_mcast(e->b.qp, &b, e->mlid), 0);
	assert_int_equal(ibv_attach_mcast(e->b.qp, &c, mlid_c), 0);
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(t_post_recv(&e->a, i * SLOT, SLOT, i), 0);
		assert_int_equal(t_post_recv(&e->b, i * SLOT, SLOT, 10 + i), 0);
	}
	send_raw_to(e, 0xffffff, &c, 300, 97, true, 0);
	expect_recv_to(e, &e->b, &c, 10, 0, 300, 97);
	/* The other socket's copy: read, and left to the first. */
	expect_left_to_others(e, &e->b, other, 1);
	assert_int_equal(poll_once(&e->b, &wc, 1), 0);
	assert_int_equal(poll_once(&e->a, &wc, 1), 0);
	assert_int_equal(T_CNT(e->dev, rx_delivered) - del, 1);
	/* A's socket, which took it, goes: B's takes the next, alone. */
	detach(e, &e->a);
	send_raw_to(e, 0xffffff, &c, 200, 98, true, 0);
	expect_recv_to(e, &e->b, &c, 11, SLOT, 200, 98);
	assert_int_equal(T_CNT(e->dev, rx_other_mcg) - other, 1);
	assert_int_equal(ibv_detach_mcast(e->b.qp, &c, mlid_c), 0);
	assert_int_equal(ibv_detach_mcast(e->b.qp, &b, e->mlid), 0);
}

/*
 * A datagram to the group's address for one QP's number (DestQP not
 * 0xFFFFFF) reaches that QP even when it is not attached (rxe hdr_check),
 * so lending cannot know its receives in advance.  B, not attached, posts
 * A's second buffer; a burst of two: #0 for B, #1 for the group.  As on a
 * NIC, B's receive gets #0 and A's first receive #1, whole: #1, landed in
 * A's second receive, is not overwritten by the copy of #0 for B before
 * A gets it.
 */
static void test_unicast_destqp_shares_lent_buffer(void **state)
{
	struct link_env *e = *state;
	struct ibv_sge sge = {(uintptr_t)(e->a.buf + SLOT), SLOT, e->a.mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 20, .sg_list = &sge, .num_sge = 1}, *bad;
	struct ibv_wc wc;
	uint8_t want[SLOT];

	attach(e, &e->a);
	assert_int_equal(t_post_recv(&e->a, 0, SLOT, 10), 0);
	assert_int_equal(t_post_recv(&e->a, SLOT, SLOT, 11), 0);
	assert_int_equal(ibv_post_recv(e->b.qp, &wr, &bad), 0);
	send_raw_to(e, e->b.qp->qp_num, NULL, 900, 110, true, 0);
	send_raw(e, 700, 111, true, 0);
	lend_fully(e);
	expect_recv(e, &e->a, 10, 0, 700, 111);
	assert_int_equal(t_wait_wc(e->b.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 20);
	assert_int_equal(wc.byte_len, 40 + 900);
	t_fill(want, 900, 110);
	assert_memory_equal(e->a.buf + SLOT + 40, want, 900);
}

/* Every link that lands datagrams (its group endpoints set ep.mcg): RoCEv2 and InfiniBand. */
#define BOTH(t)                                                                    \
	cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, &roce_env),  \
	    cmocka_unit_test_prestate_setup_teardown(t, setup, teardown, &ib_env)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_in_place),
		BOTH(test_in_place_imm_sges),
		BOTH(test_fan_out_copies_from_first),
		BOTH(test_refused_receive_stays_posted),
		BOTH(test_corrupt_receive_stays_posted),
		BOTH(test_one_buffer_for_every_receive),
		BOTH(test_two_qps_one_buffer),
		BOTH(test_longer_than_slot_not_landed),
		BOTH(test_deregistered_mr_not_lent),
		BOTH(test_reregistered_buffer_not_lent),
		BOTH(test_len_err_flush_waits_for_burst),
		BOTH(test_mlid_shared_by_two_groups),
		BOTH(test_dgid_of_a_group_on_another_mlid),
		BOTH(test_unicast_destqp_shares_lent_buffer),
	};

	/* Before any device opens: no background receive thread in this process. */
	setenv("UMC_RX_THREAD", "0", 1);
	return cmocka_run_group_tests(tests, t_sm_required, t_sm_stop);
}
