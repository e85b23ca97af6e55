/* SPDX-License-Identifier: MIT */
/*
 * fault.h - injected faults: the rules of a SPEC (spec.c) and what one
 * rule decides for one datagram or SA request (decide.c).  Pure: no I/O,
 * no clock, no global state, so that a SPEC and a seed give the same
 * decisions in every run (umc-faults(7)).
 *
 * A SPEC is a ';'-separated list of rules.  A rule says where it acts (rx:
 * datagrams this process receives; tx: datagrams it sends; sa: its SA
 * joins on the InfiniBand link), which datagrams it selects (group=, qpn=,
 * dev=) and what happens to them (drop=, drop_nth=, burst=, dup=,
 * reorder=, delay=, corrupt=; for sa: reject=, timeout, drop=, drop_nth=).
 * "seed=N" anywhere makes every random choice repeatable.  The first rule
 * of a direction whose selection matches a datagram decides for it.
 *
 * Probabilities are kept as parts per billion, so that a SPEC's numbers
 * are exact (nine decimal digits at most) and a draw is an integer
 * comparison.  The random numbers are splitmix64 (Steele, Lea and Flood,
 * "Fast splittable pseudorandom number generators", OOPSLA 2014), one
 * stream per rule and device (struct umc_fault_stream).
 */
#ifndef UMC_FAULT_H
#define UMC_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	UMC_FAULT_MAX_RULES = 16,	/* rules in one SPEC */
	UMC_FAULT_SPEC_MAX = 4095,	/* bytes of a SPEC */
	UMC_FAULT_ERR_MAX = 256,	/* bytes of a parse error, NUL included */
	UMC_FAULT_DEV_MAX = 64,		/* a device name, NUL included (IBV_SYSFS_NAME_MAX) */
	UMC_FAULT_PPB = 1000000000,	/* probability 1, in parts per billion */
	UMC_FAULT_MAX_LEN = 1000000,	/* burst=P:LEN's LEN, reorder=P:DEPTH's DEPTH, drop_nth */
	UMC_FAULT_MAX_DELAY_US = 10000000, /* delay=USEC: 10 s */
	UMC_FAULT_MAX_QPN = 0xFFFFFE,	/* qpn=: 24 bits, not the multicast QPN */
};

/* Where a rule acts. */
enum umc_fault_dir {
	UMC_FAULT_RX, /* datagrams this process receives */
	UMC_FAULT_TX, /* datagrams it sends */
	UMC_FAULT_SA, /* its SA joins (MCMemberRecord Set) on the InfiniBand link */
	UMC_FAULT_NDIR
};

/* The words of a rule: selection and actions, as bits of struct umc_fault_rule.words. */
enum umc_fault_word {
	UMC_FW_GROUP = 1 << 0,
	UMC_FW_QPN = 1 << 1,
	UMC_FW_DEV = 1 << 2,
	UMC_FW_DROP = 1 << 3,
	UMC_FW_DROP_NTH = 1 << 4,
	UMC_FW_BURST = 1 << 5,
	UMC_FW_DUP = 1 << 6,
	UMC_FW_REORDER = 1 << 7,
	UMC_FW_DELAY = 1 << 8,
	UMC_FW_CORRUPT = 1 << 9,
	UMC_FW_REJECT = 1 << 10,
	UMC_FW_TIMEOUT = 1 << 11,
	UMC_FW_SELECT = UMC_FW_GROUP | UMC_FW_QPN | UMC_FW_DEV,
};

struct umc_fault_rule {
	enum umc_fault_dir dir;
	unsigned words;	   /* enum umc_fault_word: what the rule says */
	/* Selection: group=, as written: an IPv4 address (4 bytes) or an IPv6 one or MGID. */
	bool group_v4;
	uint8_t group[16]; /* 4 bytes used when group_v4 */
	uint32_t qpn;	   /* qpn= */
	char dev[UMC_FAULT_DEV_MAX]; /* dev= */
	/* Actions; probabilities in parts per billion. */
	uint32_t drop;	   /* drop=P */
	uint32_t drop_nth; /* drop_nth=N: the Nth, 2Nth, ... matching datagram */
	uint32_t burst;	   /* burst=P:LEN: a burst starts with probability P ... */
	uint32_t burst_len; /* ... and loses LEN datagrams, this one included */
	uint32_t dup;	   /* dup=P */
	uint32_t reorder;  /* reorder=P:DEPTH: held back with probability P ... */
	uint32_t reorder_depth; /* ... until DEPTH later datagrams have passed it */
	uint32_t delay_us; /* delay=USEC */
	uint32_t corrupt;  /* corrupt=P */
	uint16_t reject;   /* reject=STATUS: an SA MAD status, not 0 */
};

struct umc_fault_spec {
	int nrules;
	bool has_seed;
	uint64_t seed;	/* seed=N; otherwise the caller's choice (a random one) */
	struct umc_fault_rule rule[UMC_FAULT_MAX_RULES];
};

/**
 * umc_fault_spec_parse - parse SPEC text.
 * @text: the SPEC, NUL-terminated; "" (or only blanks and ';') is no rule
 * @spec: the rules, written only on success
 * @err:  on failure, one line (no newline) saying where and why:
 *        "column 14 (\"drop=1.5\"): a probability is a decimal number from
 *        0 to 1"; at most UMC_FAULT_ERR_MAX bytes with the NUL
 *
 * The grammar and every word are in umc-faults(7).
 *
 * Context: pure; any thread.
 * Returns: 0, or -EINVAL (a malformed SPEC, *@err says why), -E2BIG (longer
 * than UMC_FAULT_SPEC_MAX bytes, or more than UMC_FAULT_MAX_RULES rules).
 */
int umc_fault_spec_parse(const char *text, struct umc_fault_spec *spec,
			 char err[UMC_FAULT_ERR_MAX]);

/**
 * umc_fault_spec_format - the SPEC's canonical text: what parses back to
 * the same rules (the seed first, when it was given, or always when
 * @seed_always).
 * @spec: the rules
 * @seed_always: write "seed=N" even when the SPEC did not give one
 * @buf, @size: where; always NUL-terminated when @size > 0
 *
 * Returns: the length of the whole text (as snprintf(3): larger than or
 * equal to @size means it was cut).
 */
size_t umc_fault_spec_format(const struct umc_fault_spec *spec, bool seed_always, char *buf,
			     size_t size);

/**
 * umc_fault_sa_status - the MAD status a reject= word names: a number
 * (0x0200, 512) or one of the SA's names (IBA 15.2.1.1: no_resources,
 * req_invalid, no_records, too_many_records, invalid_gid,
 * insufficient_components, denied).
 * Returns: the status, or 0 when @s names none (or names 0).
 */
uint16_t umc_fault_sa_status(const char *s, size_t len);

/**
 * umc_fault_group_match - does @mgid belong to group= of @r?
 *
 * An MGID or IPv6 address matches that MGID, and on InfiniBand the MGID
 * the RDMA CM maps it to (ff1S:601b:PPPP + its bytes 6..15); an IPv4
 * address a.b.c.d matches the RoCEv2 MGID ::ffff:a.b.c.d and the
 * InfiniBand ff1S:401b:PPPP::(a.b.c.d & 0x0fffffff) (kernel
 * cma_set_mgid, ip_ib_mc_map), whatever the scope S and P_Key PPPP.
 * A rule with no group= matches every datagram, @mgid NULL (not a group's
 * datagram) included.
 */
bool umc_fault_group_match(const struct umc_fault_rule *r, const uint8_t *mgid);

/**
 * umc_fault_match - the first rule of @spec for direction @dir that
 * selects a datagram (or an SA join) of device @dev, group @mgid (NULL:
 * unicast) and QP @qpn (rx: the receiving QP; tx: the sending one; sa: 0).
 * Returns: its index, or -1.
 */
int umc_fault_match(const struct umc_fault_spec *spec, enum umc_fault_dir dir, const char *dev,
		    const uint8_t *mgid, uint32_t qpn);

/* A rule's state on one device: its random numbers and its counts. */
struct umc_fault_stream {
	uint64_t rng;	     /* splitmix64 state */
	uint64_t seen;	     /* matching datagrams so far (drop_nth) */
	uint32_t burst_left; /* datagrams the loss burst under way still takes */
	uint32_t hold_left;  /* reorder: datagrams still to pass the held one; 0: none held */
};

/**
 * umc_fault_stream_init - the stream of rule number @rule on device @dev,
 * for @seed: the same three give the same stream in every run.
 */
void umc_fault_stream_init(struct umc_fault_stream *s, uint64_t seed, int rule, const char *dev);

/* splitmix64's next number. */
static inline uint64_t umc_fault_rand(struct umc_fault_stream *s)
{
	uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* What became of a datagram, and which counter says so. */
enum umc_fault_fate {
	UMC_FAULT_PASS,	    /* passed on (perhaps duplicated, held or delayed) */
	UMC_FAULT_DROP,	    /* lost by drop= */
	UMC_FAULT_DROP_NTH, /* lost by drop_nth= */
	UMC_FAULT_BURST,    /* lost in a loss burst */
	UMC_FAULT_CORRUPT,  /* a bit flipped: sent so (tx), lost as a bad ICRC (rx) */
	UMC_FAULT_REJECT,   /* sa: the join's response carries status reject= */
	UMC_FAULT_TIMEOUT,  /* sa: the SA never answers the join */
};

struct umc_fault_verdict {
	enum umc_fault_fate fate;
	bool dup;	   /* PASS: pass it on twice */
	bool hold;	   /* PASS: hold it back (reorder) until a later verdict releases it */
	bool release;	   /* PASS: the datagram this rule holds goes right after this one */
	uint32_t delay_us; /* PASS: pass it on this much later */
	uint16_t status;   /* REJECT: the MAD status */
};

/**
 * umc_fault_decide - what rule @r does to the next datagram it selects.
 * @r: the rule
 * @s: its stream on the datagram's device (advanced)
 * @v: the verdict
 *
 * The actions are looked at in this order, each drawing its random number
 * only when the rule has it: drop_nth, burst, drop, corrupt (any of them
 * ends it), then dup, then reorder, then delay.  A datagram held back by
 * reorder= is released right after the DEPTH-th later datagram the rule
 * passes on; while it is held no other is held.  An sa rule decides once
 * per request sent (its resends included) for drop= and drop_nth=, and
 * says REJECT or TIMEOUT for every join.
 */
void umc_fault_decide(const struct umc_fault_rule *r, struct umc_fault_stream *s,
		      struct umc_fault_verdict *v);

#endif /* UMC_FAULT_H */
