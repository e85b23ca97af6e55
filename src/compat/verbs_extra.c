/* SPDX-License-Identifier: MIT */
/*
 * verbs_extra.c - libibverbs functions that umcast's headers do not
 * declare but prebuilt programs import, implemented for the drop-in
 * libibverbs.so.1 (umc-run(1)): rate conversions, event names, the sysfs
 * helpers, GID entries and types, device index, fork support, the
 * IOVA-taking MR registrations and ibv_qp_to_qp_ex.
 *
 * Each follows its rdma-core 44 man page or, for the few without one
 * (ibv_query_gid_type, ibv_read_sysfs_file, ibv_get_sysfs_path), the
 * behaviour of libibverbs; the man page is named at each function.  They
 * are weak, like the stubs, so that a later implementation in the core
 * library takes their place.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/verbs_int.h"

#define UMC_COMPAT __attribute__((weak, visibility("default")))

/* ------------------------------------------------------------------------- */
/* Static rates (ibv_rate_to_mult(3), ibv_rate_to_mbps(3)).                   */

struct umc_rate {
	enum ibv_rate rate;
	int mult; /* multiple of 2.5 Gb/s, -1 when the rate is not one */
	int mbps;
};

static const struct umc_rate umc_rates[] = {
	{IBV_RATE_2_5_GBPS, 1, 2500},	   {IBV_RATE_5_GBPS, 2, 5000},
	{IBV_RATE_10_GBPS, 4, 10000},	   {IBV_RATE_20_GBPS, 8, 20000},
	{IBV_RATE_30_GBPS, 12, 30000},	   {IBV_RATE_40_GBPS, 16, 40000},
	{IBV_RATE_60_GBPS, 24, 60000},	   {IBV_RATE_80_GBPS, 32, 80000},
	{IBV_RATE_120_GBPS, 48, 120000},   {IBV_RATE_14_GBPS, -1, 14062},
	{IBV_RATE_56_GBPS, -1, 56250},	   {IBV_RATE_112_GBPS, -1, 112500},
	{IBV_RATE_168_GBPS, -1, 168750},   {IBV_RATE_25_GBPS, -1, 25781},
	{IBV_RATE_100_GBPS, -1, 103125},   {IBV_RATE_200_GBPS, -1, 206250},
	{IBV_RATE_300_GBPS, -1, 309375},   {IBV_RATE_28_GBPS, 11, 28125},
	{IBV_RATE_50_GBPS, 20, 53125},	   {IBV_RATE_400_GBPS, 160, 425000},
	{IBV_RATE_600_GBPS, 240, 637500},  {IBV_RATE_800_GBPS, 320, 850000},
	{IBV_RATE_1200_GBPS, 480, 1275000},
};
#define UMC_NRATES (sizeof(umc_rates) / sizeof(umc_rates[0]))

enum umc_rate_key { UMC_BY_RATE, UMC_BY_MULT, UMC_BY_MBPS };

/* The entry whose @key field is @value, or NULL. */
static const struct umc_rate *umc_rate_find(enum umc_rate_key key, int value)
{
	for (size_t i = 0; i < UMC_NRATES; i++) {
		int field = key == UMC_BY_RATE	 ? (int)umc_rates[i].rate
			    : key == UMC_BY_MULT ? umc_rates[i].mult
						 : umc_rates[i].mbps;

		if (field == value && value != -1)
			return &umc_rates[i];
	}
	return NULL;
}

/* ibv_rate_to_mult - @rate as a multiple of 2.5 Gb/s, -1 if it is none. */
UMC_COMPAT int ibv_rate_to_mult(enum ibv_rate rate)
{
	const struct umc_rate *r = umc_rate_find(UMC_BY_RATE, (int)rate);

	return r ? r->mult : -1;
}

/* mult_to_ibv_rate - the rate of @mult x 2.5 Gb/s, IBV_RATE_MAX if none. */
UMC_COMPAT enum ibv_rate mult_to_ibv_rate(int mult)
{
	const struct umc_rate *r = umc_rate_find(UMC_BY_MULT, mult);

	return r ? r->rate : IBV_RATE_MAX;
}

/* ibv_rate_to_mbps - @rate in Mb/s, -1 if unknown. */
UMC_COMPAT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	const struct umc_rate *r = umc_rate_find(UMC_BY_RATE, (int)rate);

	return r ? r->mbps : -1;
}

/* mbps_to_ibv_rate - the rate of exactly @mbps Mb/s, IBV_RATE_MAX if none. */
UMC_COMPAT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	const struct umc_rate *r = umc_rate_find(UMC_BY_MBPS, mbps);

	return r ? r->rate : IBV_RATE_MAX;
}

/* ------------------------------------------------------------------------- */
/* Event names (ibv_event_type_str(3)).  umcast raises no async events, but  */
/* programs print these names; the text is libibverbs'.                      */

UMC_COMPAT const char *ibv_event_type_str(int event)
{
	static const char *const text[] = {
		"CQ error",
		"local work queue catastrophic error",
		"invalid request local work queue error",
		"local access violation work queue error",
		"communication established",
		"send queue drained",
		"path migrated",
		"path migration request error",
		"local catastrophic error",
		"port active",
		"port error",
		"LID change",
		"P_Key change",
		"SM change",
		"SRQ catastrophic error",
		"SRQ limit reached",
		"last WQE reached",
		"client reregistration",
		"GID table change",
		"WQ fatal",
	};

	return event >= 0 && (size_t)event < sizeof(text) / sizeof(text[0]) ? text[event]
									      : "unknown";
}

/* ------------------------------------------------------------------------- */
/* sysfs helpers (libibverbs sysfs.c behaviour).                              */

static char umc_sysfs_path[IBV_SYSFS_PATH_MAX];

static void umc_sysfs_path_init(void)
{
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	size_t len;

	if (!env || !*env)
		return;
	snprintf(umc_sysfs_path, sizeof(umc_sysfs_path), "%s", env);
	len = strlen(umc_sysfs_path);
	while (len > 1 && umc_sysfs_path[len - 1] == '/')
		umc_sysfs_path[--len] = '\0';
}

/*
 * ibv_get_sysfs_path - where sysfs is: $SYSFS_PATH without trailing
 * slashes when the process is not set-uid, else "/sys".  The first call
 * decides.
 */
UMC_COMPAT const char *ibv_get_sysfs_path(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, umc_sysfs_path_init);
	return umc_sysfs_path[0] ? umc_sysfs_path : "/sys";
}

/*
 * ibv_read_sysfs_file - read the attribute file @dir/@file into @buf of
 * @size bytes, without its trailing newline and NUL-terminated.
 * Returns the number of bytes kept, or -1 with errno set (the open or read
 * error; EOVERFLOW when the contents do not fit).
 */
UMC_COMPAT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[2 * IBV_SYSFS_PATH_MAX];
	ssize_t len;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
		return umc_minus1_errno(-ENAMETOOLONG);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len <= 0)
		return (int)len;
	if (buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if ((size_t)len < size)
		buf[len] = '\0';
	else {
		return umc_minus1_errno(-EOVERFLOW);
	}
	return (int)len;
}

/* ------------------------------------------------------------------------- */
/* GID entries (ibv_query_gid_ex(3), ibv_query_gid_table(3)).                 */

/* The GID types of struct ibv_gid_entry and of the sysfs gid_attrs. */
enum {
	UMC_GID_TYPE_IB = 0,
	UMC_GID_TYPE_ROCE_V2 = 2,
	UMC_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
	UMC_GID_TYPE_SYSFS_ROCE_V2 = 1,
};

/* struct ibv_gid_entry of rdma-core 44, which umcast's headers leave out. */
struct umc_gid_entry_abi {
	union ibv_gid gid;
	uint32_t gid_index;
	uint32_t port_num;
	uint32_t gid_type;
	uint32_t ndev_ifindex;
};

/*
 * Entry @index of the GID table of @port_num: 0, EINVAL (bad port or
 * index) or ENODATA (an empty entry).
 */
static int umc_gid_entry(struct ibv_context *context, uint32_t port_num, uint32_t index,
			 struct umc_gid_entry_abi *e)
{
	static const union ibv_gid zero;
	struct ibv_port_attr pa;
	int ret = port_num > 0xff ? EINVAL : umc_query_port(context, (uint8_t)port_num, &pa);

	if (ret)
		return ret;
	if (index >= (uint32_t)pa.gid_tbl_len)
		return EINVAL;
	memset(e, 0, sizeof(*e));
	if (ibv_query_gid(context, (uint8_t)port_num, (int)index, &e->gid))
		return EINVAL;
	if (memcmp(&e->gid, &zero, sizeof(zero)) == 0)
		return ENODATA;
	e->gid_index = index;
	e->port_num = port_num;
	if (pa.link_layer == IBV_LINK_LAYER_ETHERNET) {
		struct umc_device *dev = ctx_dev(context);
		char ifname[IF_NAMESIZE];
		unsigned ifindex = 0;

		e->gid_type = UMC_GID_TYPE_ROCE_V2;
		if (!dev->link->netdev(dev, ifname, &ifindex))
			e->ndev_ifindex = ifindex;
	} else {
		e->gid_type = UMC_GID_TYPE_IB;
	}
	return 0;
}

/*
 * _ibv_query_gid_ex - the function behind the ibv_query_gid_ex() inline:
 * entry @gid_index of port @port_num into @entry (@entry_size bytes, at
 * least rdma-core 44's struct ibv_gid_entry).  umcast's RoCE GIDs are RoCE
 * v2 with the interface as netdev.  Returns 0 or the errno value (EINVAL:
 * bad port, index, flags or size; ENODATA: empty entry).
 */
UMC_COMPAT int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
				 uint32_t gid_index, void *entry, uint32_t flags,
				 size_t entry_size)
{
	struct umc_gid_entry_abi e;
	int ret;

	if (flags || entry_size < sizeof(e))
		return umc_pos_errno(-EINVAL);
	ret = umc_gid_entry(context, port_num, gid_index, &e);
	if (ret)
		return ret;
	memset(entry, 0, entry_size);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

/*
 * _ibv_query_gid_table - the function behind ibv_query_gid_table(): every
 * non-empty GID of every port, at most @max_entries of @entry_size bytes.
 * Returns the number of entries, or a negative errno (-EINVAL: flags or
 * size; -ENOMEM: more entries than @max_entries).
 */
UMC_COMPAT ssize_t _ibv_query_gid_table(struct ibv_context *context, void *entries,
					size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct umc_gid_entry_abi e;
	size_t n = 0;

	if (flags || entry_size < sizeof(e))
		return -EINVAL;
	if (ibv_query_device(context, &da))
		return -EINVAL;
	for (uint32_t port = 1; port <= da.phys_port_cnt; port++) {
		if (umc_query_port(context, (uint8_t)port, &pa))
			return -EINVAL;
		for (uint32_t i = 0; i < (uint32_t)pa.gid_tbl_len; i++) {
			if (umc_gid_entry(context, port, i, &e))
				continue;
			if (n == max_entries)
				return -ENOMEM;
			memset((uint8_t *)entries + n * entry_size, 0, entry_size);
			memcpy((uint8_t *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

/*
 * ibv_query_gid_type - the sysfs GID type of entry @index: RoCE v2 (1) for
 * umcast's RoCE GIDs, "IB/RoCE v1" (0) for IB ones and for an empty entry.
 * Returns 0, or -1 for a bad port or index.
 */
UMC_COMPAT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				  unsigned int index, int *type)
{
	struct umc_gid_entry_abi e;
	int ret = umc_gid_entry(context, port_num, index, &e);

	if (ret == ENODATA) {
		*type = UMC_GID_TYPE_SYSFS_IB_ROCE_V1;
		return 0;
	}
	if (ret)
		return umc_minus1_errno(-ret);
	*type = e.gid_type == UMC_GID_TYPE_ROCE_V2 ? UMC_GID_TYPE_SYSFS_ROCE_V2
						   : UMC_GID_TYPE_SYSFS_IB_ROCE_V1;
	return 0;
}

/* ------------------------------------------------------------------------- */
/* Devices (ibv_get_device_index(3)).                                        */

/* ibv_get_device_index - the device's place in the process's device list. */
UMC_COMPAT int ibv_get_device_index(struct ibv_device *device)
{
	struct umc_device **devs;
	int n = umc_devices(&devs);

	for (int i = 0; i < n; i++)
		if (&devs[i]->ibdev == device)
			return i;
	return -1;
}

/* ------------------------------------------------------------------------- */
/* fork(2): ibv_fork_init and ibv_is_fork_initialized are the core's         */
/* (verbs/fork.c); the range calls have nothing to mark (nothing is pinned). */

UMC_COMPAT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

UMC_COMPAT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ------------------------------------------------------------------------- */
/* MRs with an I/O virtual address (ibv_reg_mr(3)).                           */

/* The "optional" access bits, which a device that lacks them ignores. */
#define UMC_ACCESS_OPTIONAL_RANGE (((1u << 30) - 1) & ~((1u << 20) - 1))

/*
 * ibv_reg_mr_iova2 - ibv_reg_mr() whose SGE addresses are given from @iova.
 * umcast addresses registered memory by its virtual address, so @iova must
 * be @addr; the optional access bits are dropped, as a device without them
 * does.  Returns the MR, or NULL with errno set (EOPNOTSUPP: another iova;
 * ibv_reg_mr's errors).
 */
UMC_COMPAT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, unsigned int access)
{
	if (iova != (uintptr_t)addr)
		return umc_null_errno(-EOPNOTSUPP);
	return ibv_reg_mr(pd, addr, length, (int)(access & ~UMC_ACCESS_OPTIONAL_RANGE));
}

/* ibv_reg_mr_iova - the same with int access flags (IBVERBS_1.7). */
UMC_COMPAT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					  uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/* ------------------------------------------------------------------------- */
/* QPs.                                                                      */

/*
 * ibv_qp_to_qp_ex - the extended QP of @qp: umcast creates none
 * (IBV_QP_INIT_ATTR_SEND_OPS_FLAGS is refused with EOPNOTSUPP), so NULL.
 */
UMC_COMPAT void *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	return umc_null_errno(-EOPNOTSUPP);
}

/*
 * ibv_query_qp_data_in_order - which operations write their data in order
 * (ibv_query_qp_data_in_order(3)): umcast claims none (0).
 */
UMC_COMPAT int ibv_query_qp_data_in_order(struct ibv_qp *qp, int op, uint32_t flags)
{
	return 0;
}
