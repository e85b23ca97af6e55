// SPDX-License-Identifier: MIT
/*
 * hostile - hostile datagrams at a receiver while legitimate traffic flows.
 *
 *   hostile recv BIND GROUP N     full member on GROUP through BIND; expects
 *                                 N legitimate messages and 2N datagrams
 *   hostile send BIND GROUP N     send-only member: N legitimate sends
 *                                 through umcast, each followed by one
 *                                 hostile datagram from a plain UDP socket
 *
 * The hostile kinds take turns: random bytes, a legitimate packet truncated,
 * an oversized one (above the receive slot, UMC_RX_SLOT),
 * a bad ICRC, a wrong Q_Key, a wrong P_Key, a wrong opcode, and one above
 * the port's MTU (which no receive may see: it would fail a receive of
 * 40 + MTU bytes and put its QP in the error state), each built
 * with the wire encoders and, but for its one defect, correct (ICRC
 * included, computed over the exact IP/UDP context the receiver will see).
 * The PRNG is seeded from N, so a run can be repeated.
 *
 * The sender prints what each receive counter must then show ("expect
 * rx_malformed=K ..."): for the random and truncated kinds it predicts the
 * verdict with the same pure check (umc_rocev2_rx_check) and draws again
 * when that check would let the datagram through, so every hostile
 * datagram is dropped and its reason known.  The receiver checks the bytes
 * of every legitimate message and waits (bounded) until all 2N datagrams
 * were read; its counters are printed by UMC_STATS=1 at exit, which
 * test_hostile.sh compares with the sender's expectations.
 *
 * Exit status 0 when every step worked and, for the receiver, every
 * legitimate message arrived intact; 1 otherwise.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "link/roce/roce.h" /* the receiver's device counters and interface */
#include "verbs/verbs_int.h"
#include "wait.h"

#ifndef UDP_NO_CHECK6_TX
#define UDP_NO_CHECK6_TX 101
#endif
#ifndef IPV6_AUTOFLOWLABEL
#define IPV6_AUTOFLOWLABEL 70
#endif

enum {
	MAX_N = 8192,
	RBUF = UMC_GRH_LEN + 256, /* posted receive: every legitimate message fits */
	LEGIT_MAX = 256,
	OVER_SLOT = UMC_RX_SLOT + 100,
	WAIT_MS = 10000,
	MAX_TRIES = 1000, /* datagrams drawn to find one the receive check refuses */
};

enum kind {
	K_RANDOM,
	K_TRUNCATED,
	K_OVERSIZED,
	K_BAD_ICRC,
	K_QKEY,
	K_PKEY,
	K_OPCODE,
	K_ABOVE_MTU,
	NKINDS
};

static const char *const kind_name[NKINDS] = {
	"random",     "truncated",    "oversized", "bad_icrc",
	"wrong_qkey", "wrong_pkey", "wrong_opcode", "above_mtu",
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "hostile: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (errno %d: %s)\n", errno, strerror(errno));
	va_end(ap);
	exit(1);
}

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

/* Legitimate message i: length 8 + i % 200, byte j = (i * 7 + j) mod 251. */
static uint32_t legit_len(uint32_t i)
{
	return 8 + i % 200;
}

static void legit_fill(uint8_t *p, uint32_t i)
{
	for (uint32_t j = 0; j < legit_len(i); j++)
		p[j] = (uint8_t)((i * 7 + j) % 251);
}

/* --- the CM side, shared by both roles ---------------------------------- */

struct member {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_ah *ah;
	uint32_t rqpn, rqkey;
	uint32_t nrecv; /* receives posted: one per legitimate message, so none waits for a repost */
	struct sockaddr_storage src, grp;
};

static void parse_addr(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, s, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	else
		die("bad address %s", s);
}

static struct rdma_cm_event *expect_event(struct member *m, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(m->ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != type || ev->status)
		die("event %s status %d, expected %s", rdma_event_str(ev->event), ev->status,
		    rdma_event_str(type));
	return ev;
}

static void member_join(struct member *m, bool sendonly)
{
	struct ibv_qp_init_attr qa = {
		.cap = {.max_send_wr = 16, .max_recv_wr = m->nrecv, .max_send_sge = 1,
			.max_recv_sge = 1},
		.qp_type = IBV_QPT_UD,
		.sq_sig_all = 1,
	};
	struct rdma_cm_join_mc_attr_ex ja = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = sendonly ? RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
				       : RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = (struct sockaddr *)&m->grp,
	};
	struct rdma_cm_event *ev;

	m->ch = rdma_create_event_channel();
	if (!m->ch || rdma_create_id(m->ch, &m->id, NULL, RDMA_PS_UDP))
		die("rdma_create_id");
	if (rdma_resolve_addr(m->id, (struct sockaddr *)&m->src, (struct sockaddr *)&m->grp, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect_event(m, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_create_qp(m->id, NULL, &qa))
		die("rdma_create_qp");
	m->buf = calloc(m->nrecv, RBUF);
	m->mr = m->buf ? ibv_reg_mr(m->id->pd, m->buf, (size_t)m->nrecv * RBUF,
				    IBV_ACCESS_LOCAL_WRITE)
		       : NULL;
	if (!m->mr)
		die("ibv_reg_mr");
	if (!sendonly)
		for (uint32_t k = 0; k < m->nrecv; k++) {
			struct ibv_sge sge = {(uintptr_t)m->buf + (size_t)k * RBUF, RBUF,
					      m->mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = (uint64_t)k, .sg_list = &sge,
						 .num_sge = 1},
					   *bad;

			if (ibv_post_recv(m->id->qp, &wr, &bad))
				die("ibv_post_recv");
		}
	if (rdma_join_multicast_ex(m->id, &ja, NULL))
		die("rdma_join_multicast_ex");
	ev = expect_event(m, RDMA_CM_EVENT_MULTICAST_JOIN);
	m->ah = ibv_create_ah(m->id->pd, &ev->param.ud.ah_attr);
	m->rqpn = ev->param.ud.qp_num;
	m->rqkey = ev->param.ud.qkey;
	rdma_ack_cm_event(ev);
	if (!m->ah)
		die("ibv_create_ah");
}

static void member_leave(struct member *m)
{
	if (rdma_leave_multicast(m->id, (struct sockaddr *)&m->grp))
		die("rdma_leave_multicast");
	ibv_destroy_ah(m->ah);
	rdma_destroy_qp(m->id);
	ibv_dereg_mr(m->mr);
	free(m->buf);
	rdma_destroy_id(m->id);
	rdma_destroy_event_channel(m->ch);
}

/* --- receiver -------------------------------------------------------------- */

static int recv_main(struct member *m, uint32_t n)
{
	uint32_t got = 0, bad = 0;
	uint8_t want[LEGIT_MAX];
	struct ibv_wc wc[16];
	struct umc_device *dev;
	uint64_t deadline;

	member_join(m, false);
	dev = ctx_dev(m->id->verbs);
	deadline = t_now_ms() + WAIT_MS;
	printf("joined\n");
	fflush(stdout);
	while ((got < n || atomic_load(&dev->cnt->rx_packets) < 2ul * n) && t_now_ms() < deadline) {
		int k = ibv_poll_cq(m->id->recv_cq, 16, wc);

		if (k < 0)
			die("ibv_poll_cq");
		for (int i = 0; i < k; i++) {
			const uint8_t *msg = m->buf + wc[i].wr_id * RBUF + UMC_GRH_LEN;
			uint32_t len = wc[i].byte_len - UMC_GRH_LEN;
			uint32_t idx = wc[i].imm_data ? ntohl(wc[i].imm_data) - 1 : ~0u;
			struct ibv_sge sge = {(uintptr_t)m->buf + wc[i].wr_id * RBUF, RBUF,
					      m->mr->lkey};
			struct ibv_recv_wr wr = {.wr_id = wc[i].wr_id, .sg_list = &sge,
						 .num_sge = 1},
					   *badwr;

			if (wc[i].status != IBV_WC_SUCCESS || !(wc[i].wc_flags & IBV_WC_WITH_IMM) ||
			    idx != got || len != legit_len(idx)) {
				fprintf(stderr, "hostile: unexpected completion: status %d imm %u "
						"len %u (expected message %u)\n",
					wc[i].status, idx, len, got);
				bad++;
			} else {
				legit_fill(want, idx);
				if (memcmp(msg, want, len)) {
					fprintf(stderr, "hostile: message %u corrupted\n", idx);
					bad++;
				}
			}
			got++;
			if (ibv_post_recv(m->id->qp, &wr, &badwr))
				die("ibv_post_recv");
		}
	}
	printf("received %u legitimate messages, %u bad; %lu datagrams read\n", got, bad,
	       atomic_load(&dev->cnt->rx_packets));
	member_leave(m);
	return got == n && !bad && atomic_load(&dev->cnt->rx_packets) == 2ul * n ? 0 : 1;
}

/* --- sender ------------------------------------------------------------------ */

struct hostile {
	int fd, big_fd; /* big_fd: no DF, for datagrams above the path MTU */
	struct umc_ip_ctx ip;
	struct sockaddr_storage dst;
	socklen_t dst_len;
	uint32_t mtu; /* the port's active MTU, bytes */
	unsigned expect_malformed, expect_bad_icrc, expect_too_long, expect_qkey, expect_pkey;
	unsigned sent[NKINDS];
};

static int hostile_socket(struct member *m, bool df, uint16_t port)
{
	struct sockaddr_storage ss = m->src;
	bool v4 = ss.ss_family == AF_INET;
	unsigned ifindex = to_roce_port(ctx_dev(m->id->verbs))->ifindex;
	socklen_t len = v4 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1, zero = 0, hops = 64;
	int pmtu = df ? IP_PMTUDISC_DO : IP_PMTUDISC_DONT;
	int pmtu6 = df ? IPV6_PMTUDISC_DO : IPV6_PMTUDISC_DONT;

	if (fd < 0)
		die("socket");
	if (v4) {
		struct ip_mreqn mr = {.imr_ifindex = (int)ifindex};

		((struct sockaddr_in *)&ss)->sin_port = htons(port);
		if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof(mr)) ||
		    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &hops, sizeof(hops)) ||
		    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
		    setsockopt(fd, SOL_SOCKET, SO_NO_CHECK, &one, sizeof(one)))
			die("IPv4 socket options");
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu6, sizeof(pmtu6)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, sizeof(zero)) ||
		    setsockopt(fd, IPPROTO_UDP, UDP_NO_CHECK6_TX, &one, sizeof(one)))
			die("IPv6 socket options");
	}
	if (bind(fd, (struct sockaddr *)&ss, len))
		die("bind");
	return fd;
}

static void hostile_open(struct hostile *h, struct member *m)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	bool v4 = m->src.ss_family == AF_INET;

	h->fd = hostile_socket(m, true, 0);
	if (getsockname(h->fd, (struct sockaddr *)&ss, &len))
		die("getsockname");
	h->big_fd = hostile_socket(m, false, 0);
	h->mtu = 128u << ctx_dev(m->id->verbs)->active_mtu;
	/* The context the receiver will see: ID 0 and DF (IP_PMTUDISC_DO). */
	memset(&h->ip, 0, sizeof(h->ip));
	h->ip.family = v4 ? 4 : 6;
	h->ip.df = v4;
	h->ip.dport = UMC_ROCEV2_UDP_PORT;
	h->ip.hop_limit = 64;
	h->dst = m->grp;
	if (v4) {
		memcpy(h->ip.src, &((struct sockaddr_in *)&m->src)->sin_addr, 4);
		memcpy(h->ip.dst, &((struct sockaddr_in *)&m->grp)->sin_addr, 4);
		h->ip.sport = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		((struct sockaddr_in *)&h->dst)->sin_port = htons(UMC_ROCEV2_UDP_PORT);
		h->dst_len = sizeof(struct sockaddr_in);
	} else {
		memcpy(h->ip.src, &((struct sockaddr_in6 *)&m->src)->sin6_addr, 16);
		memcpy(h->ip.dst, &((struct sockaddr_in6 *)&m->grp)->sin6_addr, 16);
		h->ip.sport = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		((struct sockaddr_in6 *)&h->dst)->sin6_port = htons(UMC_ROCEV2_UDP_PORT);
		h->dst_len = sizeof(struct sockaddr_in6);
	}
}

/* A correct UD SEND of @plen random payload bytes: headers, pad and ICRC. */
static size_t build(const struct hostile *h, uint8_t *p, uint32_t plen, uint8_t opcode,
		    uint16_t pkey, uint32_t qkey)
{
	struct umc_ud_hdr uh = {
		.bth = {.opcode = opcode, .pad_cnt = (uint8_t)umc_ud_pad(plen), .pkey = pkey,
			.dest_qpn = UMC_MCAST_QPN, .psn = rnd() & 0xffffff},
		.deth = {.qkey = qkey, .src_qpn = 0x4242},
		.imm_be = htonl(0xbad),
	};
	size_t off = umc_ud_hdr_encode(p, &uh), len;

	for (uint32_t i = 0; i < plen; i++)
		p[off + i] = (uint8_t)rnd();
	memset(p + off + plen, 0, uh.bth.pad_cnt);
	len = off + plen + uh.bth.pad_cnt + UMC_ICRC_LEN;
	umc_icrc_put(p + len - UMC_ICRC_LEN, umc_icrc_compute(&h->ip, p, len));
	return len;
}

/* The verdict of the receive check on @p, as the receiver will reach it. */
static int verdict(const struct hostile *h, const uint8_t *p, size_t len)
{
	struct umc_ip_ctx ip = h->ip;
	struct umc_ud_hdr uh;
	size_t off, plen;
	bool solved;

	return umc_rocev2_rx_check(&ip, p, len, &uh, &off, &plen, &solved);
}

/* Count a dropped datagram of kind @k under the counter its verdict @v names. */
static void expect_dropped(struct hostile *h, int v, enum kind k)
{
	if (!v)
		die("the receive check takes %d %s datagrams in a row", MAX_TRIES, kind_name[k]);
	if (v == -EILSEQ)
		h->expect_bad_icrc++;
	else
		h->expect_malformed++;
}

static void hostile_send(struct hostile *h, enum kind k)
{
	static uint8_t p[OVER_SLOT];
	size_t len;
	int fd = h->fd, v, tries = 0;

	switch (k) {
	case K_RANDOM: /* any bytes the check refuses (it accepts ~2^-16 of the decodable) */
		do {
			len = 1 + rnd() % 1400;
			for (size_t i = 0; i < len; i++)
				p[i] = (uint8_t)rnd();
			if (rnd() & 1)
				p[0] = (uint8_t)(UMC_OP_UD_SEND_ONLY + (rnd() & 1));
		} while (!(v = verdict(h, p, len)) && ++tries < MAX_TRIES);
		expect_dropped(h, v, k);
		break;
	case K_TRUNCATED: /* a correct packet cut short anywhere */
		do {
			len = build(h, p, rnd() % 300, UMC_OP_UD_SEND_ONLY, UMC_DEFAULT_PKEY,
				    RDMA_UDP_QKEY);
			len = rnd() % len;
		} while (!(v = verdict(h, p, len)) && ++tries < MAX_TRIES);
		expect_dropped(h, v, k);
		break;
	case K_OVERSIZED: /* correct, but above the receive slot (UMC_RX_SLOT) */
		len = build(h, p, OVER_SLOT - 64, UMC_OP_UD_SEND_ONLY, UMC_DEFAULT_PKEY,
			    RDMA_UDP_QKEY);
		fd = h->big_fd;
		h->expect_too_long++;
		break;
	case K_ABOVE_MTU: /* correct, but 1 to 256 bytes above the MTU: within the link's */
		len = build(h, p, h->mtu + 1 + rnd() % 256, UMC_OP_UD_SEND_ONLY, UMC_DEFAULT_PKEY,
			    RDMA_UDP_QKEY);
		h->expect_too_long++;
		break;
	case K_BAD_ICRC: /* one payload bit flipped, so that no IPv4 ID explains it */
		len = build(h, p, 64, UMC_OP_UD_SEND_ONLY, UMC_DEFAULT_PKEY, RDMA_UDP_QKEY);
		for (uint32_t bit = rnd(); tries < 64 * 8; bit++, tries++) {
			p[20 + bit / 8 % 64] ^= (uint8_t)(1u << bit % 8);
			if (verdict(h, p, len) == -EILSEQ)
				break;
			p[20 + bit / 8 % 64] ^= (uint8_t)(1u << bit % 8);
		}
		if (tries == 64 * 8)
			die("the receive check takes every one-bit error of a 64-byte payload");
		h->expect_bad_icrc++;
		break;
	case K_QKEY:
		len = build(h, p, 64, UMC_OP_UD_SEND_ONLY_IMM, UMC_DEFAULT_PKEY,
			    RDMA_UDP_QKEY ^ (1u + rnd() % 0xffff));
		h->expect_qkey++;
		break;
	case K_PKEY: /* neither 0xFFFF nor its limited form 0x7FFF */
		len = build(h, p, 64, UMC_OP_UD_SEND_ONLY_IMM, (uint16_t)(0x1000 + rnd() % 0x6000),
			    RDMA_UDP_QKEY);
		h->expect_pkey++;
		break;
	case K_OPCODE: /* RC SEND ONLY, CNP, RC RDMA WRITE: correct but not UD */
	default: {
		static const uint8_t ops[] = {0x04, 0x81, 0x0a, 0x00, 0x66};

		len = build(h, p, 64, ops[h->sent[k] % sizeof(ops)], UMC_DEFAULT_PKEY,
			    RDMA_UDP_QKEY);
		h->expect_malformed++;
		break;
	}
	}
	if (sendto(fd, p, len, 0, (struct sockaddr *)&h->dst, h->dst_len) != (ssize_t)len)
		die("sendto (%s, %zu bytes)", kind_name[k], len);
	h->sent[k]++;
}

static int send_main(struct member *m, uint32_t n)
{
	struct hostile h = {0};
	uint8_t *msg;
	struct ibv_wc wc;

	member_join(m, true);
	hostile_open(&h, m);
	msg = m->buf;
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_sge sge = {(uintptr_t)msg, legit_len(i), m->mr->lkey};
		struct ibv_send_wr wr = {
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.imm_data = htonl(i + 1),
			.wr.ud = {.ah = m->ah, .remote_qpn = m->rqpn, .remote_qkey = m->rqkey},
		}, *bad;
		uint64_t deadline = t_now_ms() + WAIT_MS;
		int k;

		legit_fill(msg, i);
		if (ibv_post_send(m->id->qp, &wr, &bad))
			die("ibv_post_send");
		while (!(k = ibv_poll_cq(m->id->send_cq, 1, &wc)) && t_now_ms() < deadline)
			;
		if (k != 1 || wc.status != IBV_WC_SUCCESS)
			die("send completion %d status %d", k, k == 1 ? (int)wc.status : -1);
		hostile_send(&h, (enum kind)(i % NKINDS));
	}
	printf("sent %u legitimate messages and", n);
	for (int k = 0; k < NKINDS; k++)
		printf(" %s=%u", kind_name[k], h.sent[k]);
	printf("\nexpect rx_packets=%u rx_delivered=%u rx_malformed=%u rx_bad_icrc=%u "
	       "rx_icrc_id_solved=0 rx_too_long=%u rx_qkey_viol=%u rx_pkey_viol=%u rx_no_recv=0\n",
	       2 * n, n, h.expect_malformed, h.expect_bad_icrc, h.expect_too_long, h.expect_qkey,
	       h.expect_pkey);
	close(h.fd);
	close(h.big_fd);
	member_leave(m);
	return 0;
}

int main(int argc, char **argv)
{
	struct member m = {0};
	long n;

	if (argc != 5 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send")) ||
	    (n = strtol(argv[4], NULL, 10)) <= 0 || n > MAX_N) {
		fprintf(stderr, "usage: %s recv|send BIND GROUP N\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_addr(argv[2], &m.src);
	parse_addr(argv[3], &m.grp);
	rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	m.nrecv = argv[1][0] == 'r' ? (uint32_t)n : 1;
	return argv[1][0] == 'r' ? recv_main(&m, (uint32_t)n) : send_main(&m, (uint32_t)n);
}
