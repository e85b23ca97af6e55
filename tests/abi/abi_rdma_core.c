/* SPDX-License-Identifier: MIT */
/*
 * abi_rdma_core.c - the ABI table of the installed rdma-core headers
 * (libibverbs-dev, librdmacm-dev).  Built without umcast's include/.
 */
#include <infiniband/ib.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define UMC_ABI_TABLE_FN umc_abi_rdma_core
#include "abi_table.h"
