// SPDX-License-Identifier: MIT
/*
 * log.c - umc-sm's log lines (stderr, "umc-sm: " first) and counters.
 */
#include <arpa/inet.h>
#include <stdio.h>

#include "sm.h"

/**
 * umc_sm_log - one log line on stderr if -v asked for @level.
 * @sm:    the state (its cfg.verbose)
 * @level: enum umc_sm_log_level
 * @fmt:   printf format, no trailing newline
 */
void umc_sm_log(const struct umc_sm *sm, int level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!umc_sm_log_on(sm, level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "umc-sm: %s\n", line);
}

/**
 * umc_sm_log_counters - print every counter as "umc-sm: counter NAME VALUE".
 * @sm: the state
 *
 * The names are the ones in UMC_SM_COUNTERS (sm.h) and umc-sm(8).
 */
void umc_sm_log_counters(const struct umc_sm *sm)
{
#define UMC_SM_COUNTER_PRINT(name) fprintf(stderr, "umc-sm: counter %s %lu\n", #name, sm->cnt.name);
	UMC_SM_COUNTERS(UMC_SM_COUNTER_PRINT)
#undef UMC_SM_COUNTER_PRINT
}

/**
 * umc_sm_gid_str - a GID as IPv6 text.
 * @gid: 16 bytes, wire order
 * @buf: at least INET6_ADDRSTRLEN (46) bytes
 *
 * Returns: @buf.
 */
const char *umc_sm_gid_str(const uint8_t gid[16], char *buf)
{
	if (!inet_ntop(AF_INET6, gid, buf, INET6_ADDRSTRLEN))
		buf[0] = 0;
	return buf;
}
