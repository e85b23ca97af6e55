/* SPDX-License-Identifier: MIT */
/*
 * options.h - umc-sm's command-line parser (options.c).
 */
#ifndef UMC_SM_OPTIONS_H
#define UMC_SM_OPTIONS_H

#include "sm.h"

enum {
	UMC_SM_OPT_EXIT = 1,  /* --help or --version printed: exit 0 */
	UMC_SM_OPT_ERROR = 2, /* usage error printed: exit 2 */
};

int umc_sm_parse_options(int argc, char **argv, struct umc_sm_config *cfg);

#endif /* UMC_SM_OPTIONS_H */
