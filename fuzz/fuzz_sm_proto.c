// SPDX-License-Identifier: MIT
/*
 * fuzz_sm_proto.c - libFuzzer target for the library <-> umc-sm message
 * decoder (wire/sm_proto.c).
 *
 * Whatever the datagram, umc_sm_msg_decode() must neither crash nor read
 * outside it.  A datagram it accepts must re-encode to the same length,
 * that encoding must decode, and encoding that again must give the same
 * bytes (reserved fields and unused P_Key entries are written as zero).
 * A REGISTER reply it accepts has every value the port takes in range; a
 * FORWARD it accepts is a whole segment of its list, inside the datagram.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "umc_param.h"
#include "wire/ib.h"
#include "wire/sm_proto.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t a[UMC_SM_MAX_MSG], b[UMC_SM_MAX_MSG];
	struct umc_sm_msg m, m2;
	size_t n;
	int rc;

	rc = umc_sm_msg_decode(data, size, &m);
	CHECK(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT);
	(void)umc_sm_type_str(m.hdr.type);
	(void)umc_sm_status_str(m.hdr.status);
	if (rc)
		return 0;
	CHECK(size >= UMC_SM_HDR_LEN && size <= UMC_SM_MAX_MSG);
	n = umc_sm_msg_encode(a, &m);
	CHECK(n == size);
	CHECK(!memcmp(a, data, UMC_SM_HDR_LEN - 6) && !memcmp(a + 20, data + 20, 4)); /* header */
	CHECK(umc_sm_msg_decode(a, n, &m2) == 0);
	CHECK(umc_sm_msg_encode(b, &m2) == n);
	CHECK(!memcmp(a, b, n));
	if (m.hdr.type == UMC_SM_REGISTER_REPLY && !m.hdr.status) {
		/* What the port takes as it is (umc_sm_msg_decode's promise). */
		CHECK(m.port.pkey_count >= 1 && m.port.pkey_count <= UMC_SM_PKEY_TABLE_MAX);
		CHECK(m.port.active_mtu >= IBV_MTU_256 && m.port.active_mtu <= m.port.max_mtu &&
		      m.port.max_mtu <= IBV_MTU_4096);
		CHECK(m.port.lease_ms >= UMC_SM_LEASE_MIN_MS && m.port.lease_ms <= UMC_SM_LEASE_MAX_MS);
		CHECK(m.port.mlid_base >= UMC_MLID_FIRST && m.port.mlid_base <= m.port.mlid_max &&
		      m.port.mlid_max < UMC_LID_PERMISSIVE);
		(void)umc_sm_mlid_to_ip(&m.port, (uint16_t)(m.port.mlid_base + 1));
	}
	if (m.hdr.type == UMC_SM_FORWARD && !m.hdr.status) {
		/* A segment the receiver places without checks: within its list, whole. */
		struct umc_sm_fwd_entry e;

		CHECK(m.fwd.mlid >= UMC_MLID_FIRST && m.fwd.mlid < UMC_LID_PERMISSIVE && m.fwd.version);
		CHECK(m.fwd.count <= UMC_SM_FWD_SEG && m.fwd.offset % UMC_SM_FWD_SEG == 0);
		CHECK((unsigned)m.fwd.offset + m.fwd.count <= m.fwd.total || (!m.fwd.total && !m.fwd.count));
		CHECK(m.fwd.kind != UMC_SM_FWD_MULTICAST || m.fwd.total == 1);
		CHECK(m.fwd.entries + (size_t)m.fwd.count * UMC_SM_FWD_ENTRY_LEN == data + size);
		for (unsigned i = 0; i < m.fwd.count; i++)
			umc_sm_fwd_entry_get(&m.fwd, i, &e);
	}
	return 0;
}
