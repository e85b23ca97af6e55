/* SPDX-License-Identifier: MIT */
/*
 * cmocka_select.h - the main() of a cmocka test program whose ctest
 * entries each run one of its tests by name (tests/lib/cmocka_select.c).
 * Include after <cmocka.h>.
 */
#ifndef TESTS_LIB_CMOCKA_SELECT_H
#define TESTS_LIB_CMOCKA_SELECT_H

#include <stddef.h>

/*
 * Run, as cmocka group @group, those of the @n tests @all whose name
 * contains argv[1] (all of them without one), with SIGPIPE ignored.
 * Returns: cmocka's result (0: every test run passed), for main() to
 * return; 2 if argv[1] names none of them.
 */
int cmocka_run_selected(const char *group, const struct CMUnitTest *all, size_t n, int argc,
			char **argv);

#endif /* TESTS_LIB_CMOCKA_SELECT_H */
