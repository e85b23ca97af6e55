// SPDX-License-Identifier: MIT
/*
 * cmocka_select.c - run the tests of a cmocka program that a name selects
 * (cmocka_select.h).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cmocka_select.h"

int cmocka_run_selected(const char *group, const struct CMUnitTest *all, size_t n, int argc,
			char **argv)
{
	struct CMUnitTest *sel = calloc(n ? n : 1, sizeof(*sel));
	size_t k = 0;
	int ret;

	if (!sel)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < n; i++)
		if (argc < 2 || strstr(all[i].name, argv[1]))
			sel[k++] = all[i];
	if (!k) { /* a misspelt name would pass having run nothing */
		fprintf(stderr, "%s: no test named like %s\n", group, argv[1]);
		free(sel);
		return 2;
	}
	ret = _cmocka_run_group_tests(group, sel, k, NULL, NULL);
	free(sel);
	return ret;
}
