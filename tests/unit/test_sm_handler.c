// SPDX-License-Identifier: MIT
/*
 * test_sm_handler.c - umc-sm's datagram handler and timers (sm/handler.c,
 * ports.c, rmpp.c) through umc_sm_handle(), umc_sm_work() and umc_sm_tick() on a fake
 * clock: registration (retransmission, nonce, GUIDs), UNKNOWN_PORT for
 * stale ports and epochs, leases, UNREGISTER, RESOLVE, and GetTable over
 * RMPP with loss, timeouts, BUSY and bad ACKs.
 * The protocol is the one documented in src/wire/sm_proto.h; RMPP follows
 * IBA 13.6 (src/wire/ib_rmpp.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "test_sm_util.h"
#include "wire/be.h"
#include "wire/ib_rmpp.h"

static int setup(void **state)
{
	*state = fx_new(NULL);
	return 0;
}

static int teardown(void **state)
{
	fx_free(*state);
	return 0;
}

/* Hand a datagram to the state and serve whatever it made wait. */
static void deliver(struct fx *f, const struct sockaddr_in *src, const uint8_t *buf, size_t len)
{
	umc_sm_handle(f->sm, f->now, src, NULL, buf, len);
	while (umc_sm_work(f->sm, f->now))
		;
}

/* Send @m from endpoint @ep; fixture ports (ep < TEST_PORTS) get their LID and the epoch. */
static void send_from(struct fx *f, unsigned ep, struct umc_sm_msg *m)
{
	struct sockaddr_in src = fx_ep(ep);
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n;

	if (ep < TEST_PORTS && f->port[ep] && !m->hdr.lid) {
		m->hdr.lid = f->port[ep]->lid;
		m->hdr.epoch = f->sm->epoch;
	}
	n = umc_sm_msg_encode(buf, m);
	assert_true(n > 0);
	deliver(f, &src, buf, n);
}

static struct umc_sm_msg request(uint8_t type)
{
	struct umc_sm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = type;
	m.hdr.tid = 0x77;
	return m;
}

/* The @k-th datagram sent (from the start), decoded. */
static struct umc_sm_msg sent(struct fx *f, size_t k)
{
	struct umc_sm_msg m;

	assert_true(k < f->nout);
	assert_int_equal(umc_sm_msg_decode(f->out[k].buf, f->out[k].len, &m), 0);
	return m;
}

static struct umc_sm_msg last(struct fx *f)
{
	return sent(f, f->nout - 1);
}

static struct umc_sm_msg do_register(struct fx *f, unsigned ep, uint64_t nonce, uint64_t guid)
{
	struct umc_sm_msg m = request(UMC_SM_REGISTER);

	m.reg.nonce = nonce;
	m.reg.port_guid = guid;
	m.reg.data_addr = 0x0a000001;
	m.reg.data_port = 7000;
	send_from(f, ep, &m);
	return last(f);
}

static void test_register(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg r;
	struct sockaddr_in ep = fx_ep(10);

	r = do_register(f, 10, 1, 0);
	assert_int_equal(r.hdr.type, UMC_SM_REGISTER_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	assert_int_equal(r.hdr.tid, 0x77);
	assert_true(r.hdr.epoch == TEST_EPOCH);
	assert_int_equal(r.hdr.lid, 6);
	assert_int_equal(r.port.lid, 6);
	assert_true(r.port.port_guid == UMC_SM_GUID_BASE + 6);
	assert_true(r.port.subnet_prefix == UMC_SM_SUBNET_PREFIX);
	assert_int_equal(r.port.lease_ms, UMC_SM_LEASE_MS);
	assert_int_equal(f->out[f->nout - 1].to.sin_port, ep.sin_port);
	/* a retransmission: the same port */
	r = do_register(f, 10, 1, 0);
	assert_int_equal(r.port.lid, 6);
	assert_int_equal(f->sm->cnt.reg_repeat, 1);
	/* a new nonce: the old port goes, a new LID (next-fit: 6 is not reused at once) */
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::1", UMC_JOIN_FULL), 0);
	r = do_register(f, 10, 2, 0);
	assert_int_equal(r.port.lid, 7);
	assert_null(umc_sm_port_by_lid(f->sm, 6));
	assert_int_equal(f->sm->ports.count, TEST_PORTS + 1);
	/* GUIDs: asked for and free, taken, reserved */
	r = do_register(f, 11, 3, 0x1234);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	assert_true(r.port.port_guid == 0x1234);
	r = do_register(f, 12, 4, UMC_SM_GUID_BASE + 2); /* fixture port 0's */
	assert_int_equal(r.hdr.status, UMC_SM_GUID_IN_USE);
	assert_int_equal(f->out[f->nout - 1].len, UMC_SM_HDR_LEN);
	r = do_register(f, 12, 4, UMC_SM_GUID_BASE + 1); /* the SM's own */
	assert_int_equal(r.hdr.status, UMC_SM_INVALID);
	assert_int_equal(f->sm->cnt.reg_refused, 2);
	assert_int_equal(f->sm->cnt.reg_new, TEST_PORTS + 3);
}

static void test_unknown_port(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_RENEW), r;

	send_from(f, 12, &m); /* never registered */
	r = last(f);
	assert_int_equal(r.hdr.type, UMC_SM_RENEW_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_UNKNOWN_PORT);
	assert_true(r.hdr.epoch == TEST_EPOCH);
	m = request(UMC_SM_RENEW);
	m.hdr.lid = f->port[0]->lid;
	m.hdr.epoch = TEST_EPOCH + 1; /* an old epoch */
	send_from(f, 0, &m);
	assert_int_equal(last(f).hdr.status, UMC_SM_UNKNOWN_PORT);
	m.hdr.epoch = TEST_EPOCH;
	m.hdr.lid = f->port[1]->lid; /* another port's LID */
	send_from(f, 0, &m);
	assert_int_equal(last(f).hdr.status, UMC_SM_UNKNOWN_PORT);
	m = request(UMC_SM_SA); /* the same for an SA MAD */
	{
		uint8_t mad[UMC_MAD_SIZE];

		mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
		m.mad = mad;
		send_from(f, 13, &m);
	}
	r = last(f);
	assert_int_equal(r.hdr.type, UMC_SM_SA_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_UNKNOWN_PORT);
	assert_int_equal(f->out[f->nout - 1].len, UMC_SM_HDR_LEN);
	m = request(UMC_SM_RENEW);
	send_from(f, 0, &m);
	r = last(f);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	assert_int_equal(r.lease_ms, UMC_SM_LEASE_MS);
	assert_int_equal(r.hdr.lid, 2);
	assert_int_equal(f->sm->cnt.rx_unknown_port, 4);
	assert_int_equal(f->sm->cnt.renew, 1);
}

static void test_lease(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_RENEW);
	uint64_t next;

	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::1", UMC_JOIN_FULL), 0);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::1", UMC_JOIN_NON), 0);
	f->now += UMC_SM_LEASE_MS - 1;
	next = umc_sm_tick(f->sm, f->now, f->now);
	assert_true(next == 1000 + UMC_SM_LEASE_MS);
	assert_int_equal(f->sm->ports.count, TEST_PORTS);
	send_from(f, 0, &m); /* port 0 renews; the others do not */
	f->now += 2;
	next = umc_sm_tick(f->sm, f->now, f->now);
	assert_int_equal(f->sm->ports.count, 1);
	assert_int_equal(f->sm->cnt.lease_expired, 3);
	assert_true(next == f->now - 2 + UMC_SM_LEASE_MS);
	/* port 1 was the only full member: the group went, with port 0's NonMember record */
	assert_int_equal(f->port[0]->nmembers, 0);
	assert_int_equal(f->sm->groups.count, 1);
	f->port[1] = f->port[2] = f->port[3] = NULL;
	/* an SA request is life too */
	f->now += UMC_SM_LEASE_MS - 1;
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::2", UMC_JOIN_FULL), 0);
	umc_sm_port_renew(f->sm, f->port[0], f->now); /* what the handler does for it */
	f->now += 2;
	umc_sm_tick(f->sm, f->now, f->now);
	assert_int_equal(f->sm->ports.count, 1);
}

static void test_unregister(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_UNREGISTER), r;

	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::1", UMC_JOIN_FULL), 0);
	send_from(f, 1, &m);
	r = last(f);
	assert_int_equal(r.hdr.type, UMC_SM_UNREGISTER_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	assert_int_equal(r.hdr.lid, 3);
	assert_null(umc_sm_port_by_lid(f->sm, 3));
	assert_int_equal(f->sm->groups.count, 1);
	m = request(UMC_SM_RENEW);
	m.hdr.lid = 3;
	m.hdr.epoch = TEST_EPOCH;
	f->port[1] = NULL;
	send_from(f, 1, &m);
	assert_int_equal(last(f).hdr.status, UMC_SM_UNKNOWN_PORT);
}

static void test_resolve(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_RESOLVE), r;

	m.resolve_lid = 3;
	send_from(f, 0, &m);
	r = last(f);
	assert_int_equal(r.hdr.type, UMC_SM_RESOLVE_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	assert_int_equal(r.resolved.lid, 3);
	assert_int_equal(r.resolved.data_addr, 0x7f000001);
	assert_int_equal(r.resolved.data_port, 5001);
	assert_true(r.resolved.port_guid == f->port[1]->guid);
	m.resolve_lid = 99;
	send_from(f, 0, &m);
	assert_int_equal(last(f).hdr.status, UMC_SM_NOT_FOUND);
	f->port[2]->data_port = 0; /* a port without a data plane (umc-sa) */
	m.resolve_lid = 4;
	send_from(f, 0, &m);
	assert_int_equal(last(f).hdr.status, UMC_SM_NOT_FOUND);
	assert_int_equal(f->sm->cnt.resolve_ok, 1);
	assert_int_equal(f->sm->cnt.resolve_miss, 2);
}

static void test_malformed(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_RENEW);
	struct sockaddr_in src = fx_ep(0);
	uint8_t buf[UMC_SM_MAX_MSG + 1];
	size_t n, before;

	m.hdr.lid = 2;
	m.hdr.epoch = TEST_EPOCH;
	n = umc_sm_msg_encode(buf, &m);
	buf[4] = 7; /* version 7: answered BAD_VERSION */
	deliver(f, &src, buf, n);
	assert_int_equal(f->nout, 1);
	assert_int_equal(f->out[0].buf[4], 1);
	assert_int_equal(get_be16(f->out[0].buf + 6), UMC_SM_BAD_VERSION);
	before = f->nout;
	buf[4] = 1;
	deliver(f, &src, buf, n + 1); /* a byte too many */
	deliver(f, &src, buf, 3);
	buf[5] = UMC_SM_RENEW_REPLY; /* replies are not requests */
	deliver(f, &src, buf, n);
	buf[5] = 0x7f;
	deliver(f, &src, buf, n);
	buf[4] = 7; /* another version of a reply: not answered */
	buf[5] = UMC_SM_RENEW_REPLY;
	deliver(f, &src, buf, n);
	assert_int_equal(f->nout, before);
	assert_int_equal(f->sm->cnt.rx_malformed, 5);
	assert_int_equal(f->sm->cnt.rx_bad_version, 1);
	assert_int_equal(f->sm->cnt.rx_datagrams, 6);
}

/* A client side of a GetTable transfer: what the SM sent since @from is fed to @rx. */
struct rx_side {
	struct umc_rmpp_rx rx;
	size_t from;
	unsigned acks;
	int done;
	uint32_t drop; /* a segment to lose once, 0 = none */
	unsigned window;
};

static void ack(struct fx *f, const struct umc_sa_hdr *h, uint8_t type, uint32_t seg,
		uint32_t newwin)
{
	struct umc_sm_msg m = request(UMC_SM_SA);
	struct umc_sa_hdr back = *h;
	uint8_t mad[UMC_MAD_SIZE];

	back.mad.method &= 0x7f;
	umc_rmpp_ctl_encode(mad, &back, type, 0, seg, newwin);
	m.mad = mad;
	send_from(f, 0, &m);
}

/* Feed what arrived, answer with ACKs, until nothing more comes. */
static void pump(struct fx *f, struct rx_side *c)
{
	while (c->from < f->nout && !c->done) {
		struct umc_sm_msg m = sent(f, c->from++);
		struct umc_rmpp_rx_out o;
		struct umc_sa_hdr h;
		int act;

		assert_int_equal(m.hdr.type, UMC_SM_SA_REPLY);
		assert_int_equal(umc_sa_hdr_decode(m.mad, UMC_MAD_SIZE, &h), 0);
		if (h.rmpp.seg_num == c->drop) {
			c->drop = 0;
			continue;
		}
		act = umc_rmpp_rx_feed(&c->rx, m.mad, &h, c->window, 1 << 24, &o);
		assert_true(act != UMC_RMPP_RX_ABORT && act != UMC_RMPP_RX_STOP);
		if (act == UMC_RMPP_RX_ACK || act == UMC_RMPP_RX_DONE) {
			c->acks++;
			c->done = act == UMC_RMPP_RX_DONE;
			ack(f, &h, UMC_RMPP_TYPE_ACK, o.seg_num, o.newwin);
		}
	}
}

static void make_groups(struct fx *f, unsigned n)
{
	char mgid[64];
	unsigned i;

	for (i = 0; i < n; i++) {
		snprintf(mgid, sizeof(mgid), "ff12:4001:ffff::%x", 0x100 + i);
		assert_int_equal(fx_join(f, 1, mgid, UMC_JOIN_FULL), 0);
	}
}

static void get_table(struct fx *f, uint64_t tid)
{
	struct umc_sm_msg m = request(UMC_SM_SA);
	uint8_t mad[UMC_MAD_SIZE];

	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	put_be64(mad + 8, tid);
	m.mad = mad;
	send_from(f, 0, &m);
}

static void test_rmpp_transfer(void **state)
{
	struct fx *f = *state;
	struct rx_side c = { .window = 8 };
	struct umc_mcmember r;

	make_groups(f, 100); /* 101 records: 5656 bytes, 29 segments */
	c.from = f->nout;
	get_table(f, 1);
	assert_int_equal(f->nout - c.from, 1); /* a window of one to start with */
	assert_int_equal(f->sm->ntxns, 1);
	pump(f, &c);
	assert_true(c.done);
	assert_int_equal(c.rx.total, 101 * UMC_MCMEMBER_STRIDE);
	/* MGID order: ff12:4001:... before the broadcast group ff12:401b:... */
	umc_mcmember_decode(c.rx.data, &r);
	assert_int_equal(r.mlid, 0xC001);
	umc_mcmember_decode(c.rx.data + 100 * UMC_MCMEMBER_STRIDE, &r);
	assert_int_equal(r.mlid, 0xC000);
	assert_int_equal(f->sm->ntxns, 0);	/* the final ACK ended it */
	assert_int_equal(f->sm->txn_bytes, 0);
	assert_int_equal(f->sm->cnt.rmpp_segments, 29);
	assert_int_equal(c.acks, 1 + 28 / 8 + 1);
	assert_int_equal(f->sm->cnt.rmpp_resends, 0);
	umc_rmpp_rx_free(&c.rx);
}

static void test_rmpp_loss(void **state)
{
	struct fx *f = *state;
	struct rx_side c = { .window = 8, .drop = 5 };

	make_groups(f, 100);
	c.from = f->nout;
	get_table(f, 1);
	pump(f, &c); /* segment 5 lost: the ACK for 4 makes 5.. go again */
	assert_true(c.done);
	assert_int_equal(f->sm->cnt.rmpp_resends, 1);
	assert_int_equal(f->sm->ntxns, 0);
	umc_rmpp_rx_free(&c.rx);
	/* a transfer nobody ACKs: resent on the timer, then aborted */
	memset(&c, 0, sizeof(c));
	c.from = f->nout;
	get_table(f, 2);
	for (unsigned i = 0; i <= UMC_SM_RMPP_RETRIES; i++) {
		f->now += UMC_SM_RMPP_RESEND_MS;
		umc_sm_tick(f->sm, f->now, f->now);
	}
	assert_int_equal(f->sm->ntxns, 0);
	assert_int_equal(f->sm->cnt.rmpp_timeouts, 1);
	assert_int_equal(f->nout - c.from, 1 + UMC_SM_RMPP_RETRIES + 1); /* seg 1 six times, ABORT */
	{
		struct umc_sm_msg m = last(f);
		struct umc_sa_hdr h;

		umc_sa_hdr_decode(m.mad, UMC_MAD_SIZE, &h);
		assert_int_equal(h.rmpp.type, UMC_RMPP_TYPE_ABORT);
		assert_int_equal(h.rmpp.status, UMC_RMPP_STATUS_TMR);
	}
}

/* Port 0 gets all the transfers it may have, TIDs 1 up. */
static void fill_transfers(struct fx *f)
{
	uint64_t t;

	make_groups(f, 10);
	for (t = 1; t <= UMC_SM_RMPP_MAX_PER_PORT; t++)
		get_table(f, t);
	assert_int_equal(f->sm->ntxns, UMC_SM_RMPP_MAX_PER_PORT);
}

static void test_rmpp_busy_and_restart(void **state)
{
	struct fx *f = *state;
	struct umc_sa_hdr h;
	size_t before;

	fill_transfers(f);
	get_table(f, 99);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, UMC_MAD_STATUS_BUSY);
	assert_int_equal(h.mad.method, UMC_SA_METHOD_GET_TABLE_RESP);
	assert_int_equal(f->sm->cnt.sa_busy, 1);
	/* the same TID again, once the port is heard again: that transfer starts over */
	f->now += UMC_SM_BUSY_QUIET_MS;
	before = f->nout;
	get_table(f, 2);
	assert_int_equal(f->sm->ntxns, UMC_SM_RMPP_MAX_PER_PORT);
	assert_int_equal(f->nout - before, 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.rmpp.seg_num, 1);
	assert_true(h.mad.tid == 2);
	/* STOP ends one; the port going away ends the rest */
	ack(f, &h, UMC_RMPP_TYPE_STOP, 0, 0);
	assert_int_equal(f->sm->ntxns, UMC_SM_RMPP_MAX_PER_PORT - 1);
	assert_int_equal(f->sm->cnt.rmpp_aborted, 1);
	ack(f, &h, UMC_RMPP_TYPE_ABORT, 0, 0); /* nothing left with that TID */
	assert_int_equal(f->sm->cnt.rmpp_stale, 1);
	umc_sm_port_remove(f->sm, f->port[0], "test");
	f->port[0] = NULL;
	assert_int_equal(f->sm->ntxns, 0);
	assert_int_equal(f->sm->txn_bytes, 0);
}

static void test_rmpp_bad_acks(void **state)
{
	struct fx *f = *state;
	struct umc_sa_hdr h;

	make_groups(f, 10);
	get_table(f, 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	ack(f, &h, UMC_RMPP_TYPE_ACK, 2, 4); /* segment 2 was never sent */
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.rmpp.type, UMC_RMPP_TYPE_ABORT);
	assert_int_equal(h.rmpp.status, UMC_RMPP_STATUS_S2B);
	assert_int_equal(f->sm->ntxns, 0);
	get_table(f, 2);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	ack(f, &h, UMC_RMPP_TYPE_ACK, 1, 0); /* NewWindowLast below the segment */
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.rmpp.status, UMC_RMPP_STATUS_W2S);
	assert_int_equal(f->sm->ntxns, 0);
	assert_int_equal(f->sm->cnt.rmpp_aborted, 2);
}

/*
 * An ACK that makes no progress (the same SegmentNumber, the window held
 * shut) is no sign of life of the transfer: the window is resent on the
 * timer and the transfer aborted after UMC_SM_RMPP_RETRIES resends, as
 * when nothing is ACKed at all.  Else a receiver that repeats "1, window
 * 1" more often than UMC_SM_RMPP_RESEND_MS pins the transfer (and its
 * share of UMC_SM_RMPP_MAX_BYTES) for as long as it likes.
 */
static void test_rmpp_stalled_acks(void **state)
{
	struct fx *f = *state;
	struct umc_sa_hdr h;
	unsigned i;

	make_groups(f, 10);
	get_table(f, 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.rmpp.seg_num, 1);
	assert_int_equal(f->sm->ntxns, 1);
	for (i = 0; i < 4 * (UMC_SM_RMPP_RETRIES + 1); i++) {
		f->now += UMC_SM_RMPP_RESEND_MS / 2;
		ack(f, &h, UMC_RMPP_TYPE_ACK, 1, 1);
		umc_sm_tick(f->sm, f->now, f->now);
	}
	assert_int_equal(f->sm->ntxns, 0);
	assert_int_equal(f->sm->txn_bytes, 0);
	assert_int_equal(f->sm->cnt.rmpp_timeouts, 1);
	assert_int_equal(f->sm->cnt.rmpp_resends, UMC_SM_RMPP_RETRIES);
}

/*
 * A receiver that ACKs one segment at a time, each before the resend
 * timer runs out, moves the transfer on and so restarts that timer: only
 * the total time limit (--rmpp-time-limit) ends it, with ABORT status T2L
 * (IBA 13.6.3), and frees its share of UMC_SM_RMPP_MAX_BYTES.
 */
static void test_rmpp_total_time(void **state)
{
	struct fx *f = *state;
	uint64_t start = f->now;
	struct umc_sa_hdr h;
	uint32_t seg;

	make_groups(f, 400); /* 401 records: 113 segments */
	get_table(f, 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	for (seg = 1; f->sm->ntxns && seg < 113; seg++) {
		ack(f, &h, UMC_RMPP_TYPE_ACK, seg, seg + 1);
		f->now += UMC_SM_RMPP_RESEND_MS * 3 / 4;
		umc_sm_tick(f->sm, f->now, f->now);
	}
	assert_int_equal(f->sm->ntxns, 0);
	assert_int_equal(f->sm->txn_bytes, 0);
	assert_true(f->now >= start + f->sm->cfg.rmpp_time_ms);
	assert_true(f->now < start + f->sm->cfg.rmpp_time_ms + UMC_SM_RMPP_RESEND_MS);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.rmpp.type, UMC_RMPP_TYPE_ABORT);
	assert_int_equal(h.rmpp.status, UMC_RMPP_STATUS_T2L);
	assert_int_equal(f->sm->cnt.rmpp_too_long, 1);
	assert_int_equal(f->sm->cnt.rmpp_timeouts, 0);
}

/* An SA MAD from @port at endpoint @ep, handed in only. */
static void sa_only(struct fx *f, unsigned ep, const struct umc_sm_port *port, const uint8_t *mad)
{
	struct umc_sm_msg m = request(UMC_SM_SA);
	struct sockaddr_in src = fx_ep(ep);
	uint8_t buf[UMC_SM_MAX_MSG];

	m.mad = mad;
	m.hdr.lid = port->lid;
	m.hdr.epoch = f->sm->epoch;
	umc_sm_handle(f->sm, f->now, &src, NULL, buf, umc_sm_msg_encode(buf, &m));
}

/* A scanning GetTable (no MGID, no MLID) from @port at endpoint @ep, handed in only. */
static void scan_only(struct fx *f, unsigned ep, const struct umc_sm_port *port, uint64_t tid)
{
	uint8_t mad[UMC_MAD_SIZE];

	mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	put_be64(mad + 8, tid);
	sa_only(f, ep, port, mad);
}

/* A Set of @mgid as full member by fixture port @i, through the handler (no waiting). */
static void set_only(struct fx *f, unsigned i, const char *mgid)
{
	struct umc_mcmember r = fx_rec(f, i, mgid, UMC_JOIN_FULL);
	uint8_t mad[UMC_MAD_SIZE];

	mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 0, &r);
	sa_only(f, i, f->port[i], mad);
}

/* A REGISTER from endpoint @ep, handed in only (umc_sm_work() not run). */
static void register_only(struct fx *f, unsigned ep, uint64_t nonce)
{
	struct umc_sm_msg m = request(UMC_SM_REGISTER);
	struct sockaddr_in src = fx_ep(ep);
	uint8_t buf[UMC_SM_MAX_MSG];

	m.reg.nonce = nonce;
	umc_sm_handle(f->sm, f->now, &src, NULL, buf, umc_sm_msg_encode(buf, &m));
}

/*
 * What keeps registered ports alive and in their groups is answered as it
 * arrives; a REGISTER of a new port and a scanning query wait for
 * umc_sm_work(), REGISTERs and the source hosts taking turns, and a full
 * REGISTER queue drops what comes (the client sends again).
 */
static void test_what_waits(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m;
	size_t before = f->nout;
	unsigned i;

	register_only(f, 10, 1);
	scan_only(f, 0, f->port[0], 1);
	assert_int_equal(f->nout, before); /* neither answered yet */
	assert_int_equal(f->sm->cnt.deferred, 2);
	m = request(UMC_SM_RENEW);
	send_from(f, 1, &m); /* answered at once; then send_from serves what waits */
	assert_int_equal(f->nout, before + 3);
	assert_int_equal(sent(f, before).hdr.type, UMC_SM_RENEW_REPLY);
	assert_int_equal(sent(f, before + 1).hdr.type ^ sent(f, before + 2).hdr.type,
			 UMC_SM_REGISTER_REPLY ^ UMC_SM_SA_REPLY); /* one of each */
	/* a Set does not wait */
	before = f->nout;
	set_only(f, 0, "ff12:4001:ffff::1");
	assert_int_equal(f->nout, before + 1);
	before = f->nout;
	/* the REGISTER queue holds UMC_SM_DEFER_REGISTER; the next is dropped, unanswered */
	for (i = 0; i < UMC_SM_DEFER_REGISTER + 1; i++)
		register_only(f, 200 + i, 1);
	assert_int_equal(f->sm->cnt.shed_register, 1);
	assert_int_equal(f->nout, before);
	while (umc_sm_work(f->sm, f->now))
		;
	assert_int_equal(f->nout, before + UMC_SM_DEFER_REGISTER);
	assert_int_equal(f->sm->cnt.reg_new, TEST_PORTS + 1 + UMC_SM_DEFER_REGISTER);
}

/*
 * Scanning queries wait on their source host's queue (UMC_SM_DEFER_QUERIES_PER_HOST;
 * more are answered BUSY at once) and the hosts take turns: a query of
 * another host is served second, however many of the first host's wait.
 */
static void test_hosts_take_turns(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg r = do_register(f, 100, 7, 0); /* a port of user 1 */
	struct umc_sm_port *other = umc_sm_port_by_lid(f->sm, r.port.lid);
	struct umc_sa_hdr h;
	size_t before;
	unsigned i;

	assert_true(other->host != f->port[0]->host);
	for (i = 0; i < UMC_SM_DEFER_QUERIES_PER_HOST; i++)
		scan_only(f, i % 3, f->port[i % 3], 10 + i);
	before = f->nout;
	scan_only(f, 0, f->port[0], 99); /* user 0's queue is full: BUSY now */
	assert_int_equal(f->nout, before + 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, UMC_MAD_STATUS_BUSY);
	assert_int_equal(f->sm->cnt.shed_query, 1);
	f->now += UMC_SM_BUSY_QUIET_MS; /* port 0 told BUSY: no longer muted */
	scan_only(f, 100, other, 77);
	before = f->nout;
	assert_true(umc_sm_work(f->sm, f->now));
	assert_true(umc_sm_work(f->sm, f->now));
	assert_int_equal(f->nout, before + 2);
	assert_int_equal(f->out[before + 1].to.sin_port, fx_ep(100).sin_port); /* its turn: second */
	umc_sa_hdr_decode(sent(f, before + 1).mad, UMC_MAD_SIZE, &h);
	assert_true(h.mad.tid == 77);
	/* a port that goes away takes its waiting queries with it */
	umc_sm_port_remove(f->sm, f->port[1], "test");
	f->port[1] = NULL;
	before = f->nout;
	while (umc_sm_work(f->sm, f->now))
		;
	assert_int_equal(f->nout, before + UMC_SM_DEFER_QUERIES_PER_HOST - 1 - 5);
}

/*
 * A GetTable that could need a transfer the port may not have is answered
 * BUSY at once, before any table is built; for UMC_SM_BUSY_QUIET_MS the
 * port's queries are then dropped unread, its other requests served.
 */
static void test_busy_before_building(void **state)
{
	struct fx *f = *state;
	unsigned long deferred;
	struct umc_sa_hdr h;
	size_t before;

	fill_transfers(f);
	free(f->sm->table); /* the scratch table: built again only when a table is */
	f->sm->table = NULL;
	f->sm->table_cap = 0;
	deferred = f->sm->cnt.deferred;
	before = f->nout;
	scan_only(f, 0, f->port[0], 50); /* answered during the hand-in, not later */
	assert_int_equal(f->nout, before + 1);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, UMC_MAD_STATUS_BUSY);
	assert_null(f->sm->table);
	assert_int_equal(f->sm->cnt.cap_rmpp, 1);
	assert_int_equal(f->sm->cnt.deferred, deferred); /* it did not wait */
	scan_only(f, 0, f->port[0], 51); /* muted: dropped unread */
	assert_int_equal(f->nout, before + 1);
	assert_int_equal(f->sm->cnt.shed_busy, 1);
	set_only(f, 0, "ff12:4001:ffff::1:1"); /* its Sets are not muted */
	assert_int_equal(f->nout, before + 2);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, 0);
	f->now += UMC_SM_BUSY_QUIET_MS;
	scan_only(f, 0, f->port[0], 52); /* heard again: BUSY again */
	assert_int_equal(f->nout, before + 3);
	assert_int_equal(f->sm->cnt.cap_rmpp, 2);
}

/*
 * Leases are expired only up to the time before which every datagram has
 * been read: a RENEW that arrived before the lease ended renews it, however
 * late it is handled; and a lease never ends before one renewed earlier.
 */
static void test_expiry_by_arrival(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg m = request(UMC_SM_RENEW);
	uint64_t arrived = f->now + UMC_SM_LEASE_MS - 1;

	f->now += UMC_SM_LEASE_MS + 500; /* umc-sm got round to it only now */
	umc_sm_tick(f->sm, f->now, arrived); /* read up to the RENEW's arrival: nobody expired */
	assert_int_equal(f->sm->ports.count, TEST_PORTS);
	{
		struct sockaddr_in src = fx_ep(0);
		uint8_t buf[UMC_SM_MAX_MSG];

		m.hdr.lid = f->port[0]->lid;
		m.hdr.epoch = f->sm->epoch;
		umc_sm_handle(f->sm, arrived, &src, NULL, buf, umc_sm_msg_encode(buf, &m));
	}
	umc_sm_tick(f->sm, f->now, f->now); /* all read: the other three expire */
	assert_int_equal(f->sm->ports.count, 1);
	assert_true(f->port[0]->expires == arrived + UMC_SM_LEASE_MS);
	f->port[1] = f->port[2] = f->port[3] = NULL;
	/* a later port renewed with an earlier arrival time ends its lease with the tail's */
	{
		struct umc_sm_msg r = do_register(f, 20, 9, 0);
		struct umc_sm_port *p = umc_sm_port_by_lid(f->sm, r.port.lid);

		umc_sm_port_renew(f->sm, f->port[0], f->now);
		umc_sm_port_renew(f->sm, p, f->now - 300);
		assert_true(p->expires == f->port[0]->expires);
		assert_true(f->sm->ports.lease_tail == p);
	}
}

/*
 * The caps of a source host and of a port: ports of a host
 * (--max-ports-per-host), memberships of a port and of a host
 * (--max-groups-per-port, --max-groups-per-host), GetTable transfers of a
 * host (--max-rmpp-per-host).  Another host is not affected; what is
 * freed can be taken again.
 */
static void test_caps(void **state)
{
	struct umc_sm_config cfg;
	struct fx *f;
	struct umc_sm_msg r;
	struct umc_sa_hdr h;
	unsigned i;

	(void)state;
	umc_sm_config_default(&cfg);
	cfg.max_ports_per_host = TEST_PORTS + 1;
	cfg.max_groups_per_port = 3;
	cfg.max_groups_per_host = 5;
	cfg.max_rmpp_per_host = 2;
	f = fx_new(&cfg); /* its ports: user 0 */
	assert_int_equal(do_register(f, 10, 1, 0).hdr.status, UMC_SM_OK);
	assert_int_equal(do_register(f, 11, 1, 0).hdr.status, UMC_SM_NO_RESOURCES);
	assert_int_equal(f->sm->cnt.cap_ports, 1);
	assert_int_equal(do_register(f, 100, 1, 0).hdr.status, UMC_SM_OK); /* user 1 */
	/* memberships: port 0 three, the fourth refused; then the host's fifth and sixth */
	for (i = 0; i < 3; i++) {
		char mgid[64];

		snprintf(mgid, sizeof(mgid), "ff12:4001:ffff::%x", 0x200 + i);
		assert_int_equal(fx_join(f, 0, mgid, UMC_JOIN_FULL), 0);
	}
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::2ff", UMC_JOIN_FULL),
			 UMC_SA_STATUS_NO_RESOURCES);
	assert_int_equal(fx_join(f, 0, "ff12:4001:ffff::200", UMC_JOIN_NON), 0); /* OR: no new one */
	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::200", UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::201", UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::202", UMC_JOIN_NON),
			 UMC_SA_STATUS_NO_RESOURCES);
	assert_int_equal(f->sm->cnt.cap_groups, 2);
	assert_int_equal(f->port[0]->host->members, 5);
	assert_int_equal(fx_leave(f, 1, "ff12:4001:ffff::201", UMC_JOIN_NON), 0);
	assert_int_equal(fx_join(f, 1, "ff12:4001:ffff::202", UMC_JOIN_NON), 0);
	fx_free(f);
	/* transfers: user 0's two, of any of its ports, then BUSY; user 1's still go */
	umc_sm_config_default(&cfg);
	cfg.max_rmpp_per_host = 2;
	f = fx_new(&cfg);
	make_groups(f, 100); /* 101 records: a transfer each */
	r = do_register(f, 100, 1, 0);
	scan_only(f, 0, f->port[0], 1);
	scan_only(f, 2, f->port[2], 2);
	while (umc_sm_work(f->sm, f->now))
		;
	assert_int_equal(f->sm->ntxns, 2);
	scan_only(f, 3, f->port[3], 3);
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, UMC_MAD_STATUS_BUSY);
	assert_int_equal(f->sm->cnt.cap_rmpp, 1);
	scan_only(f, 100, umc_sm_port_by_lid(f->sm, r.port.lid), 4);
	while (umc_sm_work(f->sm, f->now))
		;
	assert_int_equal(f->sm->ntxns, 3);
	fx_free(f);
}

/*
 * The LID index starts small and grows as ports come: 300 more ports each
 * get the next LID and are found by it, past the first UMC_SM_LID_SLOTS_MIN
 * slots; a LID never handed out finds nothing.
 */
static void test_many_ports(void **state)
{
	struct fx *f = *state;
	struct umc_sm_msg r = do_register(f, 100, 1, 0);
	uint16_t first = r.port.lid;

	assert_int_equal(r.hdr.status, UMC_SM_OK);
	for (unsigned i = 1; i < 300; i++) {
		r = do_register(f, 100 + i, 1, 0);
		assert_int_equal(r.hdr.status, UMC_SM_OK);
		assert_int_equal(r.port.lid, first + i);
	}
	assert_true(f->sm->ports.lid_slots > UMC_SM_LID_SLOTS_MIN);
	for (unsigned i = 0; i < 300; i++) {
		const struct umc_sm_port *p = umc_sm_port_by_lid(f->sm, (uint16_t)(first + i));
		struct sockaddr_in ep = fx_ep(100 + i);

		assert_non_null(p);
		assert_int_equal(p->ctrl.sin_port, ep.sin_port);
	}
	assert_null(umc_sm_port_by_lid(f->sm, (uint16_t)(first + 300)));
	assert_null(umc_sm_port_by_lid(f->sm, UMC_SM_MAX_UCAST_LID));
	assert_null(umc_sm_port_by_lid(f->sm, UMC_SM_MAX_UCAST_LID + 1));
	assert_int_equal(f->sm->ports.count, TEST_PORTS + 300);
}

/*
 * One lone segment: First|Last, PayloadLength 20 + records, no transfer
 * kept, but its TID remembered, so that the receiver's ACK of it is taken
 * as one and not counted stale (as every umc-sa -g's used to be).
 */
static void test_small_table(void **state)
{
	struct fx *f = *state;
	struct umc_sa_hdr h;

	get_table(f, 5); /* the broadcast group only */
	umc_sa_hdr_decode(last(f).mad, UMC_MAD_SIZE, &h);
	assert_int_equal(h.mad.status, 0);
	assert_int_equal(h.rmpp.flags, UMC_RMPP_FLAG_ACTIVE | UMC_RMPP_FLAG_FIRST | UMC_RMPP_FLAG_LAST);
	assert_int_equal(h.rmpp.paylen_newwin, 20 + UMC_MCMEMBER_STRIDE);
	assert_int_equal(h.attr_offset, 7);
	assert_int_equal(f->sm->ntxns, 0);
	/* the receiver's ACK of it is no stale ACK; the same ACK again, or one for another TID, is */
	ack(f, &h, UMC_RMPP_TYPE_ACK, 1, 1);
	assert_int_equal(f->sm->cnt.rmpp_acks, 1);
	assert_int_equal(f->sm->cnt.rmpp_stale, 0);
	ack(f, &h, UMC_RMPP_TYPE_ACK, 1, 1);
	h.mad.tid = 6;
	ack(f, &h, UMC_RMPP_TYPE_ACK, 1, 1);
	assert_int_equal(f->sm->cnt.rmpp_acks, 1);
	assert_int_equal(f->sm->cnt.rmpp_stale, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(test_register),	T(test_unknown_port), T(test_lease),
		T(test_unregister),	T(test_resolve),      T(test_malformed),
		T(test_rmpp_transfer),	T(test_rmpp_loss),    T(test_rmpp_busy_and_restart),
		T(test_rmpp_bad_acks), T(test_small_table),  T(test_many_ports),
		T(test_rmpp_stalled_acks), T(test_rmpp_total_time), T(test_what_waits),
		T(test_hosts_take_turns), T(test_busy_before_building), T(test_expiry_by_arrival),
		T(test_caps),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
