// SPDX-License-Identifier: MIT
/*
 * uc_hosts.c - uc_procs scenarios across hosts (network namespaces joined
 * by a link): ping-pong between two hosts' processes (netns), and rxe's
 * captured packets replayed to a umcast QP whose replies are checked as
 * rxe checks them (rxe).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "uc_procs.h"
#include "wire/wire.h" /* the replay: ICRC */

void scenario_netns(char **argv)
{
	enum { N = 200 };
	struct peer a1, a2, b1, b2;

	if (!start(&a1, 0, argv[4], argv[2], NULL, 0) ||
	    !start(&b1, 1, argv[5], argv[3], NULL, 0) ||
	    !start(&a2, 2, argv[4], argv[2], NULL, 0) || !start(&b2, 3, argv[5], argv[3], NULL, 0))
		return;
	agent_cmd(&a2.ag, "ucsync 0");
	agent_expect_eq("A2's demultiplexer is A1", agent_field(&a2.ag, "leader"),
			(unsigned long)a1.pid);
	agent_cmd(&b2.ag, "ucsync 0");
	agent_expect_eq("B2's demultiplexer is B1", agent_field(&b2.ag, "leader"),
			(unsigned long)b1.pid);
	agent_cmd(&b2.ag, "serve 1");
	agent_cmd(&a1.ag, "serve 1");
	ping_start(&a2, 0, &b2, 1, N, 0);
	ping_start(&b1, 0, &a1, 1, N, 0);
	ping_done(&a2, N, true);
	ping_done(&b1, N, true);
	struct peer *all[] = {&a1, &b1, &a2, &b2};

	for (int i = 0; i < 4; i++) {
		expect_clean(all[i]);
		expect_counter(all[i], "rx_delivered", N);
		expect_counter(all[i], "rx_no_qp", 0);
		/* Each host's demultiplexer steers (or passes on) what arrives there: 2N. */
		expect_counter(all[i], "uc_forwarded", i < 2 && !steering() ? 2 * N : 0);
	}
	for (int i = 3; i >= 0; i--)
		agent_finish(&all[i]->ag);
}

/* ------------------------------------------------------------------------- */
/* rxe's packets, replayed.                                                  */

enum { REPLAY_MAX = 8, FRAME_MAX = 2048 };

struct frame {
	uint8_t ip[FRAME_MAX]; /* from the IPv4 header on */
	size_t len;
};

/* The first @max RoCEv2 IPv4 frames of a pcap (Ethernet). */
static int pcap_roce(const char *path, struct frame *f, int max)
{
	static uint8_t buf[1 << 20];
	FILE *fp = fopen(path, "rb");
	size_t n, pos = 24;
	int k = 0;

	if (!fp)
		return -1;
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	if (n < 24 || (buf[0] | buf[1] << 8 | buf[2] << 16 | (uint32_t)buf[3] << 24) != 0xa1b2c3d4)
		return -1;
	while (pos + 16 <= n && k < max) {
		size_t cap = buf[pos + 8] | buf[pos + 9] << 8 | buf[pos + 10] << 16;
		const uint8_t *fr = buf + pos + 16, *ip = fr + 14;

		if (pos + 16 + cap > n)
			break;
		pos += 16 + cap;
		if (cap < 14 + 20 + 8 + 20 || cap - 14 > FRAME_MAX || fr[12] != 0x08 ||
		    fr[13] != 0 || ip[0] != 0x45 || ip[9] != 17 || (ip[22] << 8 | ip[23]) != 4791)
			continue;
		f[k].len = (size_t)(ip[2] << 8 | ip[3]);
		if (f[k].len > cap - 14)
			continue;
		memcpy(f[k].ip, ip, f[k].len);
		k++;
	}
	return k;
}

/* The IPv4 header checksum, computed here independently of src/wire. */
static void ip_csum(uint8_t *ip)
{
	uint32_t sum = 0;

	ip[10] = ip[11] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	ip[10] = (uint8_t)(~sum >> 8);
	ip[11] = (uint8_t)~sum;
}

/* Readdress a captured rxe packet: destination @dst, DestQP @dqpn, checksum, ICRC. */
static void readdress(struct frame *f, struct in_addr dst, uint32_t dqpn)
{
	uint8_t *ip = f->ip, *udp = ip + 20, *bth = udp + 8;
	size_t udp_len = f->len - 28;
	struct umc_ip_ctx c = {
	    .family = 4,
	    .sport = (uint16_t)(udp[0] << 8 | udp[1]),
	    .dport = 4791,
	    .ip_id = (uint16_t)(ip[4] << 8 | ip[5]),
	    .df = (ip[6] & 0x40) != 0,
	    .tclass = ip[1],
	    .hop_limit = ip[8],
	};

	memcpy(ip + 16, &dst, 4);
	ip_csum(ip);
	bth[5] = (uint8_t)(dqpn >> 16);
	bth[6] = (uint8_t)(dqpn >> 8);
	bth[7] = (uint8_t)dqpn;
	memcpy(c.src, ip + 12, 4);
	memcpy(c.dst, ip + 16, 4);
	umc_icrc_put(bth + udp_len - 4, umc_icrc_compute(&c, bth, udp_len));
}

struct rxe_arg {
	const char *netns, *host, *me, *pcap;
};

/*
 * The "rxe host": replay Q K (send K readdressed rxe packets to DestQP Q),
 * expect K (what packet K must look like at the receiver), replies K QPN
 * (check the K replies rxe would receive).
 */
static int rxe_main(void *arg, int cmd)
{
	const struct rxe_arg *ra = arg;
	static struct frame fr[REPLAY_MAX];
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(4791)};
	struct sockaddr_in host = {.sin_family = AF_INET};
	char path[256], line[256];
	int nfr, raw, udp, nsfd;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ra->netns);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0 || setns(nsfd, CLONE_NEWNET)) {
		agent_reply("fail setns %s", ra->netns);
		return 1;
	}
	nfr = pcap_roce(ra->pcap, fr, REPLAY_MAX);
	inet_pton(AF_INET, ra->me, &me.sin_addr);
	inet_pton(AF_INET, ra->host, &host.sin_addr);
	raw = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
	udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (nfr != REPLAY_MAX || raw < 0 || udp < 0 ||
	    bind(udp, (struct sockaddr *)&me, sizeof(me))) {
		agent_reply("fail setup: %d frames, raw %d, udp %d (errno %d)", nfr, raw, udp,
			    errno);
		return 1;
	}
	agent_reply("ok ready frames=%d", nfr);
	while (t_read_line(cmd, line, sizeof(line), 2 * AGENT_CMD_MS)) {
		unsigned q, k;

		if (sscanf(line, "replay %x %u", &q, &k) == 2 && k <= (unsigned)nfr) {
			unsigned sent = 0;

			for (unsigned i = 0; i < k; i++) {
				readdress(&fr[i], host.sin_addr, q);
				sent +=
				    sendto(raw, fr[i].ip, fr[i].len, 0, (struct sockaddr *)&host,
					   sizeof(host)) == (ssize_t)fr[i].len;
			}
			agent_reply(sent == k ? "ok replayed=%u" : "fail replayed=%u", sent);
		} else if (sscanf(line, "expect %u", &k) == 1 && k < (unsigned)nfr) {
			const uint8_t *ip = fr[k].ip, *bth = ip + 28;
			size_t udp_len = fr[k].len - 28, off = 12 + 8 + (bth[0] == 0x65 ? 4 : 0);
			size_t plen = udp_len - off - ((bth[1] >> 4) & 3) - 4;
			char hex[81] = "";

			/* 20 zero bytes, then the IPv4 header exactly as sent (union
			 * rdma_network_hdr, include/rdma/ib_verbs.h). */
			for (int i = 0; i < 40; i++)
				snprintf(hex + 2 * i, 3, "%02x", i < 20 ? 0 : ip[i - 20]);
			agent_reply("ok len=%zu src_qp=0x%x imm=0x%x sum=0x%x grh=%s", 40 + plen,
				    bth[17] << 16 | bth[18] << 8 | bth[19],
				    bth[0] == 0x65 ? (uint32_t)bth[20] << 24 | bth[21] << 16 |
							 bth[22] << 8 | bth[23]
						   : 0,
				    fnv(bth + off, plen), hex);
		} else if (sscanf(line, "replies %u %x", &k, &q) == 2 && k <= (unsigned)nfr) {
			unsigned good = 0;
			char why[160] = "";

			for (unsigned i = 0; i < k; i++) {
				uint8_t b[FRAME_MAX];
				struct sockaddr_in from;
				socklen_t fl = sizeof(from);
				struct pollfd p = {.fd = udp, .events = POLLIN};
				ssize_t n = poll(&p, 1, WAIT_MS) == 1
						? recvfrom(udp, b, sizeof(b), 0,
							   (struct sockaddr *)&from, &fl)
						: -1;
				const uint8_t *req = fr[i].ip + 28;
				size_t roff = 12 + 8 + (req[0] == 0x65 ? 4 : 0);
				size_t rplen = fr[i].len - 28 - roff - ((req[1] >> 4) & 3) - 4;
				struct umc_ip_ctx c = {.family = 4, .dport = 4791, .df = true};
				struct umc_ud_hdr h;
				size_t off, plen;

				if (n < 0) {
					snprintf(why, sizeof(why), "reply %u not received", i);
					break;
				}
				/* What rxe checks: ICRC over ID 0 + DF, the addresses, the ports.
				 */
				memcpy(c.src, &from.sin_addr, 4);
				memcpy(c.dst, &me.sin_addr, 4);
				c.sport = ntohs(from.sin_port);
				if (umc_ud_decode(b, (size_t)n, &h, &off, &plen) ||
				    umc_icrc_compute(&c, b, (size_t)n) != umc_icrc_get(b + n - 4) ||
				    h.bth.opcode != UMC_OP_UD_SEND_ONLY || h.bth.dest_qpn != 0x11 ||
				    h.bth.pkey != 0xffff || h.deth.src_qpn != q ||
				    h.deth.qkey != 0x01234567 || c.sport != umc_roce_sport(q) ||
				    from.sin_addr.s_addr != host.sin_addr.s_addr || plen != rplen ||
				    memcmp(b + off, req + roff, plen)) {
					snprintf(why, sizeof(why),
						 "reply %u: opcode 0x%x destqp 0x%x srcqp 0x%x "
						 "qkey 0x%x "
						 "sport %u len %zu",
						 i, h.bth.opcode, h.bth.dest_qpn, h.deth.src_qpn,
						 h.deth.qkey, c.sport, plen);
					break;
				}
				good++;
			}
			agent_reply(good == k ? "ok replies=%u" : "fail replies=%u %s", good, why);
		} else if (strcmp(line, "quit") == 0) {
			agent_reply("ok bye");
			return 0;
		} else {
			agent_reply("fail unknown command '%s'", line);
		}
	}
	return 2;
}

/* Drop @key=... from a reply line: what remains must match between two agents. */
static const char *after_ok(const struct agent *a)
{
	return strncmp(a->last, "ok ", 3) == 0 ? a->last + 3 : a->last;
}

static void strip_flags(char *s)
{
	char *p = strstr(s, " flags=");

	if (p) {
		char *e = strchr(p + 1, ' ');

		memmove(p, e ? e : p + strlen(p), strlen(e ? e : p + strlen(p)) + 1);
	}
}

void scenario_rxe(char **argv)
{
	struct rxe_arg ra = {argv[3], argv[4], argv[5], argv[6]};
	struct agent rxe;
	struct peer h;

	if (!start(&h, 0, argv[4], argv[2], NULL, 0x01234567))
		return;
	agent_spawn(&rxe, "rxe", rxe_main, &ra);
	if (!agent_ready(&rxe))
		return;
	agent_cmd(&h.ag, "ucsync 0");
	agent_cmd(&h.ag, "serve 0 raw");
	agent_cmd(&rxe, "replay %x %d", h.q[0], REPLAY_MAX);
	/* H answers each with an AH from its completion: rxe gets REPLAY_MAX replies. */
	agent_cmd(&rxe, "replies %d %x", REPLAY_MAX, h.q[0]);
	for (int k = 0; k < REPLAY_MAX; k++) {
		char want[512];

		if (!agent_cmd(&rxe, "expect %d", k))
			break;
		snprintf(want, sizeof(want), "%s", after_ok(&rxe));
		if (!agent_cmd(&h.ag, "grh 0 %d", k))
			break;
		agent_expect_eq("IBV_WC_GRH|IBV_WC_WITH_IMM", agent_field(&h.ag, "flags"),
				IBV_WC_GRH | IBV_WC_WITH_IMM);
		strip_flags(h.ag.last);
		if (strcmp(after_ok(&h.ag), want)) {
			agent_fail("reception %d differs from rxe's packet:\n  got  %s\n  want %s", k,
				   after_ok(&h.ag), want);
		}
	}
	/* rxe's IDs are not 0: every one was solved from the ICRC, none was refused. */
	expect_counter(&h, "rx_icrc_id_solved", REPLAY_MAX);
	expect_counter(&h, "rx_delivered", REPLAY_MAX);
	expect_counter(&h, "uc_forwarded", steering() ? 0 : REPLAY_MAX);
	expect_clean(&h);
	agent_finish(&rxe);
	agent_finish(&h.ag);
}
