/* SPDX-License-Identifier: MIT */
/* abi_ours.c - the ABI table of umcast's headers (built with -I include). */
#include <infiniband/ib.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define UMC_ABI_TABLE_FN umc_abi_ours
#include "abi_table.h"
