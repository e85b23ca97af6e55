/* SPDX-License-Identifier: MIT */
/*
 * linebuf.c - make stdout line buffered before main() runs.
 *
 * Linked into the compatibility test's build of mckey.c only: mckey writes
 * through stdio, which is fully buffered into a pipe or file, so without
 * this its "mckey: joined dgid:" line would only appear at exit and the test
 * could not wait for it.  (stdbuf(1) does the same by LD_PRELOAD, which
 * AddressSanitizer builds refuse.)
 */
#include <stdio.h>

__attribute__((constructor)) static void umc_compat_linebuf(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}
