/* SPDX-License-Identifier: MIT */
/*
 * stubs.c - the rest of rdma-core's libibverbs and librdmacm ABI, for the
 * drop-in libraries (umc-run(1)): every function a prebuilt program or
 * provider library may import but umcast does not implement.  Each one
 * fails at once, never crashes and touches none of its arguments:
 *   - verbs returning int give EOPNOTSUPP, those returning a pointer NULL
 *     with errno EOPNOTSUPP, as libibverbs does for a verb the device lacks
 *     (rdma-core's own tests skip on EOPNOTSUPP);
 *   - rdma_* calls give -1 with errno EOPNOTSUPP (connections, SRQs,
 *     endpoints, options and ECE are not part of umcast);
 *   - the rsocket calls give -1 with errno ENOSYS: umcast has no rsockets;
 *   - the provider interface (IBVERBS_PRIVATE_34) is for drivers, which
 *     umcast never loads: registering one is a harmless no-op (libmlx5 and
 *     libefa register themselves when they are loaded), and the command
 *     helpers fail with EOPNOTSUPP.
 *
 * Every stub is weak, so a real implementation elsewhere in the library
 * takes its place without touching this file.  The stubs take no
 * parameters: they read none, and on the supported ABIs a callee may ignore
 * the arguments it was passed.  This file includes no public header, so
 * that a header declaring one of these functions later cannot conflict.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "umc_err.h"

#define UMC_STUB __attribute__((weak, visibility("default")))

/* int verbs: the errno value. */
#define UMC_STUB_ERR(name)                                                                         \
	UMC_STUB int name(void)                                                                    \
	{                                                                                          \
		return umc_pos_errno(-EOPNOTSUPP);                                                 \
	}
/* int calls of the -1-and-errno convention. */
#define UMC_STUB_NEG(name, err)                                                                    \
	UMC_STUB int name(void)                                                                    \
	{                                                                                          \
		return umc_minus1_errno(-(err));                                                   \
	}
/* ssize_t calls (rsocket data transfer). */
#define UMC_STUB_SNEG(name, err)                                                                   \
	UMC_STUB ssize_t name(void)                                                                \
	{                                                                                          \
		return umc_minus1_errno(-(err));                                                   \
	}
/* Pointer results: NULL and errno. */
#define UMC_STUB_NULL(name)                                                                        \
	UMC_STUB void *name(void)                                                                  \
	{                                                                                          \
		return umc_null_errno(-EOPNOTSUPP);                                                \
	}
/* Calls with no result: nothing to do. */
#define UMC_STUB_VOID(name)                                                                        \
	UMC_STUB void name(void)                                                                   \
	{                                                                                          \
	}

/* ------------------------------------------------------------------------- */
/* libibverbs: verbs umcast does not have (SRQs, CQ resize, re-registration,  */
/* import, ECE, dma-buf MRs, async events).                                   */

UMC_STUB_NULL(ibv_create_srq)
UMC_STUB_ERR(ibv_modify_srq)
UMC_STUB_ERR(ibv_query_srq)
UMC_STUB_ERR(ibv_destroy_srq)
UMC_STUB_ERR(ibv_resize_cq)
UMC_STUB_NEG(ibv_rereg_mr, EOPNOTSUPP) /* IBV_REREG_MR_ERR_INPUT: the MR is unchanged */
UMC_STUB_NULL(ibv_reg_dmabuf_mr)
UMC_STUB_NULL(ibv_import_device)
UMC_STUB_NULL(ibv_import_pd)
UMC_STUB_NULL(ibv_import_mr)
UMC_STUB_NULL(ibv_import_dm)
UMC_STUB_VOID(ibv_unimport_pd)
UMC_STUB_VOID(ibv_unimport_mr)
UMC_STUB_VOID(ibv_unimport_dm)
UMC_STUB_ERR(ibv_query_ece)
UMC_STUB_ERR(ibv_set_ece)
UMC_STUB_ERR(ibv_resolve_eth_l2_from_gid)
/* No asynchronous events exist (context->async_fd is -1). */
UMC_STUB_NEG(ibv_get_async_event, EOPNOTSUPP)
UMC_STUB_VOID(ibv_ack_async_event)
/* Kernel ABI struct converters: there is no kernel ABI to convert from. */
UMC_STUB_VOID(ibv_copy_ah_attr_from_kern)
UMC_STUB_VOID(ibv_copy_path_rec_from_kern)
UMC_STUB_VOID(ibv_copy_path_rec_to_kern)
UMC_STUB_VOID(ibv_copy_qp_attr_from_kern)

/* ------------------------------------------------------------------------- */
/* libibverbs provider interface (IBVERBS_PRIVATE_34).                        */

UMC_STUB bool verbs_allow_disassociate_destroy;
UMC_STUB_VOID(verbs_register_driver_34)
UMC_STUB_VOID(__verbs_log)
UMC_STUB_VOID(verbs_set_ops)
UMC_STUB_VOID(verbs_uninit_context)
UMC_STUB_VOID(verbs_init_cq)
UMC_STUB_NULL(verbs_open_device)
UMC_STUB_NULL(_verbs_init_and_alloc_context)
UMC_STUB_ERR(execute_ioctl)
UMC_STUB unsigned int __ioctl_final_num_attrs(void)
{
	return 0;
}
UMC_STUB_NEG(ibv_read_ibdev_sysfs_file, EOPNOTSUPP)
UMC_STUB_ERR(ibv_cmd_advise_mr)
UMC_STUB_ERR(ibv_cmd_alloc_dm)
UMC_STUB_ERR(ibv_cmd_alloc_mw)
UMC_STUB_ERR(ibv_cmd_alloc_pd)
UMC_STUB_ERR(ibv_cmd_attach_mcast)
UMC_STUB_ERR(ibv_cmd_close_xrcd)
UMC_STUB_ERR(ibv_cmd_create_ah)
UMC_STUB_ERR(ibv_cmd_create_counters)
UMC_STUB_ERR(ibv_cmd_create_cq)
UMC_STUB_ERR(ibv_cmd_create_cq_ex)
UMC_STUB_ERR(ibv_cmd_create_flow)
UMC_STUB_ERR(ibv_cmd_create_flow_action_esp)
UMC_STUB_ERR(ibv_cmd_create_qp)
UMC_STUB_ERR(ibv_cmd_create_qp_ex)
UMC_STUB_ERR(ibv_cmd_create_qp_ex2)
UMC_STUB_ERR(ibv_cmd_create_rwq_ind_table)
UMC_STUB_ERR(ibv_cmd_create_srq)
UMC_STUB_ERR(ibv_cmd_create_srq_ex)
UMC_STUB_ERR(ibv_cmd_create_wq)
UMC_STUB_ERR(ibv_cmd_dealloc_mw)
UMC_STUB_ERR(ibv_cmd_dealloc_pd)
UMC_STUB_ERR(ibv_cmd_dereg_mr)
UMC_STUB_ERR(ibv_cmd_destroy_ah)
UMC_STUB_ERR(ibv_cmd_destroy_counters)
UMC_STUB_ERR(ibv_cmd_destroy_cq)
UMC_STUB_ERR(ibv_cmd_destroy_flow)
UMC_STUB_ERR(ibv_cmd_destroy_flow_action)
UMC_STUB_ERR(ibv_cmd_destroy_qp)
UMC_STUB_ERR(ibv_cmd_destroy_rwq_ind_table)
UMC_STUB_ERR(ibv_cmd_destroy_srq)
UMC_STUB_ERR(ibv_cmd_destroy_wq)
UMC_STUB_ERR(ibv_cmd_detach_mcast)
UMC_STUB_ERR(ibv_cmd_free_dm)
UMC_STUB_ERR(ibv_cmd_get_context)
UMC_STUB_ERR(ibv_cmd_modify_cq)
UMC_STUB_ERR(ibv_cmd_modify_flow_action_esp)
UMC_STUB_ERR(ibv_cmd_modify_qp)
UMC_STUB_ERR(ibv_cmd_modify_qp_ex)
UMC_STUB_ERR(ibv_cmd_modify_srq)
UMC_STUB_ERR(ibv_cmd_modify_wq)
UMC_STUB_ERR(ibv_cmd_open_qp)
UMC_STUB_ERR(ibv_cmd_open_xrcd)
UMC_STUB_ERR(ibv_cmd_poll_cq)
UMC_STUB_ERR(ibv_cmd_post_recv)
UMC_STUB_ERR(ibv_cmd_post_send)
UMC_STUB_ERR(ibv_cmd_post_srq_recv)
UMC_STUB_ERR(ibv_cmd_query_context)
UMC_STUB_ERR(ibv_cmd_query_device_any)
UMC_STUB_ERR(ibv_cmd_query_mr)
UMC_STUB_ERR(ibv_cmd_query_port)
UMC_STUB_ERR(ibv_cmd_query_qp)
UMC_STUB_ERR(ibv_cmd_query_srq)
UMC_STUB_ERR(ibv_cmd_read_counters)
UMC_STUB_ERR(ibv_cmd_reg_dm_mr)
UMC_STUB_ERR(ibv_cmd_reg_dmabuf_mr)
UMC_STUB_ERR(ibv_cmd_reg_mr)
UMC_STUB_ERR(ibv_cmd_req_notify_cq)
UMC_STUB_ERR(ibv_cmd_rereg_mr)
UMC_STUB_ERR(ibv_cmd_resize_cq)

/* ------------------------------------------------------------------------- */
/* librdmacm: connections, endpoints, SRQs, options, ECE.                    */

UMC_STUB_NEG(rdma_resolve_route, EOPNOTSUPP)
UMC_STUB_NEG(rdma_connect, EOPNOTSUPP)
UMC_STUB_NEG(rdma_listen, EOPNOTSUPP)
UMC_STUB_NEG(rdma_accept, EOPNOTSUPP)
UMC_STUB_NEG(rdma_reject, EOPNOTSUPP)
UMC_STUB_NEG(rdma_reject_ece, EOPNOTSUPP)
UMC_STUB_NEG(rdma_notify, EOPNOTSUPP)
UMC_STUB_NEG(rdma_disconnect, EOPNOTSUPP)
UMC_STUB_NEG(rdma_establish, EOPNOTSUPP)
UMC_STUB_NEG(rdma_get_request, EOPNOTSUPP)
UMC_STUB_NEG(rdma_init_qp_attr, EOPNOTSUPP)
UMC_STUB_NEG(rdma_set_option, EOPNOTSUPP)
UMC_STUB_NEG(rdma_migrate_id, EOPNOTSUPP)
UMC_STUB_NEG(rdma_create_ep, EOPNOTSUPP)
UMC_STUB_VOID(rdma_destroy_ep)
UMC_STUB_NEG(rdma_create_srq, EOPNOTSUPP)
UMC_STUB_NEG(rdma_create_srq_ex, EOPNOTSUPP)
UMC_STUB_VOID(rdma_destroy_srq)
UMC_STUB_NEG(rdma_get_remote_ece, EOPNOTSUPP)
UMC_STUB_NEG(rdma_set_local_ece, EOPNOTSUPP)

/* ------------------------------------------------------------------------- */
/* librdmacm: rsockets.                                                      */

UMC_STUB_NEG(rsocket, ENOSYS)
UMC_STUB_NEG(rbind, ENOSYS)
UMC_STUB_NEG(rlisten, ENOSYS)
UMC_STUB_NEG(raccept, ENOSYS)
UMC_STUB_NEG(rconnect, ENOSYS)
UMC_STUB_NEG(rshutdown, ENOSYS)
UMC_STUB_NEG(rclose, ENOSYS)
UMC_STUB_SNEG(rrecv, ENOSYS)
UMC_STUB_SNEG(rrecvfrom, ENOSYS)
UMC_STUB_SNEG(rrecvmsg, ENOSYS)
UMC_STUB_SNEG(rsend, ENOSYS)
UMC_STUB_SNEG(rsendto, ENOSYS)
UMC_STUB_SNEG(rsendmsg, ENOSYS)
UMC_STUB_SNEG(rread, ENOSYS)
UMC_STUB_SNEG(rreadv, ENOSYS)
UMC_STUB_SNEG(rwrite, ENOSYS)
UMC_STUB_SNEG(rwritev, ENOSYS)
UMC_STUB_NEG(rpoll, ENOSYS)
UMC_STUB_NEG(rselect, ENOSYS)
UMC_STUB_NEG(rgetpeername, ENOSYS)
UMC_STUB_NEG(rgetsockname, ENOSYS)
UMC_STUB_NEG(rsetsockopt, ENOSYS)
UMC_STUB_NEG(rgetsockopt, ENOSYS)
UMC_STUB_NEG(rfcntl, ENOSYS)
UMC_STUB_NEG(riounmap, ENOSYS)
UMC_STUB off_t riomap(void)
{
	return umc_minus1_errno(-ENOSYS);
}
UMC_STUB size_t riowrite(void)
{
	return (size_t)umc_minus1_errno(-ENOSYS);
}
