// SPDX-License-Identifier: MIT
/*
 * fuzz_sm_handler.c - libFuzzer target for umc-sm's whole request handler
 * (sm/: protocol, registry, SA rules, groups, RMPP), state and all.
 *
 * The input is a script of datagrams:
 *   op (1) | source (1) | length (2, big-endian) | datagram (length bytes)
 * op bit 0 "fix": if the source endpoint holds a port, its LID and the
 * epoch are written into the datagram's header (so that the fuzzer gets
 * past the UNKNOWN_PORT check without guessing them); bits 1-7: the clock
 * advances by that many times 50 ms and umc_sm_tick() runs (leases, RMPP
 * resends and limits).  source bits 0-2: one of 8 endpoints, of 3 source
 * hosts; bit 7: the requests that wait (new REGISTERs, scanning queries)
 * are left waiting after this datagram, else they are all served.  Three
 * ports are registered before the script runs; the caps are small enough
 * to be reached, and umc-sm runs with --sm-key, so that proxy requests
 * with the key get past that check.  An input of odd length runs it with
 * --forwarding unicast (a last byte that makes no op changes nothing else).
 *
 * Properties, after every step: each datagram umc-sm sends decodes as a
 * reply of the protocol; every group's member and full-member counts
 * match its member list; every membership is on its port's list; the
 * MLID map agrees with the groups; each source host's ports, memberships,
 * transfers and forwarding subscriptions are what its ports hold, within
 * the caps.  At the end the
 * state is destroyed: under ASan/LSan nothing may leak.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "wire/be.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { SOURCES = 8, FUZZ_EPOCH = 0x5eed };

static void check_out(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len)
{
	struct umc_sm_msg m;

	(void)ctx;
	(void)to;
	CHECK(umc_sm_msg_decode(buf, len, &m) == 0);
	CHECK(m.hdr.type & UMC_SM_TYPE_REPLY);
	CHECK(m.hdr.epoch == FUZZ_EPOCH);
}

/* Three source hosts: the endpoint's port number modulo 3 is its user. */
static uint64_t host_of_source(void *ctx, const struct sockaddr_in *src,
			       const struct sockaddr_in *dst)
{
	(void)ctx;
	(void)dst;
	return umc_sm_host_key_make(UMC_SM_HOST_USER, ntohs(src->sin_port) % 3);
}

static struct sockaddr_in source(unsigned i)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_addr.s_addr = htonl(0x7f000001 + (i & 1));
	a.sin_port = htons((uint16_t)(50000 + i));
	return a;
}

static void check_state(struct umc_sm *sm)
{
	const struct umc_sm_group *g;
	const struct umc_sm_member *m;
	unsigned groups = 0;

	for (g = sm->groups.list; g; g = g->next) {
		unsigned n = 0, full = 0;

		groups++;
		CHECK(umc_sm_group_by_mlid(sm, g->rec.mlid) == g);
		CHECK(umc_sm_group_by_mgid(sm, g->rec.mgid) == g);
		for (m = g->members; m; m = m->grp_next) {
			n++;
			full += !!(m->join_state & UMC_JOIN_ANY_FULL);
			CHECK(m->grp == g && m->join_state && !(m->join_state & ~0xF));
			CHECK(umc_sm_member_find(sm, g, m->port) == m);
		}
		CHECK(n == g->nmembers && full == g->full_members);
		CHECK(g->well_known || full > 0);
	}
	CHECK(groups == sm->groups.count);
}

/* Each host's counts are its ports' sums, and within the caps. */
static void check_hosts(struct umc_sm *sm)
{
	const struct umc_sm_port *p, *q;

	for (p = sm->ports.lease_head; p; p = p->lease_next) {
		const struct umc_sm_host *h = p->host;
		unsigned ports = 0, members = 0, txns = 0, subs = 0, n = 0, stale = 0;

		CHECK(umc_sm_host_find(sm, h->key) == h);
		for (q = sm->ports.lease_head; q; q = q->lease_next) {
			if (q->host != h)
				continue;
			ports++;
			members += q->nmembers;
			txns += q->ntxns;
			subs += q->nsubs;
		}
		CHECK(ports == h->ports && members == h->members && txns == h->txns && subs == h->subs);
		/* Its subscriptions: on its list, each acknowledged at most what it was sent. */
		for (const struct umc_sm_sub *s = p->subs; s; s = s->port_next) {
			n++;
			stale += s->stale;
			CHECK(s->port == p && s->acked <= s->sent && s->sent <= s->f->version);
		}
		CHECK(n == p->nsubs && stale == p->nstale && p->nsubs <= sm->cfg.max_groups_per_port);
		CHECK(ports <= sm->cfg.max_ports_per_host && members <= sm->cfg.max_groups_per_host &&
		      txns <= sm->cfg.max_rmpp_per_host);
		CHECK(p->nmembers <= sm->cfg.max_groups_per_port &&
		      p->ntxns <= sm->cfg.max_rmpp_per_port);
		CHECK(h->queued <= UMC_SM_DEFER_QUERIES_PER_HOST);
	}
	CHECK(sm->hosts.count <= sm->ports.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct umc_sm_out out = { .send = check_out, .source = host_of_source };
	struct umc_sm_config cfg;
	struct umc_sm *sm;
	uint64_t now = 1000;
	size_t off = 0;
	unsigned i;

	umc_sm_config_default(&cfg);
	cfg.epoch = FUZZ_EPOCH;
	cfg.lease_ms = 1000;
	cfg.mlid_max = 0xC010; /* small enough to run out */
	cfg.sm_key_set = true;
	cfg.max_ports_per_host = 2;
	cfg.max_groups_per_port = 6;
	cfg.max_groups_per_host = 10;
	cfg.max_rmpp_per_port = 2;
	cfg.max_rmpp_per_host = 3;
	cfg.unicast_fwd = size % 2;
	sm = umc_sm_create(&cfg, &out);
	CHECK(sm);
	for (i = 0; i < 3; i++) {
		struct umc_sm_register reg = { .data_addr = 0x7f000001, .data_port = 6000, .nonce = i + 1 };
		struct sockaddr_in src = source(i);
		struct umc_sm_port *port;

		CHECK(umc_sm_port_register(sm, now, &src, umc_sm_host_key(sm, &src, NULL), &reg,
					   &port) == UMC_SM_OK);
	}
	while (off + 4 <= size) {
		uint8_t op = data[off], keep = data[off + 1] & 0x80, buf[UMC_SM_MAX_MSG + 64];
		struct sockaddr_in src = source(data[off + 1] % SOURCES);
		size_t len = get_be16(data + off + 2);
		struct umc_sm_port *port;

		off += 4;
		if (len > size - off)
			len = size - off;
		if (len > sizeof(buf))
			len = sizeof(buf);
		memcpy(buf, data + off, len); /* the handler may not rely on the input staying put */
		off += len;
		port = umc_sm_port_by_ep(sm, &src);
		if ((op & 1) && port && len >= UMC_SM_HDR_LEN) {
			put_be64(buf + 8, sm->epoch);
			put_be16(buf + 16, port->lid);
		}
		umc_sm_handle(sm, now, &src, NULL, buf, len);
		while (!keep && umc_sm_work(sm, now))
			;
		if (op >> 1) {
			now += (uint64_t)(op >> 1) * 50;
			umc_sm_tick(sm, now, now);
		}
		check_state(sm);
		check_hosts(sm);
	}
	umc_sm_destroy(sm);
	return 0;
}
