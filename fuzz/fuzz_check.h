/* SPDX-License-Identifier: MIT */
/*
 * fuzz_check.h - CHECK(): a property every input must keep.  A violation
 * aborts, which libFuzzer (and the replay driver under ctest) reports as
 * a crash.
 */
#ifndef UMC_FUZZ_CHECK_H
#define UMC_FUZZ_CHECK_H

#include <stdlib.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

#endif /* UMC_FUZZ_CHECK_H */
