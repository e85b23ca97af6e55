// SPDX-License-Identifier: MIT
/*
 * test_sa_proto.c - the library <-> umc-sm messages (src/wire/sm_proto.c)
 * against the layouts documented in sm_proto.h, and the SM address parser
 * (src/sa/sa_addr.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sa/sa_addr.h"
#include "umc_param.h"
#include "wire/sm_proto.h"

static struct umc_sm_msg msg(uint8_t type, uint16_t status)
{
	struct umc_sm_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = type;
	m.hdr.status = status;
	m.hdr.epoch = 0x0102030405060708ULL;
	m.hdr.lid = 0x0a0b;
	m.hdr.tid = 0xdeadbeef;
	return m;
}

static void test_header_layout(void **state)
{
	static const uint8_t want[24] = {
		0x55, 0x4d, 0x43, 0x53, 1, 0x02, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0, 0,
		0xde, 0xad, 0xbe, 0xef,
	};
	struct umc_sm_msg m = msg(UMC_SM_RENEW, 0), d;
	uint8_t buf[UMC_SM_MAX_MSG];

	(void)state;
	m.hdr.version = 9; /* ignored: version 1 is written */
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), 0);
	assert_int_equal(d.hdr.version, 1);
	assert_int_equal(d.hdr.type, UMC_SM_RENEW);
	assert_true(d.hdr.epoch == m.hdr.epoch);
	assert_int_equal(d.hdr.lid, 0x0a0b);
	assert_int_equal(d.hdr.tid, 0xdeadbeef);
}

static void test_register_layout(void **state)
{
	struct umc_sm_msg m = msg(UMC_SM_REGISTER, 0), d;
	uint8_t buf[UMC_SM_MAX_MSG];

	(void)state;
	m.reg.data_addr = 0x7f000001;
	m.reg.data_port = 4796;
	m.reg.port_guid = 0x0200000000000005ULL;
	m.reg.nonce = 0x1112131415161718ULL;
	assert_int_equal(umc_sm_msg_encode(buf, &m), 48);
	assert_int_equal(buf[24], 127);
	assert_int_equal(buf[27], 1);
	assert_int_equal(buf[28] << 8 | buf[29], 4796);
	assert_int_equal(buf[32], 0x02);
	assert_int_equal(buf[39], 0x05);
	assert_int_equal(buf[40], 0x11);
	assert_int_equal(umc_sm_msg_decode(buf, 48, &d), 0);
	assert_memory_equal(&d.reg, &m.reg, sizeof(m.reg));
	/* one byte more or less is malformed */
	assert_int_equal(umc_sm_msg_decode(buf, 47, &d), -EBADMSG);
	assert_int_equal(umc_sm_msg_decode(buf, 49, &d), -EBADMSG);
}

static void test_port_info_layout(void **state)
{
	struct umc_sm_msg m = msg(UMC_SM_REGISTER_REPLY, 0), d;
	uint8_t buf[UMC_SM_MAX_MSG];

	(void)state;
	m.port = (struct umc_sm_port_info){
		.port_guid = 0x0200000000000002ULL, .subnet_prefix = 0xfe80000000000000ULL,
		.lid = 2, .sm_lid = 1, .sm_sl = 0, .active_mtu = 4, .max_mtu = 5, .active_width = 2,
		.active_speed = 1, .rate = 3, .pkey_count = 1, .pkeys = { 0xffff }, .lease_ms = 10000,
		.mcast_base = 0xEFFFC000, .mlid_base = 0xC000, .mlid_max = 0xFFFE, .data_port = 4796,
		.sm_flags = UMC_SM_FLAG_SENDONLY_FULL,
	};
	assert_int_equal(umc_sm_msg_encode(buf, &m), 84);
	assert_int_equal(buf[24 + 16] << 8 | buf[24 + 17], 2);	   /* LID */
	assert_int_equal(buf[24 + 21], 4);			   /* active MTU */
	assert_int_equal(buf[24 + 26], 1);			   /* P_Key count */
	assert_int_equal(buf[24 + 28] << 8 | buf[24 + 29], 0xffff); /* P_Key 0 */
	assert_int_equal(buf[24 + 48], 239);			   /* mcast base */
	assert_int_equal(buf[24 + 50], 192);
	assert_int_equal(buf[24 + 58] << 8 | buf[24 + 59], 1);	   /* flags */
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), 0);
	assert_memory_equal(&d.port, &m.port, sizeof(m.port));
	/* a P_Key table of 0 or more than 8 entries is malformed */
	buf[24 + 26] = 0;
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), -EBADMSG);
	buf[24 + 26] = 9;
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), -EBADMSG);
	buf[24 + 26] = 1;
	/*
	 * So is every other value the port takes as it is: an MTU code
	 * outside 1..5 or an active MTU above the largest, a lease outside
	 * 100 ms..1 h, an MLID map outside 0xC000..0xFFFE or upside down.
	 * Each byte pattern is put in, refused, and the good one put back.
	 */
	static const struct {
		size_t off, len;
		uint32_t bad;
	} bad[] = {
		{21, 1, 0},	    {21, 1, 6},		 {21, 1, 40},	     /* active MTU */
		{22, 1, 0},	    {22, 1, 6},		 {22, 1, 3},	     /* max MTU, and below active 4 */
		{44, 4, 0},	    {44, 4, 1},		 {44, 4, 99},	     /* lease, ms */
		{44, 4, 3600001},   {52, 2, 0xBFFF},	 {52, 2, 0},	     /* MLID base */
		{54, 2, 0xFFFF},    {54, 2, 0xBFFF},			     /* MLID max */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t good[4], *f = buf + 24 + bad[i].off;

		memcpy(good, f, bad[i].len);
		for (size_t k = 0; k < bad[i].len; k++)
			f[k] = (uint8_t)(bad[i].bad >> (8 * (bad[i].len - 1 - k)));
		assert_int_equal(umc_sm_msg_decode(buf, 84, &d), -EBADMSG);
		memcpy(f, good, bad[i].len);
		assert_int_equal(umc_sm_msg_decode(buf, 84, &d), 0);
	}
	/* the bounds themselves are taken */
	m.port.active_mtu = m.port.max_mtu = 1;
	m.port.lease_ms = 100;
	m.port.mlid_base = m.port.mlid_max = 0xC000;
	umc_sm_msg_encode(buf, &m);
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), 0);
	m.port.active_mtu = m.port.max_mtu = 5;
	m.port.lease_ms = 3600000;
	m.port.mlid_base = m.port.mlid_max = 0xFFFE;
	umc_sm_msg_encode(buf, &m);
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), 0);
	/* a reply with a status has no body */
	m = msg(UMC_SM_REGISTER_REPLY, UMC_SM_GUID_IN_USE);
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24);
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), 0);
	assert_int_equal(d.hdr.status, UMC_SM_GUID_IN_USE);
	assert_int_equal(umc_sm_msg_decode(buf, 84, &d), -EBADMSG);
}

static void test_other_messages(void **state)
{
	struct umc_sm_msg m, d;
	uint8_t buf[UMC_SM_MAX_MSG], mad[256];
	unsigned i;

	(void)state;
	m = msg(UMC_SM_RENEW_REPLY, 0);
	m.lease_ms = 300;
	assert_int_equal(umc_sm_msg_encode(buf, &m), 32);
	assert_int_equal(umc_sm_msg_decode(buf, 32, &d), 0);
	assert_int_equal(d.lease_ms, 300);
	m = msg(UMC_SM_RESOLVE, 0);
	m.resolve_lid = 0x1234;
	assert_int_equal(umc_sm_msg_encode(buf, &m), 28);
	assert_int_equal(buf[24], 0x12);
	assert_int_equal(umc_sm_msg_decode(buf, 28, &d), 0);
	assert_int_equal(d.resolve_lid, 0x1234);
	m = msg(UMC_SM_RESOLVE_REPLY, 0);
	m.resolved = (struct umc_sm_resolve_reply){ .lid = 3, .data_addr = 0x0a000001,
						    .data_port = 9, .port_guid = 77 };
	assert_int_equal(umc_sm_msg_encode(buf, &m), 44);
	assert_int_equal(buf[28], 10);
	assert_int_equal(umc_sm_msg_decode(buf, 44, &d), 0);
	assert_memory_equal(&d.resolved, &m.resolved, sizeof(m.resolved));
	for (i = 0; i < sizeof(mad); i++)
		mad[i] = (uint8_t)i;
	m = msg(UMC_SM_SA, 0);
	m.mad = mad;
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24 + 256);
	assert_memory_equal(buf + 24, mad, 256);
	assert_int_equal(umc_sm_msg_decode(buf, 24 + 256, &d), 0);
	assert_ptr_equal(d.mad, buf + 24);
	assert_int_equal(umc_sm_msg_decode(buf, 24 + 255, &d), -EBADMSG);
	m = msg(UMC_SM_UNREGISTER_REPLY, 0);
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24);
	m = msg(0x42, 0);
	assert_int_equal(umc_sm_msg_encode(buf, &m), 0);
}

/* SUBSCRIBE, UNSUBSCRIBE, SQUATTED, FWD_ACK: the layouts sm_proto.h gives. */
static void test_forwarding_requests(void **state)
{
	static const uint8_t types[] = { UMC_SM_SUBSCRIBE, UMC_SM_UNSUBSCRIBE, UMC_SM_SQUATTED };
	struct umc_sm_msg m, d;
	uint8_t buf[UMC_SM_MAX_MSG];

	(void)state;
	for (unsigned i = 0; i < sizeof(types); i++) {
		m = msg(types[i], 0);
		m.mlid = 0xC123;
		assert_int_equal(umc_sm_msg_encode(buf, &m), 28);
		assert_int_equal(buf[24], 0xC1);
		assert_int_equal(buf[25], 0x23);
		assert_int_equal(buf[26] | buf[27], 0);
		assert_int_equal(umc_sm_msg_decode(buf, 28, &d), 0);
		assert_int_equal(d.mlid, 0xC123);
		assert_int_equal(umc_sm_msg_decode(buf, 27, &d), -EBADMSG);
		buf[24] = 0xBF; /* a unicast LID */
		assert_int_equal(umc_sm_msg_decode(buf, 28, &d), -EBADMSG);
		buf[24] = 0xFF, buf[25] = 0xFF; /* the permissive LID */
		assert_int_equal(umc_sm_msg_decode(buf, 28, &d), -EBADMSG);
	}
	m = msg(UMC_SM_FWD_ACK, 0);
	m.ack = (struct umc_sm_fwd_ack){ .mlid = 0xC001, .version = 0x01020304 };
	assert_int_equal(umc_sm_msg_encode(buf, &m), 32);
	assert_memory_equal(buf + 24, "\xc0\x01\0\0\x01\x02\x03\x04", 8);
	assert_int_equal(umc_sm_msg_decode(buf, 32, &d), 0);
	assert_int_equal(d.ack.mlid, 0xC001);
	assert_int_equal(d.ack.version, 0x01020304);
	/* Replies without a body. */
	m = msg(UMC_SM_UNSUBSCRIBE_REPLY, 0);
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24);
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), 0);
	m = msg(UMC_SM_SQUATTED_REPLY, UMC_SM_INVALID);
	assert_int_equal(umc_sm_msg_encode(buf, &m), 24);
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), 0);
	assert_int_equal(d.hdr.status, UMC_SM_INVALID);
	assert_string_equal(umc_sm_type_str(UMC_SM_FORWARD), "FORWARD");
	assert_string_equal(umc_sm_type_str(UMC_SM_FWD_ACK), "FWD_ACK");
}

/* Encode a FORWARD segment of @count entries n = 0.. (addr 10.0.0.n, port 1000 + n, LID n). */
static size_t fwd_msg(uint8_t *buf, uint8_t kind, uint16_t total, uint16_t offset, uint16_t count)
{
	static uint8_t raw[UMC_SM_FWD_SEG * UMC_SM_FWD_ENTRY_LEN];
	struct umc_sm_msg m = msg(UMC_SM_FORWARD, 0);

	for (unsigned i = 0; i < count && i < UMC_SM_FWD_SEG; i++) {
		struct umc_sm_fwd_entry e = { 0x0a000000 + offset + i, (uint16_t)(1000 + offset + i),
					      (uint16_t)(offset + i) };

		umc_sm_fwd_entry_put(raw + i * UMC_SM_FWD_ENTRY_LEN, &e);
	}
	m.fwd = (struct umc_sm_fwd){ .mlid = 0xC002, .kind = kind, .version = 7, .total = total,
				     .offset = offset, .count = count, .entries = raw };
	return umc_sm_msg_encode(buf, &m);
}

/* FORWARD: the layout, the segments, and every bound the decoder keeps. */
static void test_forward(void **state)
{
	uint8_t buf[UMC_SM_MAX_MSG + 8];
	struct umc_sm_fwd_entry e;
	struct umc_sm_msg d;
	size_t n;

	(void)state;
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 3, 0, 3);
	assert_int_equal(n, 24 + 16 + 3 * 8);
	assert_memory_equal(buf + 24, "\xc0\x02\x02\0\0\0\0\x07\0\x03\0\0\0\x03\0\0", 16);
	assert_memory_equal(buf + 40 + 8, "\x0a\0\0\x01\x03\xe9\0\x01", 8);
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), 0);
	assert_int_equal(d.fwd.mlid, 0xC002);
	assert_int_equal(d.fwd.kind, UMC_SM_FWD_UNICAST);
	assert_int_equal(d.fwd.version, 7);
	assert_int_equal(d.fwd.total, 3);
	assert_int_equal(d.fwd.count, 3);
	umc_sm_fwd_entry_get(&d.fwd, 2, &e);
	assert_int_equal(e.addr, 0x0a000002);
	assert_int_equal(e.port, 1002);
	assert_int_equal(e.lid, 2);
	assert_int_equal(umc_sm_msg_decode(buf, n - 1, &d), -EBADMSG);
	assert_int_equal(umc_sm_msg_decode(buf, n + 1, &d), -EBADMSG);
	/* An empty list is one segment of none. */
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 0, 0, 0);
	assert_int_equal(n, 40);
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), 0);
	assert_int_equal(umc_sm_fwd_segments(0), 1);
	/* 300 entries: segments at 0 and 128 are full, at 256 it holds 44. */
	assert_int_equal(umc_sm_fwd_segments(300), 3);
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 128, 128);
	assert_int_equal(n, UMC_SM_MAX_MSG);
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), 0);
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 256, 44);
	assert_int_equal(n, 24 + 16 + 44 * 8);
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), 0);
	/* Segments that are not one of the list's. */
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 256, 43), &d),
			 -EBADMSG); /* short */
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 100, 128), &d),
			 -EBADMSG); /* unaligned */
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 384, 0), &d),
			 -EBADMSG); /* beyond the list */
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_UNICAST, 0, 128, 0), &d),
			 -EBADMSG);
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_MULTICAST, 2, 0, 2), &d),
			 -EBADMSG); /* multicast: one entry */
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, 3, 1, 0, 1), &d), -EBADMSG);
	assert_int_equal(umc_sm_msg_decode(buf, fwd_msg(buf, UMC_SM_FWD_MULTICAST, 1, 0, 1), &d), 0);
	/* A count beyond a segment is refused before the length is trusted. */
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 300, 0, 128);
	buf[24 + 12] = 0x00, buf[24 + 13] = 129;
	assert_int_equal(umc_sm_msg_decode(buf, n + 8, &d), -EBADMSG);
	buf[24 + 12] = 0xff, buf[24 + 13] = 0xff;
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), -EBADMSG);
	/* Version 0 and a unicast MLID are no forwarding. */
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 1, 0, 1);
	buf[24 + 7] = 0;
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), -EBADMSG);
	n = fwd_msg(buf, UMC_SM_FWD_UNICAST, 1, 0, 1);
	buf[24] = 0x12;
	assert_int_equal(umc_sm_msg_decode(buf, n, &d), -EBADMSG);
	/* A refusal is a header alone. */
	d = msg(UMC_SM_FORWARD, UMC_SM_NO_RESOURCES);
	assert_int_equal(umc_sm_msg_encode(buf, &d), 24);
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), 0);
	assert_int_equal(d.hdr.status, UMC_SM_NO_RESOURCES);
	assert_int_equal(umc_sm_msg_decode(buf, 40, &d), -EBADMSG);
}

static void test_decode_errors(void **state)
{
	struct umc_sm_msg m = msg(UMC_SM_RENEW, 0), d;
	uint8_t buf[UMC_SM_MAX_MSG];

	(void)state;
	umc_sm_msg_encode(buf, &m);
	assert_int_equal(umc_sm_msg_decode(buf, 0, &d), -EBADMSG);
	assert_int_equal(umc_sm_msg_decode(buf, 23, &d), -EBADMSG);
	buf[0] ^= 1;
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), -EBADMSG);
	buf[0] ^= 1;
	buf[5] = 0x42;
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), -EBADMSG);
	buf[5] = UMC_SM_RENEW;
	buf[4] = 2;
	assert_int_equal(umc_sm_msg_decode(buf, 24, &d), -EPROTONOSUPPORT);
	assert_int_equal(d.hdr.type, UMC_SM_RENEW); /* decoded, so it can be answered */
	assert_int_equal(d.hdr.tid, 0xdeadbeef);
}

static void test_names_and_map(void **state)
{
	struct umc_sm_port_info pi = { .mcast_base = 0xEFFFC000, .mlid_base = 0xC000,
				       .mlid_max = 0xFFFE };

	(void)state;
	assert_string_equal(umc_sm_type_str(UMC_SM_SA_REPLY), "SA reply");
	assert_string_equal(umc_sm_type_str(0x42), "UNKNOWN");
	assert_string_equal(umc_sm_status_str(UMC_SM_UNKNOWN_PORT), "UNKNOWN_PORT");
	assert_string_equal(umc_sm_status_str(99), "UNKNOWN");
	assert_int_equal(umc_sm_mlid_to_ip(&pi, 0xC000), 0xEFFFC000);
	assert_int_equal(umc_sm_mlid_to_ip(&pi, 0xFFFE), 0xEFFFFFFE);
	assert_int_equal(umc_sm_mlid_to_ip(&pi, 0xBFFF), 0);
	assert_int_equal(umc_sm_mlid_to_ip(&pi, 0xFFFF), 0);
}

static void test_parse_endpoint(void **state)
{
	struct sockaddr_in a;

	(void)state;
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3:4795", 1, &a), 0);
	assert_int_equal(ntohl(a.sin_addr.s_addr), 0x0a010203);
	assert_int_equal(ntohs(a.sin_port), 4795);
	assert_int_equal(a.sin_family, AF_INET);
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3", 77, &a), 0);
	assert_int_equal(ntohs(a.sin_port), 77);
	assert_int_equal(umc_sa_parse_endpoint(":0", 77, &a), 0);
	assert_int_equal(ntohl(a.sin_addr.s_addr), INADDR_LOOPBACK);
	assert_int_equal(ntohs(a.sin_port), 0);
	/* A host name: what getaddrinfo says of it (a minimal system may have
	 * no /etc/hosts, and then "localhost" names no host). */
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_DGRAM}, *ai = NULL;

	if (getaddrinfo("localhost", NULL, &hints, &ai) == 0) {
		assert_int_equal(umc_sa_parse_endpoint("localhost:9", 77, &a), 0);
		assert_int_equal(a.sin_addr.s_addr,
				 ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr);
		assert_int_equal(ntohs(a.sin_port), 9);
		freeaddrinfo(ai);
	} else {
		assert_int_equal(umc_sa_parse_endpoint("localhost:9", 77, &a), -ENOENT);
	}
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3:", 77, &a), -EINVAL);
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3:65536", 77, &a), -EINVAL);
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3:-1", 77, &a), -EINVAL);
	assert_int_equal(umc_sa_parse_endpoint("10.1.2.3:12x", 77, &a), -EINVAL);
	/* UMC_SM, the port defaulting to umc-sm's */
	unsetenv("UMC_SM");
	assert_int_equal(umc_sa_sm_from_env(&a), -ENOENT);
	setenv("UMC_SM", "10.9.8.7", 1);
	assert_int_equal(umc_sa_sm_from_env(&a), 0);
	assert_int_equal(ntohl(a.sin_addr.s_addr), 0x0a090807);
	assert_int_equal(ntohs(a.sin_port), UMC_SM_UDP_PORT);
	setenv("UMC_SM", "10.9.8.7:x", 1);
	assert_int_equal(umc_sa_sm_from_env(&a), -EINVAL);
	unsetenv("UMC_SM");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),  cmocka_unit_test(test_register_layout),
		cmocka_unit_test(test_port_info_layout), cmocka_unit_test(test_other_messages),
		cmocka_unit_test(test_decode_errors),  cmocka_unit_test(test_names_and_map),
		cmocka_unit_test(test_parse_endpoint), cmocka_unit_test(test_forwarding_requests),
		cmocka_unit_test(test_forward),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
