/* SPDX-License-Identifier: MIT */
/* abi_entry.h - one number of the ABI comparison (see abi_check.c). */
#ifndef UMC_ABI_ENTRY_H
#define UMC_ABI_ENTRY_H

#include <stddef.h>

struct umc_abi_entry {
	const char *what;	  /* "struct ibv_wc.byte_len", "IBV_QPT_UD", ... */
	unsigned long long value; /* sizeof, offsetof, or the constant's value */
	size_t size;		  /* a field's sizeof, else 0 */
};

/* The table built against umcast's include/ (abi_ours.c). */
const struct umc_abi_entry *umc_abi_ours(size_t *n);
/* The same list built against the installed rdma-core headers. */
const struct umc_abi_entry *umc_abi_rdma_core(size_t *n);

#endif /* UMC_ABI_ENTRY_H */
