/* SPDX-License-Identifier: MIT */
/*
 * test_sm_util.h - helpers for the umc-sm unit tests: a state with
 * registered ports, SA MAD builders, reply decoding.  Header-only, one
 * copy per test program.
 */
#ifndef TEST_SM_UTIL_H
#define TEST_SM_UTIL_H

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "wire/ib_mad.h"
#include "sa_mad_util.h"

enum { TEST_PORTS = 4, TEST_EPOCH = 0x1234 };

struct captured {
	struct sockaddr_in to;
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t len;
};

struct fx {
	struct umc_sm *sm;
	struct umc_sm_port *port[TEST_PORTS]; /* LIDs 2, 3, 4, 5 */
	struct captured *out;		      /* datagrams the state sent */
	size_t nout, capout;
	uint64_t now;
};

static inline void fx_capture(void *ctx, const struct sockaddr_in *to, const uint8_t *buf, size_t len)
{
	struct fx *f = ctx;

	if (f->nout == f->capout) {
		f->capout = f->capout ? f->capout * 2 : 64;
		f->out = realloc(f->out, f->capout * sizeof(*f->out));
		assert_non_null(f->out);
	}
	f->out[f->nout].to = *to;
	memcpy(f->out[f->nout].buf, buf, len);
	f->out[f->nout].len = len;
	f->nout++;
}

static inline struct sockaddr_in fx_ep(unsigned i)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)(40000 + i));
	return a;
}

/*
 * The source host of endpoint 127.0.0.1:40000 + i (fx_ep(i)): user i / 100,
 * so the fixture's ports are all of user 0 and fx_ep(100..199) of user 1.
 */
static inline uint64_t fx_source(void *ctx, const struct sockaddr_in *src,
				 const struct sockaddr_in *dst)
{
	(void)ctx;
	(void)dst;
	return umc_sm_host_key_make(UMC_SM_HOST_USER, (ntohs(src->sin_port) - 40000u) / 100);
}

/* A state from @cfg (NULL: defaults) with TEST_PORTS registered ports. */
static inline struct fx *fx_new(const struct umc_sm_config *cfg)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct umc_sm_config c;
	struct umc_sm_out out = { .send = fx_capture, .source = fx_source, .ctx = f };
	unsigned i;

	assert_non_null(f);
	if (cfg)
		c = *cfg;
	else
		umc_sm_config_default(&c);
	c.epoch = TEST_EPOCH;
	f->now = 1000;
	f->sm = umc_sm_create(&c, &out);
	assert_non_null(f->sm);
	for (i = 0; i < TEST_PORTS; i++) {
		struct umc_sm_register reg = { .data_addr = 0x7f000001, .data_port = (uint16_t)(5000 + i),
					       .nonce = 100 + i };
		struct sockaddr_in ep = fx_ep(i);

		assert_int_equal(umc_sm_port_register(f->sm, f->now, &ep,
						      umc_sm_host_key(f->sm, &ep, NULL), &reg,
						      &f->port[i]),
				 UMC_SM_OK);
		assert_int_equal(f->port[i]->lid, 2 + i);
	}
	return f;
}

static inline void fx_free(struct fx *f)
{
	umc_sm_destroy(f->sm);
	free(f->out);
	free(f);
}

/* GID 0 of test port @i. */
static inline void fx_gid(const struct fx *f, unsigned i, uint8_t gid[16])
{
	umc_sm_port_gid(f->sm, f->port[i], gid);
}

static inline void gid_parse(const char *s, uint8_t gid[16])
{
	assert_int_equal(sa_gid_parse(s, gid), 1);
}

#define mad_build sa_mad_build

struct sa_res {
	enum umc_sm_sa_reply_kind kind;
	struct umc_sa_hdr h;
	struct umc_mcmember rec; /* first record */
	uint32_t nrecords;
	const uint8_t *table;
	uint8_t mad[UMC_MAD_SIZE];
};

/* Run @mad from test port @i through the SA and decode the reply. */
static inline struct sa_res fx_sa(struct fx *f, unsigned i, const uint8_t *mad)
{
	struct umc_sm_sa_reply r;
	struct sa_res res;

	memset(&res, 0, sizeof(res));
	umc_sm_sa_process(f->sm, f->port[i], mad, f->now, &r);
	res.kind = r.kind;
	if (r.kind == UMC_SM_SA_NO_REPLY)
		return res;
	memcpy(res.mad, r.mad, UMC_MAD_SIZE);
	assert_int_equal(umc_sa_hdr_decode(r.mad, UMC_MAD_SIZE, &res.h), 0);
	if (r.kind == UMC_SM_SA_REPLY_TABLE) {
		res.nrecords = r.nrecords;
		res.table = r.table;
		if (r.nrecords)
			umc_mcmember_decode(r.table, &res.rec);
	} else {
		umc_mcmember_decode(r.mad + UMC_SA_HDR_LEN, &res.rec);
	}
	return res;
}

/* A record for MGID @mgid joined by test port @i with @js, the kernel's create values. */
static inline struct umc_mcmember fx_rec(const struct fx *f, unsigned i, const char *mgid, uint8_t js)
{
	struct umc_mcmember r;
	uint8_t m[16], pg[16];

	if (mgid)
		gid_parse(mgid, m);
	fx_gid(f, i, pg);
	sa_rec_init(&r, mgid ? m : NULL, pg, js);
	return r;
}

/* An MCMemberRecord request with @rec from port @i, mask @comp and SM_Key @key: the reply. */
static inline struct sa_res fx_mcm_key(struct fx *f, unsigned i, uint8_t method, uint64_t comp,
				       uint64_t key, const struct umc_mcmember *rec)
{
	uint8_t mad[UMC_MAD_SIZE];

	mad_build(mad, method, UMC_SA_ATTR_MCMEMBER_RECORD, comp, key, rec);
	return fx_sa(f, i, mad);
}

/* SubnAdmSet or SubnAdmDelete of @rec from port @i with mask @comp, untrusted: the reply. */
static inline struct sa_res fx_mcm(struct fx *f, unsigned i, uint8_t method, uint64_t comp,
			    const struct umc_mcmember *rec)
{
	return fx_mcm_key(f, i, method, comp, 0, rec);
}

/* Status of a Set of @mgid with @js and the create mask from port @i. */
static inline uint16_t fx_join(struct fx *f, unsigned i, const char *mgid, uint8_t js)
{
	struct umc_mcmember r = fx_rec(f, i, mgid, js);
	struct sa_res res = fx_mcm(f, i, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, &r);

	assert_int_equal(res.kind, UMC_SM_SA_REPLY_MAD);
	return res.h.mad.status;
}

static inline uint16_t fx_leave(struct fx *f, unsigned i, const char *mgid, uint8_t js)
{
	struct umc_mcmember r = fx_rec(f, i, mgid, js);
	struct sa_res res = fx_mcm(f, i, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, &r);

	assert_int_equal(res.kind, UMC_SM_SA_REPLY_MAD);
	return res.h.mad.status;
}

/* Trusted (SM_Key = umc-sm's) Get, from port 0, of port @j's membership of @mgid. */
static inline struct sa_res fx_member_get(struct fx *f, const char *mgid, unsigned j)
{
	struct umc_mcmember r = fx_rec(f, j, mgid, 0);
	uint8_t mad[UMC_MAD_SIZE];
	struct sa_res res;

	mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		  UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, f->sm->cfg.sm_key, &r);
	res = fx_sa(f, 0, mad);
	assert_int_equal(res.kind, UMC_SM_SA_REPLY_MAD);
	return res;
}

/* fx_member_get(): the JoinState, or -status. */
static inline int fx_member_state(struct fx *f, const char *mgid, unsigned j)
{
	struct sa_res res = fx_member_get(f, mgid, j);

	return res.h.mad.status ? -(int)res.h.mad.status : res.rec.join_state;
}

#endif /* TEST_SM_UTIL_H */
