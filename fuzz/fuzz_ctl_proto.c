// SPDX-License-Identifier: MIT
/*
 * fuzz_ctl_proto.c - libFuzzer target for the run-time control message
 * decoder (wire/ctl_proto.c), which reads whatever a peer of the control
 * socket sends.
 *
 * Whatever the message, umc_ctl_decode() must neither crash nor read
 * outside it.  A message it accepts has a known op, a NUL-terminated text
 * of its length, and encodes back to exactly the same bytes (the decoder
 * accepts nothing the encoder would not write).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "wire/ctl_proto.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct umc_ctl_msg m;
	static uint8_t buf[UMC_CTL_MAX_MSG];
	int rc = umc_ctl_decode(data, size, &m);

	CHECK(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT);
	if (rc)
		return 0;
	CHECK(strcmp(umc_ctl_op_str(m.op), "?") != 0);
	CHECK(m.len <= UMC_CTL_TEXT_MAX && strlen(m.text) == m.len);
	CHECK(umc_ctl_encode(buf, &m) == size);
	CHECK(!memcmp(buf, data, size));
	return 0;
}
