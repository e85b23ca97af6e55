// SPDX-License-Identifier: MIT
/*
 * state.c - umc-sm's state: defaults, create (with the IPoIB broadcast
 * group and a new subnet epoch), destroy, and the way out for every
 * datagram it sends.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "sm.h"

/* ff12:401b:ffff::ffff:ffff, the IPv4 broadcast group of partition 0xFFFF (RFC 4391). */
static const uint8_t ipoib_bcast_mgid[16] = {
	0xff, 0x10 | UMC_IPOIB_BCAST_SCOPE, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
	0xff, 0xff,
};

/**
 * umc_sm_config_default - the defaults umc-sm(8) documents.
 * @cfg: filled in
 */
void umc_sm_config_default(struct umc_sm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen.sin_family = AF_INET;
	cfg->listen.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfg->listen.sin_port = htons(UMC_SM_UDP_PORT);
	cfg->subnet_prefix = UMC_SM_SUBNET_PREFIX;
	cfg->sm_key = UMC_SM_DEFAULT_SM_KEY;
	cfg->lease_ms = UMC_SM_LEASE_MS;
	cfg->rmpp_time_ms = UMC_SM_RMPP_TIME_MS;
	cfg->max_ports_per_host = UMC_SM_MAX_PORTS_PER_HOST;
	cfg->max_groups_per_port = UMC_SM_MAX_GROUPS_PER_PORT;
	cfg->max_groups_per_host = UMC_SM_MAX_GROUPS_PER_HOST;
	cfg->max_rmpp_per_port = UMC_SM_RMPP_MAX_PER_PORT;
	cfg->max_rmpp_per_host = UMC_SM_RMPP_MAX_PER_HOST;
	cfg->mcast_base = UMC_SM_MCAST_BASE;
	cfg->data_port = UMC_IB_DATA_PORT;
	cfg->mlid_max = UMC_SM_MLID_MAX;
	cfg->port_mtu = UMC_SM_PORT_MTU;
	cfg->sendonly = true;
	cfg->fwd_wait_ms = UMC_SM_FWD_HOLD_MS;
	cfg->ready_fd = -1;
}

/* A new epoch: start time in seconds, then 32 random bits; never 0. */
static uint64_t new_epoch(void)
{
	uint32_t rnd = 0;

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rnd = (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 12;
	}
	return (uint64_t)(uint32_t)time(NULL) << 32 | rnd | 1;
}

static int add_broadcast_group(struct umc_sm *sm)
{
	struct umc_mcmember rec = {
		.qkey = UMC_IPOIB_QKEY,
		.mlid = UMC_SM_MLID_BASE,
		.pkey = UMC_DEFAULT_PKEY,
		.mtu_sel = UMC_IPOIB_BCAST_MTU >> 6,
		.mtu = UMC_IPOIB_BCAST_MTU & 0x3f,
		.rate_sel = UMC_IPOIB_BCAST_RATE >> 6,
		.rate = UMC_IPOIB_BCAST_RATE & 0x3f,
		.pkt_life_sel = UMC_IPOIB_BCAST_PKT_LIFE >> 6,
		.pkt_life = UMC_IPOIB_BCAST_PKT_LIFE & 0x3f,
		.scope = UMC_IPOIB_BCAST_SCOPE,
	};

	/* Ports of a smaller MTU than the default broadcast MTU could not join it. */
	if (rec.mtu > sm->cfg.port_mtu)
		rec.mtu = sm->cfg.port_mtu;
	memcpy(rec.mgid, ipoib_bcast_mgid, 16);
	return umc_sm_group_create(sm, &rec, true) ? 0 : -1;
}

/**
 * umc_sm_create - a new subnet.
 * @cfg: configuration, copied; cfg->epoch 0 chooses a new epoch
 * @out: where replies go, copied
 *
 * The subnet has no ports yet and one group, the IPoIB broadcast group
 * ff12:401b:ffff::ffff:ffff (Q_Key 0x0B1B, P_Key 0xFFFF, MLID 0xC000,
 * MTU 2048, 10 Gb/s, as OpenSM 3.3.23 starts with), which is never deleted.
 *
 * Returns: the state, or NULL if out of memory.
 */
struct umc_sm *umc_sm_create(const struct umc_sm_config *cfg, const struct umc_sm_out *out)
{
	struct umc_sm *sm = calloc(1, sizeof(*sm));

	if (!sm)
		return NULL;
	sm->cfg = *cfg;
	sm->out = *out;
	sm->epoch = cfg->epoch ? cfg->epoch : new_epoch();
	if (umc_sm_ports_init(&sm->ports) || umc_hash_init(&sm->hosts, 64) ||
	    umc_sm_groups_init(&sm->groups, cfg->mlid_max) || umc_sm_fwd_init(sm) ||
	    add_broadcast_group(sm)) {
		umc_sm_destroy(sm);
		return NULL;
	}
	sm->cnt.groups_created = 0; /* the broadcast group is not a client's */
	return sm;
}

int umc_sm_failover(struct umc_sm *sm)
{
	umc_sm_ports_fini(sm); /* first: the ports' memberships go with them */
	umc_sm_groups_fini(sm);
	umc_sm_fwd_fini(sm);
	memset(&sm->ports, 0, sizeof(sm->ports));
	memset(&sm->groups, 0, sizeof(sm->groups));
	sm->epoch = new_epoch();
	sm->cnt.failovers++;
	umc_sm_log(sm, UMC_SM_LOG_INFO, "failover: epoch 0x%016llx",
		   (unsigned long long)sm->epoch);
	if (umc_sm_ports_init(&sm->ports) || umc_sm_groups_init(&sm->groups, sm->cfg.mlid_max) ||
	    umc_sm_fwd_init(sm) || add_broadcast_group(sm))
		return -ENOMEM;
	sm->cnt.groups_created--; /* the broadcast group is not a client's */
	return 0;
}

/**
 * umc_sm_destroy - free everything; @sm may be NULL or half created.
 */
void umc_sm_destroy(struct umc_sm *sm)
{
	if (!sm)
		return;
	umc_sm_ports_fini(sm); /* first: the ports' memberships, queries, hosts go with them */
	umc_sm_defer_fini(sm);
	umc_hash_fini(&sm->hosts);
	umc_sm_groups_fini(sm);
	umc_sm_fwd_fini(sm);
	free(sm->table);
	free(sm);
}

/**
 * umc_sm_send_msg - encode one message and hand it to sm->out.
 * @sm: the state
 * @to: the destination
 * @m:  the message (wire/sm_proto.h)
 */
void umc_sm_send_msg(struct umc_sm *sm, const struct sockaddr_in *to, const struct umc_sm_msg *m)
{
	uint8_t buf[UMC_SM_MAX_MSG];
	size_t n = umc_sm_msg_encode(buf, m);

	if (n)
		sm->out.send(sm->out.ctx, to, buf, n);
}

/**
 * umc_sm_send_status - a reply without a body: a status, or a reply type
 * that has none.
 * @sm:     the state
 * @to:     the destination
 * @req:    the request's header (its type and tid)
 * @status: enum umc_sm_status
 * @lid:    the LID the reply is about
 */
void umc_sm_send_status(struct umc_sm *sm, const struct sockaddr_in *to,
			const struct umc_sm_hdr *req, uint16_t status, uint16_t lid)
{
	struct umc_sm_msg m = {
		.hdr = {
			.type = (uint8_t)(req->type | UMC_SM_TYPE_REPLY),
			.status = status,
			.epoch = sm->epoch,
			.lid = lid,
			.tid = req->tid,
		},
	};

	umc_sm_send_msg(sm, to, &m);
}

/**
 * umc_sm_send_sa - send one SA response MAD to a port.
 * @sm:   the state
 * @port: the destination (its control endpoint)
 * @tid:  the request datagram's tid
 * @mad:  UMC_MAD_SIZE bytes
 */
void umc_sm_send_sa(struct umc_sm *sm, const struct umc_sm_port *port, uint32_t tid,
		    const uint8_t *mad)
{
	struct umc_sm_msg m = {
		.hdr = {
			.type = UMC_SM_SA_REPLY,
			.epoch = sm->epoch,
			.lid = port->lid,
			.tid = tid,
		},
		.mad = mad,
	};

	umc_sm_send_msg(sm, &port->ctrl, &m);
}
