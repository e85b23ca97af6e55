/* SPDX-License-Identifier: MIT */
/*
 * abi_check.c - compare umcast's public headers with rdma-core's: the size
 * of every struct, the offset and size of every field, the value of every
 * enumerator and numeric macro listed in abi_list.h.  Prints each
 * difference; exit status 0 when there is none, 1 otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "abi_entry.h"

int main(void)
{
	size_t n_ours, n_theirs, bad = 0;
	const struct umc_abi_entry *ours = umc_abi_ours(&n_ours);
	const struct umc_abi_entry *theirs = umc_abi_rdma_core(&n_theirs);

	if (n_ours != n_theirs) {
		printf("FAIL: %zu entries against %zu\n", n_ours, n_theirs);
		return 1;
	}
	for (size_t i = 0; i < n_ours; i++) {
		if (strcmp(ours[i].what, theirs[i].what)) {
			printf("FAIL: entry %zu is %s here, %s there\n", i, ours[i].what,
			       theirs[i].what);
			return 1;
		}
		if (ours[i].value != theirs[i].value || ours[i].size != theirs[i].size) {
			printf("FAIL: %s: umcast %llu (size %zu), rdma-core %llu (size %zu)\n",
			       ours[i].what, ours[i].value, ours[i].size, theirs[i].value,
			       theirs[i].size);
			bad++;
		}
	}
	printf("%zu of %zu sizes, offsets and values differ from rdma-core's\n", bad, n_ours);
	return bad ? 1 : 0;
}
