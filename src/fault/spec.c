// SPDX-License-Identifier: MIT
/*
 * spec.c - the SPEC grammar of injected faults: parse it into rules, and
 * write rules back as canonical text (fault.h; umc-faults(7)).
 *
 *   SPEC  = RULE *( ";" RULE )              an empty RULE is skipped
 *   RULE  = DIR *( BLANK WORD ) | SEED *( BLANK SEED )
 *   DIR   = "rx" | "tx" | "sa"
 *   WORD  = KEY "=" VALUE | "timeout" | SEED
 *   SEED  = "seed=" NUMBER
 *   BLANK = 1*( SP | HTAB | LF | CR )
 *
 * A number is decimal or 0x-hexadecimal; a probability is a decimal
 * fraction from 0 to 1 with at most nine digits after the point (parsed
 * here, not by strtod(3), whose decimal point is the locale's).  Every
 * error names the column (1-based byte) of the word that is wrong.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fault/fault.h"
#include "wire/ib_mad.h"

/* Where each word may appear: bits 1 << enum umc_fault_dir. */
enum {
	RX = 1 << UMC_FAULT_RX,
	TX = 1 << UMC_FAULT_TX,
	SA = 1 << UMC_FAULT_SA,
};

enum value_kind { V_GROUP, V_QPN, V_DEV, V_PROB, V_COUNT, V_PROB_COUNT, V_USEC, V_STATUS, V_NONE };

static const struct key {
	const char *name;
	unsigned word;
	unsigned dirs;
	enum value_kind kind;
} keys[] = {
	{"group", UMC_FW_GROUP, RX | TX | SA, V_GROUP},
	{"qpn", UMC_FW_QPN, RX | TX, V_QPN},
	{"dev", UMC_FW_DEV, RX | TX | SA, V_DEV},
	{"drop", UMC_FW_DROP, RX | TX | SA, V_PROB},
	{"drop_nth", UMC_FW_DROP_NTH, RX | TX | SA, V_COUNT},
	{"burst", UMC_FW_BURST, RX | TX, V_PROB_COUNT},
	{"dup", UMC_FW_DUP, RX | TX, V_PROB},
	{"reorder", UMC_FW_REORDER, RX | TX, V_PROB_COUNT},
	{"delay", UMC_FW_DELAY, RX | TX, V_USEC},
	{"corrupt", UMC_FW_CORRUPT, RX | TX, V_PROB},
	{"reject", UMC_FW_REJECT, SA, V_STATUS},
	{"timeout", UMC_FW_TIMEOUT, SA, V_NONE},
};

static const char *const dir_names[UMC_FAULT_NDIR] = {"rx", "tx", "sa"};

static const struct {
	const char *name;
	uint16_t status;
} sa_statuses[] = {
	{"no_resources", UMC_SA_STATUS_NO_RESOURCES},
	{"req_invalid", UMC_SA_STATUS_REQ_INVALID},
	{"no_records", UMC_SA_STATUS_NO_RECORDS},
	{"too_many_records", UMC_SA_STATUS_TOO_MANY_RECORDS},
	{"invalid_gid", UMC_SA_STATUS_INVALID_GID},
	{"insufficient_components", UMC_SA_STATUS_INSUF_COMPS},
	{"denied", UMC_SA_STATUS_DENIED},
};

/* The text being parsed and where the error goes. */
struct parser {
	const char *text;
	char *err;
};

/* A word of the text: [at, at + len). */
struct word {
	size_t at, len;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, struct word w,
						      const char *why, ...)
{
	int n = snprintf(p->err, UMC_FAULT_ERR_MAX, "column %zu (\"%.*s%s\"): ", w.at + 1,
			 w.len > 40 ? 37 : (int)w.len, p->text + w.at, w.len > 40 ? "..." : "");
	va_list ap;

	va_start(ap, why);
	if (n >= 0 && n < UMC_FAULT_ERR_MAX)
		vsnprintf(p->err + n, UMC_FAULT_ERR_MAX - (size_t)n, why, ap);
	va_end(ap);
	return -EINVAL;
}

static bool word_is(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* An unsigned number, decimal or 0x-hex, at most @max.  Returns false if not. */
static bool parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		len -= 2;
	}
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned d;

		if (s[i] >= '0' && s[i] <= '9')
			d = (unsigned)(s[i] - '0');
		else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
			d = (unsigned)(s[i] - 'a' + 10);
		else if (base == 16 && s[i] >= 'A' && s[i] <= 'F')
			d = (unsigned)(s[i] - 'A' + 10);
		else
			return false;
		if (v > (max - d) / base)
			return false;
		v = v * base + d;
	}
	*out = v;
	return true;
}

/* A probability: DIGITS [ "." DIGITS ] from 0 to 1, nine fraction digits at most, in ppb. */
static bool parse_prob(const char *s, size_t len, uint32_t *ppb)
{
	uint64_t whole = 0, frac = 0;
	size_t i = 0, nfrac = 0;

	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		whole = whole * 10 + (uint64_t)(s[i] - '0');
		if (whole > 1)
			return false;
	}
	if (i == 0 && (i == len || s[i] != '.'))
		return false;
	if (i < len) {
		if (s[i++] != '.' || i == len)
			return false;
		for (; i < len; i++, nfrac++) {
			if (s[i] < '0' || s[i] > '9' || nfrac == 9)
				return false;
			frac = frac * 10 + (uint64_t)(s[i] - '0');
		}
	}
	for (; nfrac < 9; nfrac++)
		frac *= 10;
	if (whole == 1 && frac)
		return false;
	*ppb = (uint32_t)(whole * UMC_FAULT_PPB + frac);
	return true;
}

uint16_t umc_fault_sa_status(const char *s, size_t len)
{
	uint64_t v;

	for (size_t i = 0; i < sizeof(sa_statuses) / sizeof(sa_statuses[0]); i++)
		if (word_is(s, len, sa_statuses[i].name))
			return sa_statuses[i].status;
	return parse_uint(s, len, 0xffff, &v) ? (uint16_t)v : 0;
}

/* group=: a multicast IPv4 address, or an IPv6 multicast address or MGID. */
static bool parse_group(const char *s, size_t len, struct umc_fault_rule *r)
{
	char buf[INET6_ADDRSTRLEN];

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (inet_pton(AF_INET, buf, r->group) == 1) {
		r->group_v4 = true;
		return (r->group[0] & 0xf0) == 0xe0;
	}
	if (inet_pton(AF_INET6, buf, r->group) != 1)
		return false;
	r->group_v4 = false;
	return r->group[0] == 0xff;
}

static bool parse_dev(const char *s, size_t len, char *dev)
{
	if (!len || len >= UMC_FAULT_DEV_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.'))
			return false;
	memcpy(dev, s, len);
	dev[len] = 0;
	return true;
}

/* "P:N": a probability and a count from 1 to UMC_FAULT_MAX_LEN. */
static bool parse_prob_count(const char *s, size_t len, uint32_t *ppb, uint32_t *n)
{
	const char *colon = memchr(s, ':', len);
	uint64_t v;

	if (!colon || !parse_prob(s, (size_t)(colon - s), ppb))
		return false;
	len -= (size_t)(colon - s) + 1;
	if (!parse_uint(colon + 1, len, UMC_FAULT_MAX_LEN, &v) || !v)
		return false;
	*n = (uint32_t)v;
	return true;
}

/* The value of key @k in word @w (the value at @v, @vlen bytes) into @r. */
static int parse_value(struct parser *p, struct word w, const struct key *k, const char *v,
		       size_t vlen, struct umc_fault_rule *r)
{
	uint64_t n;

	switch (k->kind) {
	case V_GROUP:
		if (!parse_group(v, vlen, r))
			return fail(p, w, "group= is a multicast address: IPv4 (224.0.0.0/4), "
					  "IPv6 or an MGID (ff00::/8)");
		break;
	case V_QPN:
		if (!parse_uint(v, vlen, UMC_FAULT_MAX_QPN, &n))
			return fail(p, w, "qpn= is a QP number from 0 to 0xfffffe");
		r->qpn = (uint32_t)n;
		break;
	case V_DEV:
		if (!parse_dev(v, vlen, r->dev))
			return fail(p, w, "dev= is a device name such as umc_lo or umc_ib0 "
					  "(letters, digits, '_', '-', '.'; at most %d)",
				    UMC_FAULT_DEV_MAX - 1);
		break;
	case V_PROB: {
		uint32_t *dst = k->word == UMC_FW_DROP ? &r->drop
				: k->word == UMC_FW_DUP ? &r->dup
							: &r->corrupt;

		if (!parse_prob(v, vlen, dst))
			return fail(p, w, "a probability is a decimal number from 0 to 1, "
					  "at most 9 digits after the point");
		break;
	}
	case V_COUNT:
		if (!parse_uint(v, vlen, UMC_FAULT_MAX_LEN, &n) || !n)
			return fail(p, w, "drop_nth= is a count from 1 to %d", UMC_FAULT_MAX_LEN);
		r->drop_nth = (uint32_t)n;
		break;
	case V_PROB_COUNT: {
		bool burst = k->word == UMC_FW_BURST;

		if (!parse_prob_count(v, vlen, burst ? &r->burst : &r->reorder,
				      burst ? &r->burst_len : &r->reorder_depth))
			return fail(p, w, "%s is P:%s, a probability from 0 to 1 and a count "
					  "from 1 to %d",
				    burst ? "burst=" : "reorder=", burst ? "LEN" : "DEPTH",
				    UMC_FAULT_MAX_LEN);
		break;
	}
	case V_USEC:
		if (!parse_uint(v, vlen, UMC_FAULT_MAX_DELAY_US, &n) || !n)
			return fail(p, w, "delay= is microseconds, from 1 to %d",
				    UMC_FAULT_MAX_DELAY_US);
		r->delay_us = (uint32_t)n;
		break;
	case V_STATUS:
		r->reject = umc_fault_sa_status(v, vlen);
		if (!r->reject)
			return fail(p, w, "reject= is a MAD status other than 0 (0x0200, 512) or "
					  "no_resources, req_invalid, no_records, too_many_records, "
					  "invalid_gid, insufficient_components, denied");
		break;
	case V_NONE:
		break;
	}
	return 0;
}

static int parse_seed(struct parser *p, struct word w, struct umc_fault_spec *spec)
{
	const char *s = p->text + w.at + 5;

	if (spec->has_seed)
		return fail(p, w, "seed= is given twice");
	if (!parse_uint(s, w.len - 5, UINT64_MAX, &spec->seed))
		return fail(p, w, "seed= is a number from 0 to 2^64-1");
	spec->has_seed = true;
	return 0;
}

static bool is_seed(const struct parser *p, struct word w)
{
	return w.len >= 5 && memcmp(p->text + w.at, "seed=", 5) == 0;
}

/* One word of a rule that started with rx, tx or sa. */
static int parse_word(struct parser *p, struct word w, struct umc_fault_rule *r,
		      struct umc_fault_spec *spec)
{
	const char *s = p->text + w.at, *eq = memchr(s, '=', w.len);
	size_t klen = eq ? (size_t)(eq - s) : w.len;
	const struct key *k = NULL;

	if (is_seed(p, w))
		return parse_seed(p, w, spec);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (word_is(s, klen, keys[i].name))
			k = &keys[i];
	if (!k)
		return fail(p, w, "unknown word; a rule takes group=, qpn=, dev=, drop=, drop_nth=, "
				  "burst=, dup=, reorder=, delay=, corrupt=, reject=, timeout, "
				  "seed=");
	if (!(k->dirs & (1u << r->dir)))
		return fail(p, w, "%s%s is for %s rules only", k->name,
			    k->kind == V_NONE ? "" : "=", k->dirs & SA ? "sa" : "rx and tx");
	if ((k->kind == V_NONE) != !eq)
		return fail(p, w, k->kind == V_NONE ? "timeout takes no value"
						    : "expected KEY=VALUE");
	if (r->words & k->word)
		return fail(p, w, "%s is given twice in this rule", k->name);
	r->words |= k->word;
	return parse_value(p, w, k, eq + 1, w.len - klen - 1, r);
}

/* The checks of a whole rule, @w spanning it. */
static int check_rule(struct parser *p, struct word w, const struct umc_fault_rule *r)
{
	unsigned acts = r->words & ~(unsigned)UMC_FW_SELECT;

	if (!acts)
		return fail(p, w, r->dir == UMC_FAULT_SA
					  ? "the rule has no action (reject=, timeout, drop=, drop_nth=)"
					  : "the rule has no action (drop=, drop_nth=, burst=, dup=, "
					    "reorder=, delay=, corrupt=)");
	if (r->dir == UMC_FAULT_SA && (acts & (acts - 1)))
		return fail(p, w, "an sa rule takes one action: reject=, timeout, drop= or "
				  "drop_nth=");
	if ((acts & UMC_FW_REORDER) && (acts & UMC_FW_DELAY))
		return fail(p, w, "reorder= and delay= exclude each other in one rule");
	return 0;
}

/* The rule in [start, end): words separated by blanks. */
static int parse_rule(struct parser *p, size_t start, size_t end, struct umc_fault_spec *spec)
{
	struct umc_fault_rule *r = NULL;
	struct word first = {0, 0};
	size_t i = start;
	int ret;

	while (i < end) {
		struct word w;

		while (i < end && is_blank(p->text[i]))
			i++;
		if (i == end)
			break;
		w.at = i;
		while (i < end && !is_blank(p->text[i]))
			i++;
		w.len = i - w.at;
		if (!first.len) {
			first = w;
			for (int d = 0; d < UMC_FAULT_NDIR; d++) {
				if (!word_is(p->text + w.at, w.len, dir_names[d]))
					continue;
				if (spec->nrules == UMC_FAULT_MAX_RULES) {
					fail(p, w, "more than %d rules", UMC_FAULT_MAX_RULES);
					return -E2BIG;
				}
				r = &spec->rule[spec->nrules++];
				memset(r, 0, sizeof(*r));
				r->dir = (enum umc_fault_dir)d;
				break;
			}
			if (r)
				continue;
		}
		if (!r && !is_seed(p, w))
			return fail(p, w, "a rule starts with rx, tx or sa");
		ret = r ? parse_word(p, w, r, spec) : parse_seed(p, w, spec);
		if (ret)
			return ret;
	}
	if (!r)
		return 0;
	first.len = end - first.at;
	while (first.len && is_blank(p->text[first.at + first.len - 1]))
		first.len--;
	return check_rule(p, first, r);
}

int umc_fault_spec_parse(const char *text, struct umc_fault_spec *out,
			 char err[UMC_FAULT_ERR_MAX])
{
	struct umc_fault_spec spec;
	struct parser p = {.text = text, .err = err};
	size_t len = strnlen(text, UMC_FAULT_SPEC_MAX + 1), start = 0;
	int ret;

	err[0] = 0;
	if (len > UMC_FAULT_SPEC_MAX) {
		snprintf(err, UMC_FAULT_ERR_MAX, "longer than %d bytes", UMC_FAULT_SPEC_MAX);
		return -E2BIG;
	}
	spec.nrules = 0;
	spec.has_seed = false;
	spec.seed = 0;
	while (start <= len) {
		const char *semi = memchr(text + start, ';', len - start);
		size_t end = semi ? (size_t)(semi - text) : len;

		ret = parse_rule(&p, start, end, &spec);
		if (ret)
			return ret;
		start = end + 1;
	}
	memcpy(out, &spec, offsetof(struct umc_fault_spec, rule) +
				   (size_t)spec.nrules * sizeof(spec.rule[0]));
	return 0;
}

/* snprintf that keeps counting past the end of the buffer. */
struct out {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->len < o->size ? o->buf + o->len : NULL,
		      o->len < o->size ? o->size - o->len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void put_prob(struct out *o, const char *key, uint32_t ppb)
{
	char frac[12];
	int n = 9;

	if (ppb == 0 || ppb == UMC_FAULT_PPB) {
		put(o, " %s=%u", key, ppb ? 1u : 0u);
		return;
	}
	snprintf(frac, sizeof(frac), "%09u", ppb);
	while (frac[n - 1] == '0')
		n--;
	put(o, " %s=0.%.*s", key, n, frac);
}

size_t umc_fault_spec_format(const struct umc_fault_spec *spec, bool seed_always, char *buf,
			     size_t size)
{
	struct out o = {.buf = buf, .size = size};

	if (size)
		buf[0] = 0;
	if (spec->has_seed || seed_always)
		put(&o, "seed=%llu", (unsigned long long)spec->seed);
	for (int i = 0; i < spec->nrules; i++) {
		const struct umc_fault_rule *r = &spec->rule[i];
		char addr[INET6_ADDRSTRLEN];

		put(&o, "%s%s", o.len ? "; " : "", dir_names[r->dir]);
		if (r->words & UMC_FW_GROUP) {
			inet_ntop(r->group_v4 ? AF_INET : AF_INET6, r->group, addr, sizeof(addr));
			put(&o, " group=%s", addr);
		}
		if (r->words & UMC_FW_QPN)
			put(&o, " qpn=0x%x", r->qpn);
		if (r->words & UMC_FW_DEV)
			put(&o, " dev=%s", r->dev);
		if (r->words & UMC_FW_DROP)
			put_prob(&o, "drop", r->drop);
		if (r->words & UMC_FW_DROP_NTH)
			put(&o, " drop_nth=%u", r->drop_nth);
		if (r->words & UMC_FW_BURST) {
			put_prob(&o, "burst", r->burst);
			put(&o, ":%u", r->burst_len);
		}
		if (r->words & UMC_FW_DUP)
			put_prob(&o, "dup", r->dup);
		if (r->words & UMC_FW_REORDER) {
			put_prob(&o, "reorder", r->reorder);
			put(&o, ":%u", r->reorder_depth);
		}
		if (r->words & UMC_FW_DELAY)
			put(&o, " delay=%u", r->delay_us);
		if (r->words & UMC_FW_CORRUPT)
			put_prob(&o, "corrupt", r->corrupt);
		if (r->words & UMC_FW_REJECT)
			put(&o, " reject=0x%04x", r->reject);
		if (r->words & UMC_FW_TIMEOUT)
			put(&o, " timeout");
	}
	return o.len;
}
