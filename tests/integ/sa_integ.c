// SPDX-License-Identifier: MIT
/*
 * sa_integ.c - the SA client (src/sa) against a real umc-sm process.
 *
 * Each test starts its own umc-sm on 127.0.0.1 (an ephemeral port; its
 * ready line says which) and stops it with SIGTERM, which must end it with
 * status 0; assertions on what umc-sm counted read its -v log.  Waits are
 * bounded and generous (the suite runs on a loaded machine under the
 * sanitizers); nothing waits for a fixed time to pass.  Two tests talk to
 * a fake SM on a thread instead (fake_sm_run), which sends what umc-sm
 * never does: malformed REGISTER replies, RMPP MADs in reply to a Get.
 *
 * Run one test: sa_integ <name substring>.  UMC_SM_VALGRIND=1 runs umc-sm
 * under valgrind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmocka_select.h"
#include "sa_mad_util.h"
#include "sa/sa_client.h"
#include "sm_proc.h"
#include "umc_param.h"
#include "wire/be.h"
#include "wire/ib_rmpp.h"
#include "wire/sm_proto.h"
#include "wait.h"

enum {
	WAIT_MS = 10000, /* upper bound of every wait */
	NGROUPS = 10000,
	PIPELINE = 64,
	STORM = 3000,	   /* Sets sent at once */
	STORM_CB_US = 100, /* the time each of their callbacks takes */
	SILENT = 200,	   /* requests to a stopped umc-sm */
	SILENT_MS = 300,   /* ... each with this timeout */
};

/* A pipe that the client's event callback writes one byte per event to. */
struct events {
	int fd[2];
};

static void on_event(void *ctx, enum umc_sa_event ev)
{
	struct events *e = ctx;
	uint8_t b = (uint8_t)ev;

	assert_int_equal(write(e->fd[1], &b, 1), 1);
}

/* The next event, or -1 after WAIT_MS. */
static int next_event(struct events *e)
{
	uint8_t b;

	if (!t_read_full(e->fd[0], &b, 1, WAIT_MS))
		return -1;
	return b;
}

static int open_client(const struct test_sm *sm, uint16_t data_port, struct events *ev,
		       struct umc_sa_client **c)
{
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS };

	test_sm_addr(sm, &a.sm);
	a.data.sin_family = AF_INET;
	a.data.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.data.sin_port = htons(data_port);
	if (ev) {
		a.event = on_event;
		a.event_ctx = ev;
	}
	return umc_sa_open(&a, c);
}

static struct umc_sa_client *client(const struct test_sm *sm, uint16_t data_port,
				    struct events *ev)
{
	struct umc_sa_client *c = NULL;

	assert_int_equal(open_client(sm, data_port, ev, &c), 0);
	return c;
}

static void start(struct test_sm *sm, const char *const *args)
{
	assert_int_equal(test_sm_start(sm, 0, args), 0);
}

static void stop(struct test_sm *sm)
{
	assert_int_equal(test_sm_stop(sm), 0);
}

static void mgid_n(uint8_t mgid[16], unsigned n)
{
	assert_int_equal(sa_gid_parse("ff12:4001:ffff::", mgid), 1);
	put_be32(mgid + 12, 0xe0000000u + n);
}

/* A synchronous MCMemberRecord request from @c's own port; returns the MAD status. */
static int mcm(struct umc_sa_client *c, uint8_t method, uint64_t comp, uint64_t sm_key,
	       const uint8_t mgid[16], uint8_t js, struct umc_sa_result *res)
{
	struct umc_sa_port_attr a;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE];
	int rc;

	umc_sa_query_port(c, &a);
	sa_rec_init(&r, mgid, a.gid, js);
	sa_mad_build(mad, method, UMC_SA_ATTR_MCMEMBER_RECORD, comp, sm_key, &r);
	rc = umc_sa_call(c, mad, 0, 2, res);
	return rc ? rc : res->status;
}

static int join(struct umc_sa_client *c, const uint8_t mgid[16], uint8_t js)
{
	struct umc_sa_result res;
	int st = mcm(c, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, 0, mgid, js, &res);

	umc_sa_result_free(&res);
	return st;
}

static int leave(struct umc_sa_client *c, const uint8_t mgid[16], uint8_t js)
{
	struct umc_sa_result res;
	int st = mcm(c, UMC_SA_METHOD_DELETE, UMC_MCM_JOIN_MASK, 0, mgid, js, &res);

	umc_sa_result_free(&res);
	return st;
}

/* Trusted Get of @other's membership of @mgid, asked by @c: its JoinState, or -status. */
static int member_state(struct umc_sa_client *c, struct umc_sa_client *other, const uint8_t mgid[16])
{
	struct umc_sa_port_attr a;
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE];
	int rc;

	umc_sa_query_port(other, &a);
	sa_rec_init(&r, mgid, a.gid, 0);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		     UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, 1, &r);
	rc = umc_sa_call(c, mad, 0, 2, &res);
	if (!rc) {
		umc_mcmember_decode(res.data, &r);
		rc = res.status ? -(int)res.status : r.join_state;
	}
	umc_sa_result_free(&res);
	return rc;
}

/* Registration hands out what query_port needs, and LIDs resolve to data endpoints. */
static void test_register(void **state)
{
	struct umc_sa_client *a, *b;
	struct umc_sa_port_attr pa, pb;
	struct sockaddr_in ep;
	struct test_sm sm;

	(void)state;
	start(&sm, NULL);
	a = client(&sm, 6001, NULL);
	b = client(&sm, 6002, NULL);
	umc_sa_query_port(a, &pa);
	umc_sa_query_port(b, &pb);
	assert_int_equal(pa.active, 1);
	assert_int_equal(pa.info.lid, 2);
	assert_int_equal(pb.info.lid, 3);
	assert_true(pa.info.port_guid != pb.info.port_guid);
	assert_true(pa.epoch == sm.epoch);
	assert_int_equal(pa.gid[0], 0xfe);
	assert_int_equal(pa.gid[1], 0x80);
	assert_int_equal(get_be64(pa.gid + 8) == pa.info.port_guid, 1);
	assert_true(pa.info.subnet_prefix == 0xfe80000000000000ULL);
	assert_int_equal(pa.info.sm_lid, 1);
	assert_int_equal(pa.info.sm_sl, 0);
	assert_int_equal(pa.info.active_mtu, 4);
	assert_int_equal(pa.info.rate, 3);
	assert_int_equal(pa.info.active_width, 2);
	assert_int_equal(pa.info.active_speed, 1);
	assert_int_equal(pa.info.pkey_count, 1);
	assert_int_equal(pa.info.pkeys[0], 0xffff);
	assert_int_equal(pa.info.lease_ms, UMC_SM_LEASE_MS);
	assert_int_equal(pa.info.mcast_base, 0xEFFFC000u);
	assert_int_equal(pa.info.mlid_base, 0xC000);
	assert_int_equal(pa.info.mlid_max, 0xFFFE);
	assert_int_equal(pa.info.data_port, 4796);
	assert_int_equal(pa.info.sm_flags & UMC_SM_FLAG_SENDONLY_FULL, UMC_SM_FLAG_SENDONLY_FULL);
	assert_int_equal(umc_sm_mlid_to_ip(&pa.info, 0xC001), 0xEFFFC001u);
	assert_int_equal(umc_sm_mlid_to_ip(&pa.info, 0xFFFE), 0xEFFFFFFEu);
	/* unicast LID resolution, cached the second time */
	assert_int_equal(umc_sa_resolve_lid(a, 3, &ep), 0);
	assert_int_equal(ntohs(ep.sin_port), 6002);
	assert_int_equal(ntohl(ep.sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(umc_sa_resolve_lid(a, 3, &ep), 0);
	assert_int_equal(umc_sa_resolve_lid(b, 2, &ep), 0);
	assert_int_equal(ntohs(ep.sin_port), 6001);
	assert_int_equal(umc_sa_resolve_lid(a, 77, &ep), -ENOENT);
	assert_int_equal(umc_sa_resolve_lid(a, 1, &ep), -ENOENT); /* the SM has no data plane */
	assert_int_equal(umc_sa_resolve_lid(a, 0xC000, &ep), -EINVAL);
	umc_sa_close(a);
	umc_sa_close(b);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "reg_new"), 2);
	assert_int_equal(test_sm_counter(&sm, "unregister"), 2);
	assert_int_equal(test_sm_counter(&sm, "resolve_ok"), 2);
	assert_int_equal(test_sm_counter(&sm, "resolve_miss"), 2);
	test_sm_free(&sm);
}

/* Nobody listening: -ECONNREFUSED; a silent peer: -ETIMEDOUT. */
/* A UDP socket bound to 127.0.0.1 on an ephemeral port; *@addr: where. */
static int loopback_socket(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	*addr = (struct sockaddr_in){ .sin_family = AF_INET,
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(fd, (void *)addr, sizeof(*addr)), 0);
	assert_int_equal(getsockname(fd, (void *)addr, &len), 0);
	return fd;
}

static void test_open_errors(void **state)
{
	struct umc_sa_open_args a = { .timeout_ms = 300 };
	struct umc_sa_client *c = NULL;
	int fd;

	(void)state;
	fd = loopback_socket(&a.sm);
	assert_int_equal(umc_sa_open(&a, &c), -ETIMEDOUT); /* it never answers */
	close(fd);
	a.timeout_ms = WAIT_MS;
	assert_int_equal(umc_sa_open(&a, &c), -ECONNREFUSED); /* now nothing is bound there */
	assert_null(c);
}

/* A fake SM: a socket on 127.0.0.1 and what it answers, on a thread of its own. */
static const struct umc_class_port_info fake_cpi = {
	.base_version = 1, .class_version = 2, .cap_mask = 0x0200, .cap_mask2 = 0x1000,
	.resp_time = 16,
};

struct fake_sm {
	int fd;
	struct sockaddr_in addr; /* the fd's */
	bool bad_register;  /* malformed and stray replies before each good one */
	bool other_version; /* the one reply to REGISTER, of another version; then it ends */
	pthread_t thread;
};

/*
 * Answer each REGISTER with a good reply (P_Key count 1, LID 9): after four
 * malformed OK replies (MTU code 40, a lease of 1 ms, P_Key count 255, no
 * body) and one of another version to another TID when f->bad_register, or instead with one of another version when
 * f->other_version, which ends it.  Answer each SA request (a Get or Set,
 * by the same TID) with an RMPP DATA segment that carries no data (First
 * and Last, PayloadLength 20: the SA header only), then an RMPP ABORT, then
 * the one GetResp MAD: fake_cpi as its data, the request's data otherwise.
 * Answer the UNREGISTER, which ends it.
 */
static void *fake_sm_run(void *arg)
{
	const struct fake_sm *f = arg;
	int fd = f->fd;
	/* Copied: @f is on the test's stack, which a failed assertion leaves. */
	bool bad_register = f->bad_register, other_version = f->other_version;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t buf[UMC_SM_MAX_MSG + 1], out[UMC_SM_MAX_MSG], mad[UMC_MAD_SIZE];
	struct umc_sa_hdr h;
	struct umc_sm_msg m, r;
	struct sockaddr_in from;
	socklen_t fl;
	ssize_t n;
	size_t len;

	while (poll(&pfd, 1, WAIT_MS) == 1) {
		fl = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), 0, (void *)&from, &fl);
		if (n < 0 || umc_sm_msg_decode(buf, (size_t)n, &m))
			continue;
		memset(&r, 0, sizeof(r));
		r.hdr.tid = m.hdr.tid;
		r.hdr.epoch = 77;
		if (m.hdr.type == UMC_SM_UNREGISTER) {
			r.hdr.type = UMC_SM_UNREGISTER_REPLY;
			len = umc_sm_msg_encode(out, &r);
			sendto(fd, out, len, 0, (void *)&from, fl);
			break;
		}
		r.hdr.lid = 9;
		if (m.hdr.type == UMC_SM_SA && !umc_sa_hdr_decode(m.mad, UMC_MAD_SIZE, &h) &&
		    !(h.mad.method & 0x80) && !h.rmpp.flags) {
			h.mad.method = UMC_MAD_METHOD_GET_RESP;
			r.hdr.type = UMC_SM_SA_REPLY;
			r.mad = mad;
			umc_rmpp_seg_encode(mad, &h, NULL, 0, 1);
			len = umc_sm_msg_encode(out, &r);
			sendto(fd, out, len, 0, (void *)&from, fl);
			umc_rmpp_ctl_encode(mad, &h, UMC_RMPP_TYPE_ABORT, UMC_RMPP_STATUS_T2L, 0, 0);
			len = umc_sm_msg_encode(out, &r);
			sendto(fd, out, len, 0, (void *)&from, fl);
			memcpy(mad, m.mad, UMC_MAD_SIZE);
			umc_sa_hdr_encode(mad, &h);
			if (h.mad.attr_id == UMC_SA_ATTR_CLASS_PORT_INFO)
				umc_cpi_encode(mad + UMC_SA_HDR_LEN, &fake_cpi);
			len = umc_sm_msg_encode(out, &r);
			sendto(fd, out, len, 0, (void *)&from, fl);
			continue;
		}
		if (m.hdr.type != UMC_SM_REGISTER)
			continue;
		r.hdr.type = UMC_SM_REGISTER_REPLY;
		r.port = (struct umc_sm_port_info){ .lid = 9, .pkey_count = 1, .pkeys = { 0xffff },
						    .lease_ms = 600000, .active_mtu = 4,
						    .max_mtu = 5, .mlid_base = 0xC000,
						    .mlid_max = 0xFFFE };
		len = umc_sm_msg_encode(out, &r);
		if (other_version) {
			out[4] = UMC_SM_PROTO_VERSION + 1;
			sendto(fd, out, len, 0, (void *)&from, fl);
			break;
		}
		if (bad_register) {
			uint8_t *body = out + UMC_SM_HDR_LEN;

			body[offsetof(struct umc_sm_wire_port_info, active_mtu)] = 40;
			sendto(fd, out, len, 0, (void *)&from, fl); /* MTU code out of range */
			body[offsetof(struct umc_sm_wire_port_info, active_mtu)] = 4;
			body[offsetof(struct umc_sm_wire_port_info, lease_ms) + 3] = 1;
			body[offsetof(struct umc_sm_wire_port_info, lease_ms) + 2] = 0;
			body[offsetof(struct umc_sm_wire_port_info, lease_ms) + 1] = 0;
			sendto(fd, out, len, 0, (void *)&from, fl); /* a lease of 1 ms */
			len = umc_sm_msg_encode(out, &r);
			body[offsetof(struct umc_sm_wire_port_info, pkey_count)] = 255;
			sendto(fd, out, len, 0, (void *)&from, fl); /* P_Key count out of range */
			sendto(fd, out, UMC_SM_HDR_LEN, 0, (void *)&from, fl); /* no body */
			r.hdr.tid++;
			len = umc_sm_msg_encode(out, &r);
			out[4] = UMC_SM_PROTO_VERSION + 1; /* another version, not our TID */
			sendto(fd, out, len, 0, (void *)&from, fl);
			r.hdr.tid--;
			len = umc_sm_msg_encode(out, &r);
		}
		sendto(fd, out, len, 0, (void *)&from, fl);
	}
	return NULL;
}

static void fake_sm_start(struct fake_sm *f, bool bad_register, bool other_version)
{
	f->fd = loopback_socket(&f->addr);
	f->bad_register = bad_register;
	f->other_version = other_version;
	assert_int_equal(pthread_create(&f->thread, NULL, fake_sm_run, f), 0);
}

static void fake_sm_stop(struct fake_sm *f)
{
	assert_int_equal(pthread_join(f->thread, NULL), 0);
	close(f->fd);
}

/* The first registration takes only a well-formed reply. */
static void test_malformed_register_reply(void **state)
{
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS };
	struct umc_sa_client *c = NULL;
	struct umc_sa_port_attr pa;
	struct fake_sm f;

	(void)state;
	fake_sm_start(&f, true, false);
	a.sm = f.addr;
	assert_int_equal(umc_sa_open(&a, &c), 0);
	umc_sa_query_port(c, &pa);
	assert_int_equal(pa.active, 1);
	assert_int_equal(pa.info.lid, 9);
	assert_int_equal(pa.info.pkey_count, 1);
	assert_int_equal(pa.info.pkeys[0], 0xffff);
	assert_int_equal(pa.info.lease_ms, 600000);
	assert_int_equal(pa.info.active_mtu, 4);
	umc_sa_close(c);
	fake_sm_stop(&f);
}

/* An SM of another protocol version answers our REGISTER: -EPROTONOSUPPORT. */
static void test_other_version_register(void **state)
{
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS };
	struct umc_sa_client *c = NULL;
	struct fake_sm f;

	(void)state;
	fake_sm_start(&f, false, true);
	a.sm = f.addr;
	assert_int_equal(umc_sa_open(&a, &c), -EPROTONOSUPPORT);
	assert_null(c);
	fake_sm_stop(&f);
}

/*
 * A Get is answered by one MAD: the client passes over an RMPP DATA segment
 * without data and an RMPP ABORT with the Get's TID, and hands over the
 * GetResp after them, with its 200 bytes of SA data.
 */
static void test_rmpp_reply_to_get(void **state)
{
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS };
	struct umc_class_port_info cpi;
	struct umc_sa_client *c = NULL;
	struct umc_sa_result res;
	uint8_t mad[UMC_MAD_SIZE];
	struct fake_sm f;

	(void)state;
	fake_sm_start(&f, false, false);
	a.sm = f.addr;
	assert_int_equal(umc_sa_open(&a, &c), 0);
	umc_sa_request_encode(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0);
	assert_int_equal(res.status, 0);
	assert_int_equal(res.mad[offsetof(struct umc_sa_mad_wire, rmpp_version)], 0);
	assert_int_equal(res.data_len, UMC_SA_DATA_LEN);
	umc_cpi_decode(res.data, &cpi);
	assert_int_equal(cpi.class_version, fake_cpi.class_version);
	assert_int_equal(cpi.cap_mask, fake_cpi.cap_mask);
	assert_int_equal(cpi.cap_mask2, fake_cpi.cap_mask2);
	assert_int_equal(cpi.resp_time, fake_cpi.resp_time);
	umc_sa_result_free(&res);
	umc_sa_close(c);
	fake_sm_stop(&f);
}

/* Create, join, OR, leave, and the group goes with its last full member. */
static void test_join_leave(void **state)
{
	struct umc_sa_client *a, *b;
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mgid[16];
	struct test_sm sm;

	(void)state;
	start(&sm, NULL);
	a = client(&sm, 6001, NULL);
	b = client(&sm, 6002, NULL);
	mgid_n(mgid, 1);
	assert_int_equal(mcm(a, UMC_MAD_METHOD_SET, UMC_MCM_CREATE_MASK, 0, mgid, UMC_JOIN_FULL, &res),
			 0);
	umc_mcmember_decode(res.data, &r);
	assert_int_equal(r.mlid, 0xC001);
	umc_sa_result_free(&res);
	assert_int_equal(join(b, mgid, UMC_JOIN_NON), 0);
	assert_int_equal(join(b, mgid, UMC_JOIN_SENDONLY_FULL), 0);
	assert_int_equal(member_state(a, b, mgid), 0xA);
	assert_int_equal(leave(b, mgid, UMC_JOIN_SENDONLY_FULL), 0);
	assert_int_equal(member_state(a, b, mgid), UMC_JOIN_NON);
	assert_int_equal(leave(a, mgid, UMC_JOIN_FULL), 0);
	assert_int_equal(member_state(a, b, mgid), -UMC_SA_STATUS_NO_RECORDS);
	/* a port deleting another port's membership is refused */
	assert_int_equal(join(a, mgid, UMC_JOIN_FULL), 0);
	assert_int_equal(join(b, mgid, UMC_JOIN_NON), 0);
	{
		struct umc_sa_port_attr pb;
		uint8_t mad[UMC_MAD_SIZE];

		umc_sa_query_port(b, &pb);
		sa_rec_init(&r, mgid, pb.gid, UMC_JOIN_NON);
		sa_mad_build(mad, UMC_SA_METHOD_DELETE, UMC_SA_ATTR_MCMEMBER_RECORD,
			     UMC_MCM_JOIN_MASK, 0, &r);
		assert_int_equal(umc_sa_call(a, mad, 0, 2, &res), 0);
		assert_int_equal(res.status, UMC_SA_STATUS_REQ_INVALID);
		umc_sa_result_free(&res);
	}
	assert_int_equal(member_state(a, b, mgid), UMC_JOIN_NON);
	umc_sa_close(a);
	umc_sa_close(b);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "groups_created"), 2);
	assert_int_equal(test_sm_counter(&sm, "groups_deleted"), 2); /* the second at close */
	test_sm_free(&sm);
}

/*
 * The SM key given in a file (--sm-key-file): requests that carry it are
 * trusted and may change another port's membership (a proxy join), those
 * without it may not (0x0700, ERR_REQ_DENIED); the default key 1 is no
 * longer trusted at all (dropped unanswered).
 */
static void test_sm_key_file(void **state)
{
	char path[] = "/tmp/umc-sm-key.XXXXXX";
	const char *const args[] = { "--sm-key-file", path, NULL };
	struct umc_sa_client *a, *b;
	struct umc_sa_port_attr pa;
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	struct test_sm sm;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0x5ec7e7\n", 9), 9);
	close(fd);
	start(&sm, args);
	unlink(path);
	a = client(&sm, 6001, NULL);
	b = client(&sm, 6002, NULL);
	mgid_n(mgid, 6);
	assert_int_equal(join(b, mgid, UMC_JOIN_FULL), 0);
	umc_sa_query_port(a, &pa); /* b proxy-joins a */
	sa_rec_init(&r, mgid, pa.gid, UMC_JOIN_NON);
	sa_mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_JOIN_MASK, 0, &r);
	assert_int_equal(umc_sa_call(b, mad, 0, 2, &res), 0);
	assert_int_equal(res.status, UMC_SA_STATUS_DENIED);
	umc_sa_result_free(&res);
	sa_mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_JOIN_MASK,
		     0x5ec7e7, &r);
	assert_int_equal(umc_sa_call(b, mad, 0, 2, &res), 0);
	assert_int_equal(res.status, 0);
	umc_sa_result_free(&res);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		     UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, 0x5ec7e7, &r);
	assert_int_equal(umc_sa_call(b, mad, 0, 2, &res), 0);
	umc_mcmember_decode(res.data, &r);
	assert_int_equal(r.join_state, UMC_JOIN_NON);
	assert_true(r.proxy_join);
	umc_sa_result_free(&res);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_MCMEMBER_RECORD,
		     UMC_MCM_COMP_MGID | UMC_MCM_COMP_PORT_GID, UMC_SM_DEFAULT_SM_KEY, &r);
	assert_int_equal(umc_sa_call(b, mad, 300, 0, &res), -ETIMEDOUT);
	umc_sa_close(a);
	umc_sa_close(b);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "sa_bad_smkey"), 1);
	test_sm_free(&sm);
}

/* Send-only full members with and without SM support. */
static void test_sendonly(void **state)
{
	const char *const no[] = { "--no-sendonly", NULL };
	struct umc_class_port_info cpi;
	struct umc_sa_port_attr pa;
	struct umc_sa_result res;
	struct umc_sa_client *c;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	struct test_sm sm;
	int pass;

	(void)state;
	mgid_n(mgid, 2);
	for (pass = 0; pass < 2; pass++) {
		start(&sm, pass ? no : NULL);
		c = client(&sm, 6001, NULL);
		sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
		assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0);
		assert_int_equal(res.status, 0);
		umc_cpi_decode(res.data, &cpi);
		umc_sa_result_free(&res);
		umc_sa_query_port(c, &pa);
		if (!pass) {
			assert_int_equal(cpi.cap_mask2 & UMC_SA_CAP2_SENDONLY_FULL,
					 UMC_SA_CAP2_SENDONLY_FULL);
			assert_int_equal(pa.info.sm_flags, UMC_SM_FLAG_SENDONLY_FULL);
			assert_int_equal(join(c, mgid, UMC_JOIN_SENDONLY_FULL), 0);
		} else {
			assert_int_equal(cpi.cap_mask2 & UMC_SA_CAP2_SENDONLY_FULL, 0);
			assert_int_equal(pa.info.sm_flags, 0);
			assert_int_equal(join(c, mgid, UMC_JOIN_SENDONLY_FULL),
					 UMC_SA_STATUS_REQ_INVALID);
			assert_int_equal(join(c, mgid, UMC_JOIN_FULL), 0);
		}
		umc_sa_close(c);
		stop(&sm);
		test_sm_free(&sm);
	}
}

/*
 * A child killed with SIGKILL loses its memberships when its lease ends.
 * The child is forked before this process opens a client: a fork taken
 * while another thread (a client's) holds an allocator lock leaves that
 * lock held in the child for good under a sanitizer's allocator.
 */
static void test_lease_expiry(void **state)
{
	const char *const lease[] = { "--lease", "300", NULL };
	struct umc_sa_client *a;
	uint8_t mgid[16], ok = 0;
	struct test_sm sm;
	uint64_t end;
	int p[2];
	pid_t pid;

	(void)state;
	mgid_n(mgid, 3);
	start(&sm, lease);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (!pid) {
		struct umc_sa_client *c;

		close(p[0]);
		if (open_client(&sm, 6002, NULL, &c) || join(c, mgid, UMC_JOIN_FULL))
			_exit(1);
		ok = 1;
		if (write(p[1], &ok, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_true(t_read_full(p[0], &ok, 1, WAIT_MS)); /* 0: the child exited without joining */
	close(p[0]);
	a = client(&sm, 6001, NULL);
	assert_int_equal(join(a, mgid, UMC_JOIN_NON), 0); /* the child's group exists */
	kill(pid, SIGKILL);
	assert_int_equal(t_reap(pid, WAIT_MS), 128 + SIGKILL);
	end = t_deadline(10 * 300); /* ten leases */
	while (member_state(a, a, mgid) == UMC_JOIN_NON && t_now_ms() < end)
		poll(NULL, 0, 20); /* polls the SA state, bounded by end */
	/* the child was the only full member: the group, and our NonMember record, went */
	assert_int_equal(member_state(a, a, mgid), -UMC_SA_STATUS_NO_RECORDS);
	umc_sa_close(a);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "lease_expired"), 1);
	assert_true(test_sm_log_has(&sm, "removed: lease expired"));
	test_sm_free(&sm);
}

/* umc-sm restarted: a new epoch, the client is told (PORT_LOST, PORT_ACTIVE), joins work again. */
static void test_restart(void **state)
{
	const char *const lease[] = { "--lease", "300", NULL };
	struct umc_sa_port_attr before, after;
	struct umc_sa_client *c;
	struct events ev;
	uint8_t mgid[16];
	struct test_sm sm, sm2;

	(void)state;
	mgid_n(mgid, 4);
	assert_int_equal(pipe(ev.fd), 0);
	start(&sm, lease);
	c = client(&sm, 6001, &ev);
	assert_int_equal(join(c, mgid, UMC_JOIN_FULL), 0);
	umc_sa_query_port(c, &before);
	stop(&sm);
	test_sm_free(&sm);
	assert_int_equal(test_sm_start(&sm2, sm.port, lease), 0);
	assert_true(sm2.epoch != sm.epoch);
	assert_int_equal(next_event(&ev), UMC_SA_EVENT_PORT_LOST);
	assert_int_equal(next_event(&ev), UMC_SA_EVENT_PORT_ACTIVE);
	umc_sa_query_port(c, &after);
	assert_int_equal(after.active, 1);
	assert_true(after.epoch == sm2.epoch);
	assert_true(after.info.port_guid == before.info.port_guid); /* asked for again */
	assert_int_equal(member_state(c, c, mgid), -UMC_SA_STATUS_NO_RECORDS);
	assert_int_equal(join(c, mgid, UMC_JOIN_FULL), 0);
	assert_int_equal(member_state(c, c, mgid), UMC_JOIN_FULL);
	umc_sa_close(c);
	stop(&sm2);
	/* the client re-registered once: told UNKNOWN_PORT, or no RENEW answered for a lease */
	assert_int_equal(test_sm_counter(&sm2, "reg_new"), 1);
	test_sm_free(&sm2);
	close(ev.fd[0]);
	close(ev.fd[1]);
}

struct pipeline {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight, done, failed;
};

static void set_done(void *ctx, int err, const struct umc_sa_reply *r)
{
	struct pipeline *p = ctx;

	pthread_mutex_lock(&p->lock);
	if (err || r->status)
		p->failed++;
	p->done++;
	p->inflight--;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* With p->lock held: the next completion comes within WAIT_MS (or a spurious wake-up). */
static void pipeline_next(struct pipeline *p)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	assert_int_equal(pthread_cond_timedwait(&p->cond, &p->lock, &ts), 0);
}

/* 10 000 groups, created PIPELINE Sets at a time, come back whole through RMPP GetTable. */
static void test_get_table_10000(void **state)
{
	const char *const per_port[] = { "--max-groups-per-port", "10000", "--max-groups-per-host",
					  "10000", NULL };
	struct pipeline p = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct umc_sa_port_attr pa;
	struct umc_sa_result res;
	struct umc_sa_client *c;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	uint64_t t0, t1, t2;
	struct test_sm sm;
	unsigned i, seen_bcast = 0;

	(void)state;
	start(&sm, per_port); /* one port joins them all: above the defaults' 8192 */
	c = client(&sm, 6001, NULL);
	umc_sa_query_port(c, &pa);
	t0 = t_now_ms();
	for (i = 0; i < NGROUPS; i++) {
		pthread_mutex_lock(&p.lock);
		while (p.inflight >= PIPELINE)
			pipeline_next(&p);
		p.inflight++;
		pthread_mutex_unlock(&p.lock);
		mgid_n(mgid, 0x1000 + i);
		sa_rec_init(&r, mgid, pa.gid, UMC_JOIN_FULL);
		sa_mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 0,
			     &r);
		assert_int_equal(umc_sa_send(c, mad, 0, 2, set_done, &p, NULL), 0);
	}
	pthread_mutex_lock(&p.lock);
	while (p.done < NGROUPS)
		pipeline_next(&p);
	pthread_mutex_unlock(&p.lock);
	t1 = t_now_ms();
	assert_int_equal(p.failed, 0);

	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0);
	t2 = t_now_ms();
	assert_int_equal(res.status, 0);
	assert_int_equal(res.data_len, (NGROUPS + 1) * UMC_MCMEMBER_STRIDE);
	for (i = 0; i < NGROUPS + 1; i++) {
		umc_mcmember_decode(res.data + (size_t)i * UMC_MCMEMBER_STRIDE, &r);
		if (r.mlid == 0xC000) {
			seen_bcast++;
			continue;
		}
		/* sorted by MGID: record i - seen_bcast is group 0x1000 + that */
		mgid_n(mgid, 0x1000 + i - seen_bcast);
		assert_memory_equal(r.mgid, mgid, 16);
		assert_int_equal(r.join_state, 0); /* untrusted */
	}
	assert_int_equal(seen_bcast, 1);
	umc_sa_result_free(&res);
	/* trusted: one record per membership, JoinState and PortGID filled */
	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 1, NULL);
	assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0);
	assert_int_equal(res.data_len, NGROUPS * UMC_MCMEMBER_STRIDE);
	umc_mcmember_decode(res.data + (NGROUPS - 1) * UMC_MCMEMBER_STRIDE, &r);
	assert_int_equal(r.join_state, UMC_JOIN_FULL);
	assert_memory_equal(r.port_gid, pa.gid, 16);
	umc_sa_result_free(&res);
	printf("# %u groups created in %llu ms (%.0f joins/s); GetTable of %u records in %llu ms\n",
	       NGROUPS, (unsigned long long)(t1 - t0), NGROUPS * 1000.0 / (double)(t1 - t0 + 1),
	       NGROUPS + 1, (unsigned long long)(t2 - t1));
	umc_sa_close(c);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "rmpp_transfers"), 2);
	assert_int_equal(test_sm_counter(&sm, "rmpp_timeouts"), 0);
	assert_int_equal(test_sm_counter(&sm, "joins"), NGROUPS);
	test_sm_free(&sm);
}

struct tally {
	pthread_mutex_t lock;
	int calls, err;
};

static void count_cb(void *ctx, int err, const struct umc_sa_reply *r)
{
	struct tally *t = ctx;

	(void)r;
	pthread_mutex_lock(&t->lock);
	t->calls++;
	t->err = err;
	pthread_mutex_unlock(&t->lock);
}

/* A wrong SM_Key gets no reply: the transaction times out; a cancelled one never calls back. */
static void test_timeout_cancel(void **state)
{
	struct tally t = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
	struct umc_sa_result res;
	struct umc_sa_client *c;
	uint8_t mad[UMC_MAD_SIZE];
	struct test_sm sm;
	uint64_t id;

	(void)state;
	start(&sm, NULL);
	c = client(&sm, 6001, NULL);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 2, NULL);
	assert_int_equal(umc_sa_call(c, mad, 300, 2, &res), -ETIMEDOUT);
	assert_int_equal(umc_sa_send(c, mad, WAIT_MS, 0, count_cb, &t, &id), 0);
	assert_int_equal(umc_sa_cancel(c, id), 0);
	assert_int_equal(umc_sa_cancel(c, id), -ENOENT);
	/* a completed transaction: cancel says so */
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 1, NULL);
	assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0);
	assert_int_equal(res.status, 0);
	umc_sa_result_free(&res);
	umc_sa_close(c); /* the cancelled one never called back, not even at close */
	assert_int_equal(t.calls, 0);
	stop(&sm);
	assert_true(test_sm_counter(&sm, "sa_bad_smkey") >= 4); /* 3 sends + the cancelled one */
	test_sm_free(&sm);
}

/* Transactions of a storm: how they ended. */
struct storm {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned done, ok, timedout;
};

static void storm_done(void *ctx, int err, const struct umc_sa_reply *r)
{
	struct storm *st = ctx;

	usleep(STORM_CB_US); /* a busy client thread: umc-sm answers faster than it reads */
	pthread_mutex_lock(&st->lock);
	st->ok += !err && !r->status;
	st->timedout += err == -ETIMEDOUT;
	st->done++;
	pthread_cond_signal(&st->cond);
	pthread_mutex_unlock(&st->lock);
}

/* Wait (bounded by WAIT_MS) until @n transactions of @st ended. */
static void storm_wait(struct storm *st, unsigned n)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_MS / 1000;
	pthread_mutex_lock(&st->lock);
	while (st->done < n)
		assert_int_equal(pthread_cond_timedwait(&st->cond, &st->lock, &ts), 0);
	pthread_mutex_unlock(&st->lock);
}

/*
 * STORM Sets at once, answered by umc-sm faster than the client's thread
 * reads (each callback takes STORM_CB_US): every one succeeds, none is
 * resent for want of room, and the kernel drops none of the responses at
 * the client's socket (issue 32, defect 6: without the window, the
 * responses overflowed it and the resends, sent together, overflowed it
 * again).
 */
static void test_window_storm(void **state)
{
	struct storm st = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct umc_sa_counters cnt;
	struct umc_sa_port_attr pa;
	struct umc_sa_client *c;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE], mgid[16];
	struct test_sm sm;
	unsigned i;

	(void)state;
	start(&sm, NULL);
	c = client(&sm, 6001, NULL);
	umc_sa_query_port(c, &pa);
	for (i = 0; i < STORM; i++) {
		mgid_n(mgid, 0x1000 + i);
		sa_rec_init(&r, mgid, pa.gid, UMC_JOIN_FULL);
		sa_mad_build(mad, UMC_MAD_METHOD_SET, UMC_SA_ATTR_MCMEMBER_RECORD, UMC_MCM_CREATE_MASK, 0,
			     &r);
		assert_int_equal(umc_sa_send(c, mad, 0, 2, storm_done, &st, NULL), 0);
	}
	storm_wait(&st, STORM);
	umc_sa_counters(c, &cnt);
	printf("# %u Sets: sent %llu, resent %llu, waited %llu, responses %llu, stale %llu, "
	       "overflow %llu\n", STORM, (unsigned long long)cnt.sent, (unsigned long long)cnt.resent,
	       (unsigned long long)cnt.waited, (unsigned long long)cnt.responses,
	       (unsigned long long)cnt.stale, (unsigned long long)cnt.rx_overflow);
	assert_int_equal(st.ok, STORM);
	assert_int_equal(cnt.sent, STORM);
	assert_int_equal(cnt.responses, STORM);
	assert_int_equal(cnt.timeouts, 0);
	assert_int_equal(cnt.rx_overflow, 0);
	assert_true(cnt.waited > 0);
	umc_sa_close(c);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "groups_created"), STORM);
	test_sm_free(&sm);
}

/*
 * A silent SA (umc-sm stopped) under SILENT requests of SILENT_MS each:
 * all end with -ETIMEDOUT, and those that waited for room in the window
 * fail within their own timeout too, without being sent window after
 * window (which would make the last one fail after SILENT / UMC_SA_WINDOW
 * timeouts).
 */
static void test_window_silent(void **state)
{
	struct storm st = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0 };
	struct umc_sa_counters cnt;
	struct umc_sa_result res;
	struct umc_sa_client *c;
	uint8_t mad[UMC_MAD_SIZE];
	struct test_sm sm;
	unsigned i;

	(void)state;
	start(&sm, NULL);
	c = client(&sm, 6001, NULL);
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	assert_int_equal(umc_sa_call(c, mad, 0, 2, &res), 0); /* the SA answered once */
	umc_sa_result_free(&res);
	assert_int_equal(kill(sm.pid, SIGSTOP), 0);
	for (i = 0; i < SILENT; i++)
		assert_int_equal(umc_sa_send(c, mad, SILENT_MS, 0, storm_done, &st, NULL), 0);
	storm_wait(&st, SILENT);
	assert_int_equal(kill(sm.pid, SIGCONT), 0);
	umc_sa_counters(c, &cnt);
	printf("# %u requests to a silent SA: sent %llu, waited %llu, timeouts %llu\n", SILENT,
	       (unsigned long long)cnt.sent - 1, (unsigned long long)cnt.waited,
	       (unsigned long long)cnt.timeouts);
	assert_int_equal(st.timedout, SILENT);
	assert_int_equal(cnt.timeouts, SILENT);
	assert_true(cnt.waited >= SILENT - UMC_SA_WINDOW);
	/* the first window, and perhaps a probe: not every request */
	assert_true(cnt.sent - 1 < SILENT / 2);
	umc_sa_close(c);
	stop(&sm);
	test_sm_free(&sm);
}

/* Send raw datagrams from an unregistered socket and from a hand-registered one. */
static int raw_socket(const struct test_sm *sm)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	test_sm_addr(sm, &a);
	assert_int_equal(connect(fd, (void *)&a, sizeof(a)), 0);
	return fd;
}

static ssize_t raw_reply(int fd, uint8_t *buf, size_t cap)
{
	if (!t_wait_fd(fd, WAIT_MS))
		return -1;
	return recv(fd, buf, cap, 0);
}

static void raw_send(int fd, const void *buf, size_t len)
{
	assert_int_equal(send(fd, buf, len, 0), (ssize_t)len);
}

/* Hostile and truncated datagrams and MADs: no crash, counted, the SM still serves. */
static void test_hostile(void **state)
{
	uint8_t buf[UMC_SM_MAX_MSG + 64], reply[UMC_SM_MAX_MSG + 1], mad[UMC_MAD_SIZE];
	struct umc_sm_msg m = { .hdr = { .type = UMC_SM_REGISTER, .tid = 7 } };
	struct umc_sa_client *c;
	struct umc_sm_msg r;
	struct test_sm sm;
	uint8_t mgid[16];
	unsigned i, j, seed = 12345;
	size_t n;
	ssize_t got;
	int fd;

	(void)state;
	start(&sm, NULL);
	fd = raw_socket(&sm);
	/* malformed: empty, short, bad magic, unknown type, wrong length, a reply */
	raw_send(fd, buf, 0);
	memset(buf, 0, sizeof(buf));
	raw_send(fd, buf, 1);
	raw_send(fd, buf, UMC_SM_HDR_LEN - 1);
	raw_send(fd, buf, UMC_SM_HDR_LEN);
	m.reg.nonce = 99;
	n = umc_sm_msg_encode(buf, &m);
	raw_send(fd, buf, n - 1);
	raw_send(fd, buf, n + 1);
	buf[5] = 0x42;
	raw_send(fd, buf, n);
	buf[5] = UMC_SM_REGISTER_REPLY;
	raw_send(fd, buf, n);
	/* another version: answered BAD_VERSION */
	buf[5] = UMC_SM_REGISTER;
	buf[4] = 2;
	raw_send(fd, buf, n);
	got = raw_reply(fd, reply, sizeof(reply));
	assert_int_equal(got, UMC_SM_HDR_LEN);
	assert_int_equal(reply[4], UMC_SM_PROTO_VERSION);
	assert_int_equal(get_be16(reply + 6), UMC_SM_BAD_VERSION);
	/* an SA MAD before registering: UNKNOWN_PORT */
	sa_mad_build(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0, 0, NULL);
	m.hdr.type = UMC_SM_SA;
	m.mad = mad;
	n = umc_sm_msg_encode(buf, &m);
	raw_send(fd, buf, n);
	got = raw_reply(fd, reply, sizeof(reply));
	assert_int_equal(umc_sm_msg_decode(reply, (size_t)got, &r), 0);
	assert_int_equal(r.hdr.type, UMC_SM_SA_REPLY);
	assert_int_equal(r.hdr.status, UMC_SM_UNKNOWN_PORT);
	assert_true(r.hdr.epoch == sm.epoch);
	/* register this socket by hand */
	memset(&m, 0, sizeof(m));
	m.hdr.type = UMC_SM_REGISTER;
	m.hdr.tid = 8;
	m.reg.nonce = 99;
	raw_send(fd, buf, umc_sm_msg_encode(buf, &m));
	got = raw_reply(fd, reply, sizeof(reply));
	assert_int_equal(umc_sm_msg_decode(reply, (size_t)got, &r), 0);
	assert_int_equal(r.hdr.status, UMC_SM_OK);
	m.hdr.lid = r.port.lid;
	m.hdr.epoch = r.hdr.epoch;
	m.hdr.type = UMC_SM_SA;
	m.mad = mad;
	/* truncated SA datagrams, and 2000 random MADs from a registered port */
	n = umc_sm_msg_encode(buf, &m);
	raw_send(fd, buf, n - 1);
	raw_send(fd, buf, UMC_SM_HDR_LEN + 1);
	for (i = 0; i < 2000; i++) {
		for (j = 0; j < UMC_MAD_SIZE; j++) {
			seed = seed * 1103515245u + 12345u;
			mad[j] = (uint8_t)(seed >> 16);
		}
		if (i % 2) { /* half of them look like SA MADs, so the rules see them */
			mad[0] = 1, mad[1] = 3, mad[2] = 2;
			mad[3] &= 0x7f;
			memset(mad + 36, 0, 8); /* SM_Key 0 */
		}
		raw_send(fd, buf, umc_sm_msg_encode(buf, &m));
	}
	/* a stale RMPP ACK, and an RMPP multi-segment request */
	sa_mad_build(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD, 0, 0, NULL);
	mad[24] = 1, mad[25] = UMC_RMPP_TYPE_ACK, mad[26] = UMC_RMPP_FLAG_ACTIVE;
	raw_send(fd, buf, umc_sm_msg_encode(buf, &m));
	mad[25] = UMC_RMPP_TYPE_DATA, mad[26] = UMC_RMPP_FLAG_ACTIVE | UMC_RMPP_FLAG_FIRST;
	raw_send(fd, buf, umc_sm_msg_encode(buf, &m));
	/* the SM still serves a client */
	c = client(&sm, 6001, NULL);
	mgid_n(mgid, 5);
	assert_int_equal(join(c, mgid, UMC_JOIN_FULL), 0);
	umc_sa_close(c);
	close(fd);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "rx_malformed"), 10);
	assert_int_equal(test_sm_counter(&sm, "rx_bad_version"), 1);
	assert_int_equal(test_sm_counter(&sm, "rx_unknown_port"), 1);
	assert_true(test_sm_counter(&sm, "sa_bad_class") > 0);
	assert_true(test_sm_counter(&sm, "sa_rejected") + test_sm_counter(&sm, "sa_unsupported") > 0);
	assert_int_equal(test_sm_counter(&sm, "rmpp_stale"), 1);
	assert_true(test_sm_counter(&sm, "sa_rmpp_bad") >= 1);
	test_sm_free(&sm);
}

/* Run umc-sa against the SM at 127.0.0.1:@port with @args; its stdout in @out; its exit status. */
static int umc_sa_at(uint16_t port, const char *args, char *out, size_t cap)
{
	const char *bin = getenv("UMC_BIN");
	char cmd[512];
	size_t len = 0, n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/umc-sa --sm 127.0.0.1:%u %s", bin ? bin : "build/bin", port,
		 args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (len + 1 < cap && (n = fread(out + len, 1, cap - 1 - len, p)) > 0)
		len += n;
	out[len] = 0;
	n = (size_t)pclose(p);
	return WIFEXITED((int)n) ? WEXITSTATUS((int)n) : -1;
}

/* umc_sa_at() against @sm. */
static int umc_sa(const struct test_sm *sm, const char *args, char *out, size_t cap)
{
	return umc_sa_at(sm->port, args, out, cap);
}

/* umc-sa -c prints the ClassPortInfo of the GetResp, not of the RMPP MADs before it. */
static void test_umc_sa_rmpp_reply(void **state)
{
	struct fake_sm f;
	char out[1024];

	(void)state;
	fake_sm_start(&f, false, false);
	assert_int_equal(umc_sa_at(ntohs(f.addr.sin_port), "-c 2>&1", out, sizeof(out)), 0);
	assert_string_equal(out, "base_version 1\nclass_version 2\ncapability_mask 0x0200\n"
				 "capability_mask2 0x00001000\nresp_time_value 16\n"
				 "send_only_full_member yes\n");
	fake_sm_stop(&f);
}

/* umc-sa's documented output (umc-sa(1)) for groups, members, one MGID, ClassPortInfo. */
static void test_umc_sa_tool(void **state)
{
	static const char bcast[] =
		"mgid ff12:401b:ffff::ffff:ffff mlid 0xc000 qkey 0x00000b1b pkey 0xffff mtu 2048 "
		"rate 10 sl 0 tclass 0 flow_label 0x00000 hop_limit 0 scope 0x2 packet_life 18\n";
	static const char group1[] =
		"mgid ff12:4001:ffff::e000:1 mlid 0xc001 qkey 0x01234567 pkey 0xffff mtu 2048 "
		"rate 10 sl 0 tclass 0 flow_label 0x00000 hop_limit 0 scope 0x0 packet_life 0\n";
	struct umc_sa_client *a, *b;
	struct umc_sa_port_attr pa, pb;
	char out[4096], want[1024], ga[64], gb[64];
	uint8_t mgid[16];
	struct test_sm sm;

	(void)state;
	start(&sm, NULL);
	a = client(&sm, 6001, NULL);
	b = client(&sm, 6002, NULL);
	mgid_n(mgid, 1);
	assert_int_equal(join(a, mgid, UMC_JOIN_FULL), 0);
	assert_int_equal(join(b, mgid, UMC_JOIN_NON), 0);
	assert_int_equal(join(b, mgid, UMC_JOIN_SENDONLY_FULL), 0);
	umc_sa_query_port(a, &pa);
	umc_sa_query_port(b, &pb);
	inet_ntop(AF_INET6, pa.gid, ga, sizeof(ga));
	inet_ntop(AF_INET6, pb.gid, gb, sizeof(gb));

	assert_int_equal(umc_sa(&sm, "-g", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s%s", group1, bcast);
	assert_string_equal(out, want);
	assert_int_equal(umc_sa(&sm, "-m --smkey 1", out, sizeof(out)), 0);
	snprintf(want, sizeof(want),
		 "mgid ff12:4001:ffff::e000:1 mlid 0xc001 port_gid %s join_state 0x1 proxy_join 0\n"
		 "mgid ff12:4001:ffff::e000:1 mlid 0xc001 port_gid %s join_state 0xa proxy_join 0\n",
		 ga, gb);
	assert_string_equal(out, want);
	assert_int_equal(umc_sa(&sm, "--mgid ff12:401b:ffff::ffff:ffff", out, sizeof(out)), 0);
	assert_string_equal(out, bcast);
	assert_int_equal(umc_sa(&sm, "--mgid ff12:4001:ffff::e000:1 --smkey 1", out, sizeof(out)),
			 0);
	assert_string_equal(out, want);
	assert_int_equal(umc_sa(&sm, "-c", out, sizeof(out)), 0);
	assert_string_equal(out, "base_version 1\nclass_version 2\ncapability_mask 0x0200\n"
				 "capability_mask2 0x00001000\nresp_time_value 16\n"
				 "send_only_full_member yes\n");
	assert_int_equal(umc_sa(&sm, "-m --smkey 2 -t 300 2>/dev/null", out, sizeof(out)), 1);
	assert_int_equal(umc_sa(&sm, "--mgid 1234::1 2>/dev/null", out, sizeof(out)), 2);
	assert_int_equal(umc_sa(&sm, "-g -c 2>/dev/null", out, sizeof(out)), 2);
	umc_sa_close(a);
	umc_sa_close(b);
	stop(&sm);
	assert_int_equal(test_sm_counter(&sm, "reg_new"), 2 + 6); /* each umc-sa is a port */
	assert_int_equal(test_sm_counter(&sm, "unregister"), 2 + 6);
	assert_int_equal(test_sm_counter(&sm, "rmpp_stale"), 0); /* the ACKs of -g and -m were due */
	test_sm_free(&sm);
}

/* ------------------------------------------------------------------------- */
/* A process of another user holding umc-sm's address (sa_trust.h).         */

enum { SQUATTER_UID = 65534 };

/* What the squatter (a child of another user) saw, in memory shared with it. */
struct squat {
	struct sockaddr_in addr; /* where it holds */
	_Atomic unsigned registers, datagrams;
	uint32_t forged_addr;	 /* what it answers a RESOLVE with */
};

/*
 * The squatter: as uid SQUATTER_UID, bind @q->addr (port 0: any), say so
 * on @ready, then count what comes, answer each REGISTER as umc-sm would,
 * and each RESOLVE with q->forged_addr, as the port's epoch and LID; until
 * killed or WAIT_MS of silence.
 */
static void squatter(struct squat *q, int ready)
{
	struct pollfd pfd = { .events = POLLIN };
	uint8_t buf[UMC_SM_MAX_MSG + 1], out[UMC_SM_MAX_MSG];
	socklen_t len = sizeof(q->addr);
	struct sockaddr_in from;
	struct umc_sm_msg m, r;
	socklen_t fl;
	ssize_t n;

	if (setgroups(0, NULL) || setgid(SQUATTER_UID) || setuid(SQUATTER_UID))
		_exit(3);
	pfd.fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (pfd.fd < 0 || bind(pfd.fd, (void *)&q->addr, sizeof(q->addr)) ||
	    getsockname(pfd.fd, (void *)&q->addr, &len) || write(ready, "r", 1) != 1)
		_exit(3);
	while (poll(&pfd, 1, WAIT_MS) == 1) {
		fl = sizeof(from);
		n = recvfrom(pfd.fd, buf, sizeof(buf), 0, (void *)&from, &fl);
		if (n < 0 || umc_sm_msg_decode(buf, (size_t)n, &m))
			continue;
		q->datagrams++;
		q->registers += m.hdr.type == UMC_SM_REGISTER;
		r = (struct umc_sm_msg){ .hdr = m.hdr };
		if (m.hdr.type == UMC_SM_REGISTER) {
			r.hdr.type = UMC_SM_REGISTER_REPLY;
			r.hdr.epoch = 77;
			r.port = (struct umc_sm_port_info){ .lid = 9, .pkey_count = 1,
							    .pkeys = { 0xffff }, .lease_ms = 600000,
							    .active_mtu = 4, .max_mtu = 5,
							    .mlid_base = 0xC000, .mlid_max = 0xFFFE };
		} else if (m.hdr.type == UMC_SM_RESOLVE) {
			r.hdr.type = UMC_SM_RESOLVE_REPLY;
			r.resolved.data_addr = q->forged_addr;
			r.resolved.data_port = 9;
		} else {
			continue;
		}
		sendto(pfd.fd, out, umc_sm_msg_encode(out, &r), 0, (void *)&from, fl);
	}
	_exit(0);
}

/* Start the squatter on @addr; returns its pid (skips the test without root). */
static pid_t squat_start(struct squat **qp, const struct sockaddr_in *addr)
{
	struct squat *q;
	int ready[2];
	char b;
	pid_t pid;

	if (geteuid() != 0)
		skip(); /* another user needs root to set up */
	q = mmap(NULL, sizeof(*q), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(q != MAP_FAILED);
	q->addr = *addr;
	q->forged_addr = 0x01020304;
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		squatter(q, ready[1]);
	}
	close(ready[1]);
	assert_true(t_read_full(ready[0], &b, 1, WAIT_MS));
	close(ready[0]);
	*qp = q;
	return pid;
}

static void squat_stop(struct squat *q, pid_t pid)
{
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	munmap(q, sizeof(*q));
}

/*
 * A process of another user holds the SM's address first: the port is
 * not registered with it, fails with -EACCES at once and sends it
 * nothing.  With UMC_TRUST_UIDS naming that user (integ/sa_sm_squatted_trusted)
 * the client registers with it as with umc-sm.
 */
static void test_sm_squatted(void **state)
{
	struct sockaddr_in lo = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct umc_sa_open_args a = { .timeout_ms = WAIT_MS };
	bool trusted = getenv("UMC_TRUST_UIDS") != NULL;
	struct umc_sa_client *c = NULL;
	struct umc_sa_counters cnt;
	struct squat *q;
	pid_t pid = squat_start(&q, &lo);
	uint64_t t0 = t_now_ms();

	(void)state;
	a.sm = q->addr;
	if (trusted) {
		assert_int_equal(umc_sa_open(&a, &c), 0);
		umc_sa_counters(c, &cnt);
		assert_int_equal(cnt.untrusted, 0);
		assert_true(q->registers >= 1);
		umc_sa_close(c);
	} else {
		assert_int_equal(umc_sa_open(&a, &c), -EACCES);
		assert_null(c);
		assert_true(t_now_ms() - t0 < WAIT_MS / 2); /* at once, not after a timeout */
		assert_int_equal(q->datagrams, 0);
	}
	squat_stop(q, pid);
}

/*
 * umc-sm exits and a process of another user takes its address: what it
 * answers is not believed (a RESOLVE it answers with a forged endpoint
 * fails), the port is lost, and it gets no REGISTER.
 */
static void test_sm_replaced(void **state)
{
	struct test_sm sm;
	struct events ev;
	struct umc_sa_client *c;
	struct umc_sa_counters cnt;
	struct sockaddr_in addr, ep = { 0 };
	struct squat *q;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(ev.fd), 0);
	start(&sm, NULL);
	c = client(&sm, 7001, &ev);
	test_sm_addr(&sm, &addr);
	stop(&sm);
	test_sm_free(&sm);
	pid = squat_start(&q, &addr);
	assert_int_not_equal(umc_sa_resolve_lid(c, 1, &ep), 0);
	assert_int_not_equal(ep.sin_addr.s_addr, htonl(q->forged_addr));
	assert_int_equal(next_event(&ev), UMC_SA_EVENT_PORT_LOST);
	/* The registration it would get is withheld (counted), again and again. */
	for (uint64_t end = t_now_ms() + WAIT_MS;;) {
		umc_sa_counters(c, &cnt);
		if (cnt.untrusted >= 3 || t_now_ms() > end)
			break;
		poll(NULL, 0, 20);
	}
	assert_true(cnt.untrusted >= 3);
	assert_int_equal(q->registers, 0);
	umc_sa_close(c);
	squat_stop(q, pid);
	close(ev.fd[0]);
	close(ev.fd[1]);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		cmocka_unit_test(test_register),	cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_malformed_register_reply),
		cmocka_unit_test(test_other_version_register),
		cmocka_unit_test(test_rmpp_reply_to_get),
		cmocka_unit_test(test_join_leave),	cmocka_unit_test(test_sendonly),
		cmocka_unit_test(test_sm_key_file),
		cmocka_unit_test(test_lease_expiry),	cmocka_unit_test(test_restart),
		cmocka_unit_test(test_get_table_10000), cmocka_unit_test(test_timeout_cancel),
		cmocka_unit_test(test_window_storm),	cmocka_unit_test(test_window_silent),
		cmocka_unit_test(test_hostile),		cmocka_unit_test(test_umc_sa_tool),
		cmocka_unit_test(test_umc_sa_rmpp_reply),
		cmocka_unit_test(test_sm_squatted),	cmocka_unit_test(test_sm_replaced),
	};

	return cmocka_run_selected("sa_integ", all, sizeof(all) / sizeof(all[0]), argc, argv);
}
