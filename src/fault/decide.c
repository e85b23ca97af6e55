// SPDX-License-Identifier: MIT
/*
 * decide.c - which rule selects a datagram, and what that rule does to it
 * (fault.h).  Pure: the same rules, seed and sequence of datagrams give
 * the same verdicts.
 */
#include <string.h>

#include "fault/fault.h"
#include "wire/be.h"

static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
static const uint8_t zero6[6];

/*
 * Is @mgid the InfiniBand MGID the RDMA CM maps an IP group to: ff1S,
 * the signature @sig (0x40 IPv4, 0x60 IPv6), 01 (RDMA_PS_UDP) or 1b,
 * any P_Key (kernel cma_set_mgid)?
 */
static bool ib_mapped(const uint8_t *mgid, uint8_t sig)
{
	return mgid[0] == 0xff && (mgid[1] & 0xf0) == 0x10 && mgid[2] == sig &&
	       (mgid[3] == 0x01 || mgid[3] == 0x1b);
}

bool umc_fault_group_match(const struct umc_fault_rule *r, const uint8_t *mgid)
{
	if (!(r->words & UMC_FW_GROUP))
		return true;
	if (!mgid)
		return false;
	if (r->group_v4)
		return (!memcmp(mgid, v4mapped, 12) && !memcmp(mgid + 12, r->group, 4)) ||
		       (ib_mapped(mgid, 0x40) && !memcmp(mgid + 6, zero6, 6) &&
			get_be32(mgid + 12) == (get_be32(r->group) & 0x0fffffff));
	return !memcmp(mgid, r->group, 16) ||
	       (ib_mapped(mgid, 0x60) && !memcmp(mgid + 6, r->group + 6, 10));
}

int umc_fault_match(const struct umc_fault_spec *spec, enum umc_fault_dir dir, const char *dev,
		    const uint8_t *mgid, uint32_t qpn)
{
	for (int i = 0; i < spec->nrules; i++) {
		const struct umc_fault_rule *r = &spec->rule[i];

		if (r->dir != dir || !umc_fault_group_match(r, mgid))
			continue;
		if ((r->words & UMC_FW_QPN) && r->qpn != qpn)
			continue;
		if ((r->words & UMC_FW_DEV) && strcmp(r->dev, dev) != 0)
			continue;
		return i;
	}
	return -1;
}

/* FNV-1a, 64 bits: a device name into the stream's seed. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

void umc_fault_stream_init(struct umc_fault_stream *s, uint64_t seed, int rule, const char *dev)
{
	memset(s, 0, sizeof(*s));
	/* One splitmix64 step mixes the three, so nearby seeds give unrelated streams. */
	s->rng = seed ^ fnv1a(dev) ^ ((uint64_t)(rule + 1) << 48);
	s->rng = umc_fault_rand(s);
}

/* True with probability @ppb parts per billion (a draw only when the rule has the action). */
static bool chance(struct umc_fault_stream *s, uint32_t ppb)
{
	return umc_fault_rand(s) % UMC_FAULT_PPB < ppb;
}

void umc_fault_decide(const struct umc_fault_rule *r, struct umc_fault_stream *s,
		      struct umc_fault_verdict *v)
{
	unsigned w = r->words;

	memset(v, 0, sizeof(*v));
	if (w & UMC_FW_REJECT) {
		v->fate = UMC_FAULT_REJECT;
		v->status = r->reject;
		return;
	}
	if (w & UMC_FW_TIMEOUT) {
		v->fate = UMC_FAULT_TIMEOUT;
		return;
	}
	s->seen++;
	if ((w & UMC_FW_DROP_NTH) && s->seen % r->drop_nth == 0) {
		v->fate = UMC_FAULT_DROP_NTH;
		return;
	}
	if (w & UMC_FW_BURST) {
		if (!s->burst_left && chance(s, r->burst))
			s->burst_left = r->burst_len;
		if (s->burst_left) {
			s->burst_left--;
			v->fate = UMC_FAULT_BURST;
			return;
		}
	}
	if ((w & UMC_FW_DROP) && chance(s, r->drop)) {
		v->fate = UMC_FAULT_DROP;
		return;
	}
	if ((w & UMC_FW_CORRUPT) && chance(s, r->corrupt)) {
		v->fate = UMC_FAULT_CORRUPT;
		return;
	}
	if (w & UMC_FW_DUP)
		v->dup = chance(s, r->dup);
	if (w & UMC_FW_REORDER) {
		if (s->hold_left) {
			v->release = --s->hold_left == 0;
		} else if (chance(s, r->reorder)) {
			v->hold = true;
			s->hold_left = r->reorder_depth;
		}
	}
	if (w & UMC_FW_DELAY)
		v->delay_us = r->delay_us;
}
