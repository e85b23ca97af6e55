/* SPDX-License-Identifier: MIT */
/*
 * fuzz_check.h - what every fuzz target shares: the libFuzzer entry point
 * and CHECK(), which aborts on a violated property so that libFuzzer (and
 * the replay driver under the sanitizers) reports it like a crash.
 */
#ifndef UMC_FUZZ_CHECK_H
#define UMC_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

#endif /* UMC_FUZZ_CHECK_H */
