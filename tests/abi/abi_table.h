/* SPDX-License-Identifier: MIT */
/*
 * abi_table.h - turns abi_list.h into a table of numbers.  Included by
 * abi_ours.c and abi_rdma_core.c after their (different) headers, so that
 * umcast's and rdma-core's declarations never meet in one translation unit.
 * UMC_ABI_TABLE_FN names the function the file defines.
 */
#ifndef UMC_ABI_TABLE_H
#define UMC_ABI_TABLE_H

#include <stddef.h>

#include "abi_entry.h"

#define UMC_ABI_SIZE(type) {#type, sizeof(type), 0},
#define UMC_ABI_FIELD(type, path)                                                                  \
	{#type "." #path, offsetof(type, path), sizeof(((type *)0)->path)},
#define UMC_ABI_VALUE(name) {#name, (unsigned long long)(name), 0},

static const struct umc_abi_entry umc_abi_table[] = {
#include "abi_list.h"
};

const struct umc_abi_entry *UMC_ABI_TABLE_FN(size_t *n)
{
	*n = sizeof(umc_abi_table) / sizeof(umc_abi_table[0]);
	return umc_abi_table;
}

#endif /* UMC_ABI_TABLE_H */
