// SPDX-License-Identifier: MIT
/*
 * test_verbs_rxcheck.c - what the receive path accepts, refuses and
 * counts, with datagrams built by the wire encoders and injected through a
 * plain UDP socket (or, for IPv4 IDs other than 0, a raw IP socket), so
 * that fields no verbs sender would produce can be tried.
 *
 * References:
 *   rxe_recv.c hdr_check() and check_keys() (what an rxe receiver
 *     requires: TVer 0, a UD opcode, a correct ICRC, P_Key matching
 *     0xFFFF: 0xFFFF and 0x7FFF pass);
 *   docs/design.md, "RoCEv2 fidelity" (the ICRC covers the IPv4 ID; rxe
 *     sends non-zero IDs, which a UDP socket never sees: umcast solves the
 *     ID from the ICRC, counted; wire/roce_rx.c), and the GRH shows the
 *     received IPv4 header, ID included;
 *   rxe_recv.c (bad P_Key: counted, skipped), rxe_icrc.c (bad ICRC:
 *     silent drop);
 *   docs/design.md, "Counters" (drops counted per reason: bad ICRC,
 *     Q_Key, no receive, too long, malformed).
 */
#include <netinet/ip.h>

#include "verbs_util.h"
#include "link/roce/roce.h"

struct fx {
	struct t_env e; /* the test's group */
	struct t_qp r;
	int inj;	/* UDP socket bound to 127.0.0.1:INJ_SPORT */
	uint16_t sport;
	unsigned long deliv0;
};

enum { INJ_QPN = 0x00abcd };

static unsigned seq;

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct ip_mreqn mr = {.imr_ifindex = 0};
	socklen_t sl = sizeof(sin);
	int one = 1, ttl = 64, pmtu = IP_PMTUDISC_DO;

	t_env_open(&f->e, t_group_ip(++seq), false);
	t_qp_make(&f->r, f->e.pd, 0, T_QKEY);
	assert_int_equal(ibv_attach_mcast(f->r.qp, &f->e.mgid, 0), 0);
	assert_int_equal(umc_dev_member(f->e.dev, &f->e.mgid, +1), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t_post_recv(&f->r, (size_t)i * 2048, 2048, (uint64_t)i), 0);

	/* As umcast and rxe send: ID 0 + DF (PMTUDISC_DO), TTL 64, out of lo. */
	f->inj = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(f->inj >= 0);
	mr.imr_ifindex = (int)to_roce_port(f->e.dev)->ifindex;
	assert_int_equal(setsockopt(f->inj, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)), 0);
	assert_int_equal(setsockopt(f->inj, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof(ttl)), 0);
	assert_int_equal(setsockopt(f->inj, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)), 0);
	assert_int_equal(setsockopt(f->inj, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)), 0);
	assert_int_equal(bind(f->inj, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(f->inj, (struct sockaddr *)&sin, &sl), 0);
	f->sport = ntohs(sin.sin_port);
	f->deliv0 = T_CNT(f->e.dev, rx_delivered);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	close(f->inj);
	ibv_detach_mcast(f->r.qp, &f->e.mgid, 0);
	umc_dev_member(f->e.dev, &f->e.mgid, -1);
	t_qp_free(&f->r);
	t_env_close(&f->e);
	free(f);
	return 0;
}

/* The IP context of a datagram from the injector to the group. */
static struct umc_ip_ctx inj_ctx(const struct fx *f, uint16_t ip_id)
{
	struct umc_ip_ctx c = {
		.family = 4, .sport = f->sport, .dport = T_PORT, .ip_id = ip_id, .df = true,
		.tclass = 0, .hop_limit = 64,
	};
	uint32_t src = htonl(INADDR_LOOPBACK), dst = htonl(f->e.gip);

	memcpy(c.src, &src, 4);
	memcpy(c.dst, &dst, 4);
	return c;
}

static struct umc_ud_hdr ud_hdr(uint32_t len)
{
	return (struct umc_ud_hdr){
		.bth = {.opcode = UMC_OP_UD_SEND_ONLY, .pad_cnt = (uint8_t)umc_ud_pad(len),
			.pkey = 0xffff, .dest_qpn = 0xffffff, .psn = 1},
		.deth = {.qkey = T_QKEY, .src_qpn = INJ_QPN},
	};
}

/* UDP payload (BTH..ICRC) of a UD SEND of @len pattern bytes (seed @seed). */
static size_t build(const struct fx *f, uint8_t *out, const struct umc_ud_hdr *h, uint32_t len,
		    unsigned seed, uint16_t ip_id)
{
	size_t hl = umc_ud_hdr_encode(out, h), pad = h->bth.pad_cnt;
	size_t n = hl + len + pad + UMC_ICRC_LEN;
	struct umc_ip_ctx c = inj_ctx(f, ip_id);

	t_fill(out + hl, len, seed);
	memset(out + hl + len, 0, pad);
	umc_icrc_put(out + n - UMC_ICRC_LEN, umc_icrc_compute(&c, out, n));
	return n;
}

static void inject(const struct fx *f, const uint8_t *p, size_t n)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(T_PORT)};

	to.sin_addr.s_addr = htonl(f->e.gip);
	assert_int_equal(sendto(f->inj, p, n, 0, (struct sockaddr *)&to, sizeof(to)), (ssize_t)n);
}

/* Inject a good 8-byte datagram (seed @seed) and wait for it on the QP. */
static void marker(struct fx *f, unsigned seed, struct ibv_wc *out)
{
	uint8_t p[256], want[8];
	struct umc_ud_hdr h = ud_hdr(8);
	struct ibv_wc wc;

	inject(f, p, build(f, p, &h, 8, seed, 0));
	assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 48);
	t_fill(want, 8, seed);
	assert_memory_equal(f->r.buf + wc.wr_id * 2048 + 40, want, 8);
	if (out)
		*out = wc;
}

/* Baseline: an injected, encoder-built datagram is delivered intact. */
static void test_injected_datagram_delivered(void **state)
{
	struct fx *f = *state;
	struct ibv_wc wc;
	const uint8_t *ip;

	marker(f, 1, &wc);
	assert_int_equal(wc.src_qp, INJ_QPN);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH);
	ip = f->r.buf + wc.wr_id * 2048 + 20;
	assert_int_equal(ip[4] << 8 | ip[5], 0); /* ID 0 */
	assert_int_equal(ip[6] << 8 | ip[7], 0x4000);
	assert_int_equal(t_ipv4_csum(ip), 0);
}

static void test_bad_icrc_dropped(void **state)
{
	struct fx *f = *state;
	uint8_t p[256];
	struct umc_ud_hdr h = ud_hdr(32);
	unsigned long bad0 = T_CNT(f->e.dev, rx_bad_icrc);
	size_t n = build(f, p, &h, 32, 2, 0);

	p[n - 1] ^= 0x80; /* the ICRC itself */
	inject(f, p, n);
	n = build(f, p, &h, 32, 3, 0);
	p[30] ^= 0x01; /* a payload bit, after the ICRC was computed */
	inject(f, p, n);
	marker(f, 4, NULL);
	t_assert_cq_empty(f->r.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_bad_icrc), bad0 + 2);
	assert_int_equal(T_CNT(f->e.dev, rx_delivered), f->deliv0 + 1);
}

static void test_pkey(void **state)
{
	struct fx *f = *state;
	uint8_t p[256];
	struct umc_ud_hdr h = ud_hdr(8);
	unsigned long viol0 = T_CNT(f->e.dev, rx_pkey_viol);
	struct ibv_wc wc;

	/* Limited-member form of the default partition: matches. */
	h.bth.pkey = 0x7fff;
	inject(f, p, build(f, p, &h, 8, 5, 0));
	assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 48);
	/* Another partition: skipped and counted. */
	h.bth.pkey = 0x8001;
	inject(f, p, build(f, p, &h, 8, 6, 0));
	marker(f, 7, NULL);
	t_assert_cq_empty(f->r.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_pkey_viol), viol0 + 1);
}

/* Move @t's QP to RTS again on P_Key table slot @index, with its receives posted anew. */
static void qp_on_pkey_index(struct t_qp *t, uint16_t index)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};

	assert_int_equal(ibv_modify_qp(t->qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(t_qp_rts_pkey(t->qp, T_QKEY, 0, index), 0);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t_post_recv(t, (size_t)i * 2048, 2048, (uint64_t)i), 0);
}

/*
 * The invalid P_Key (base 0) matches nothing, not even an empty slot of
 * the table, which reads 0x0000 (IBA 10.9.3; rxe's pkey_match).
 */
static void test_invalid_pkey(void **state)
{
	struct fx *f = *state;
	uint8_t p[256];
	struct umc_ud_hdr h = ud_hdr(8);
	unsigned long viol0 = T_CNT(f->e.dev, rx_pkey_viol);
	__be16 slot = htons(1);

	assert_int_equal(ibv_query_pkey(f->e.ctx, 1, 5, &slot), 0);
	assert_int_equal(slot, 0);
	qp_on_pkey_index(&f->r, 5);
	h.bth.pkey = 0x8000;
	inject(f, p, build(f, p, &h, 8, 20, 0));
	h.bth.pkey = 0x0000;
	inject(f, p, build(f, p, &h, 8, 21, 0));
	/* The marker's P_Key 0xFFFF does not match slot 5 either: wait for the count. */
	h.bth.pkey = 0xffff;
	inject(f, p, build(f, p, &h, 8, 22, 0));
	assert_true(t_wait_counter(f->e.dev, &f->e.dev->cnt->rx_pkey_viol, viol0 + 3, T_WAIT_MS));
	assert_int_equal(T_CNT(f->e.dev, rx_pkey_viol), viol0 + 3);
	t_assert_cq_empty(f->r.cq);
}

static void test_malformed(void **state)
{
	struct fx *f = *state;
	uint8_t p[256];
	struct umc_ud_hdr h;
	unsigned long mal0 = T_CNT(f->e.dev, rx_malformed);
	size_t n;
	int k = 0;

	h = ud_hdr(8);
	h.bth.tver = 1; /* transport header version 1 */
	inject(f, p, build(f, p, &h, 8, 10, 0)), k++;
	h = ud_hdr(8);
	h.bth.opcode = 0x04; /* RC SEND_ONLY: not UD */
	inject(f, p, build(f, p, &h, 8, 11, 0)), k++;
	h = ud_hdr(8);
	n = build(f, p, &h, 8, 12, 0);
	inject(f, p, 12 + 8 + 3), k++; /* shorter than BTH + DETH + ICRC */
	inject(f, p, n - 1), k++;     /* not a multiple of 4 */
	marker(f, 14, NULL);
	t_assert_cq_empty(f->r.cq);
	assert_int_equal(T_CNT(f->e.dev, rx_malformed), mal0 + (unsigned long)k);
}

/*
 * rxe's IPv4 IDs are not 0 (docs/design.md, "RoCEv2 fidelity").  A
 * datagram whose ICRC covers ID 0x1234 is accepted by solving the ID
 * (counted), and the GRH shows the ID that was on the wire.  Needs a raw
 * IP socket (CAP_NET_RAW).
 */
static void test_nonzero_ip_id_solved(void **state)
{
	struct fx *f = *state;
	uint8_t d[512], *udp;
	struct umc_ud_hdr h = ud_hdr(24);
	unsigned long solved0 = T_CNT(f->e.dev, rx_icrc_id_solved);
	struct umc_ip_ctx c = inj_ctx(f, 0x1234);
	struct ip_mreqn mr = {.imr_ifindex = (int)to_roce_port(f->e.dev)->ifindex};
	struct sockaddr_in to = {.sin_family = AF_INET};
	struct ibv_wc wc;
	size_t n;
	int raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);

	if (raw < 0) {
		print_message("no raw socket (%s): skipped\n", strerror(errno));
		skip();
	}
	assert_int_equal(setsockopt(raw, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)), 0);
	udp = d + 20 + 8;
	n = build(f, udp, &h, 24, 20, 0x1234);
	umc_ip_hdr_encode(d, &c, n);
	umc_udp_hdr_encode(d + 20, &c, n, 0);
	to.sin_addr.s_addr = htonl(f->e.gip);
	assert_int_equal(sendto(raw, d, 28 + n, 0, (struct sockaddr *)&to, sizeof(to)),
			 (ssize_t)(28 + n));
	close(raw);

	assert_int_equal(t_wait_wc(f->r.cq, &wc, T_WAIT_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 40 + 24);
	assert_int_equal(T_CNT(f->e.dev, rx_icrc_id_solved), solved0 + 1);
	const uint8_t *ip = f->r.buf + wc.wr_id * 2048 + 20;

	assert_int_equal(ip[4] << 8 | ip[5], 0x1234);
	assert_int_equal(t_ipv4_csum(ip), 0);
	uint8_t want[24];

	t_fill(want, 24, 20);
	assert_memory_equal(ip + 20, want, 24);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_injected_datagram_delivered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_icrc_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_pkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nonzero_ip_id_solved, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
