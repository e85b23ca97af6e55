// SPDX-License-Identifier: MIT
/*
 * umc-sa - query umc-sm's Subnet Administrator (umc-sa(1)): multicast
 * groups (as saquery -g), their members with JoinStates (saquery -m, with
 * --sm-key), one MGID, and ClassPortInfo (saquery -c).
 *
 * It registers a port of its own (with no data endpoint) for the time of
 * the query, sends real SA MADs through the library's SA client (a
 * GetTable comes back through RMPP), prints one record per line, and
 * unregisters.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sa/sa_addr.h"
#include "sa/sa_client.h"
#include "umc_param.h"

enum cmd { CMD_NONE, CMD_GROUPS, CMD_MEMBERS, CMD_MGID, CMD_CPI };

static const char usage_text[] =
	"usage: umc-sa [--sm ADDR:PORT] [--sm-key KEY] [-t MS] -g | -m | --mgid MGID | -c\n"
	"  -g, --groups        every multicast group, one line each (untrusted query)\n"
	"  -m, --members       every membership with its JoinState (needs --sm-key)\n"
	"      --mgid MGID     the group MGID (its members with --sm-key)\n"
	"  -c, --classportinfo the SA's ClassPortInfo\n"
	"      --sm ADDR:PORT  umc-sm's address (default $UMC_SM, else 127.0.0.1:4795)\n"
	"      --sm-key KEY    SM_Key for trusted queries (umc-sm --sm-key, default 1);\n"
	"                      --smkey is the same\n"
	"  -t, --timeout MS    wait for umc-sm at most MS ms (default 3000)\n"
	"  -h, --help          this text\n"
	"      --version       umcast's version\n";

struct opts {
	enum cmd cmd;
	struct sockaddr_in sm;
	uint64_t sm_key;
	unsigned timeout_ms;
	uint8_t mgid[16];
};

static const char *rate_str(unsigned rate)
{
	static const char *const gbps[] = {
		[2] = "2.5", [3] = "10", [4] = "30", [5] = "5", [6] = "20", [7] = "40", [8] = "60",
		[9] = "80", [10] = "120", [11] = "14", [12] = "56", [13] = "112", [14] = "168",
		[15] = "25", [16] = "100", [17] = "200", [18] = "300", [19] = "28", [20] = "50",
		[21] = "400", [22] = "600",
	};

	return rate < sizeof(gbps) / sizeof(gbps[0]) && gbps[rate] ? gbps[rate] : "?";
}

static void print_group(const struct umc_mcmember *r)
{
	char mgid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, r->mgid, mgid, sizeof(mgid));
	printf("mgid %s mlid 0x%04x qkey 0x%08x pkey 0x%04x mtu %u rate %s sl %u tclass %u "
	       "flow_label 0x%05x hop_limit %u scope 0x%x packet_life %u\n",
	       mgid, r->mlid, r->qkey, r->pkey, umc_sa_mtu_valid(r->mtu) ? 128u << r->mtu : 0,
	       rate_str(r->rate), r->sl, r->tclass, r->flow_label, r->hop_limit, r->scope,
	       r->pkt_life);
}

static void print_member(const struct umc_mcmember *r)
{
	char mgid[INET6_ADDRSTRLEN], port[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, r->mgid, mgid, sizeof(mgid));
	inet_ntop(AF_INET6, r->port_gid, port, sizeof(port));
	printf("mgid %s mlid 0x%04x port_gid %s join_state 0x%x proxy_join %d\n", mgid, r->mlid,
	       port, r->join_state, r->proxy_join);
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option lopts[] = {
		{ "groups", no_argument, NULL, 'g' },	 { "members", no_argument, NULL, 'm' },
		{ "mgid", required_argument, NULL, 'M' }, { "classportinfo", no_argument, NULL, 'c' },
		{ "sm", required_argument, NULL, 'S' },	 { "sm-key", required_argument, NULL, 'K' },
		/* umc-sa's first spelling, kept: umc-sm has always said --sm-key */
		{ "smkey", required_argument, NULL, 'K' },
		{ "timeout", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },	 { NULL, 0, NULL, 0 },
	};
	const char *sm = NULL;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	o->timeout_ms = UMC_SA_TIMEOUT_MS;
	while ((c = getopt_long(argc, argv, "gmct:h", lopts, NULL)) != -1) {
		enum cmd cmd = CMD_NONE;

		switch (c) {
		case 'g':
			cmd = CMD_GROUPS;
			break;
		case 'm':
			cmd = CMD_MEMBERS;
			break;
		case 'c':
			cmd = CMD_CPI;
			break;
		case 'M':
			if (inet_pton(AF_INET6, optarg, o->mgid) != 1 || o->mgid[0] != 0xff) {
				fprintf(stderr, "umc-sa: --mgid %s: not a multicast GID\n", optarg);
				return 2;
			}
			cmd = CMD_MGID;
			break;
		case 'S':
			sm = optarg;
			break;
		case 'K':
			errno = 0;
			o->sm_key = strtoull(optarg, &end, 0);
			if (errno || *end || end == optarg) {
				fprintf(stderr, "umc-sa: --sm-key %s: not a number\n", optarg);
				return 2;
			}
			break;
		case 't':
			o->timeout_ms = (unsigned)strtoul(optarg, &end, 0);
			if (*end || !o->timeout_ms) {
				fprintf(stderr, "umc-sa: -t %s: not a timeout in ms\n", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'V':
			printf("umc-sa (umcast) %s\n", UMC_VERSION);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return 2;
		}
		if (cmd != CMD_NONE) {
			if (o->cmd != CMD_NONE) {
				fputs("umc-sa: one of -g, -m, --mgid, -c\n", stderr);
				return 2;
			}
			o->cmd = cmd;
		}
	}
	if (o->cmd == CMD_NONE || optind < argc) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (sm)
		c = umc_sa_parse_endpoint(sm, UMC_SM_UDP_PORT, &o->sm);
	else if ((c = umc_sa_sm_from_env(&o->sm)) && !getenv("UMC_SM"))
		c = umc_sa_parse_endpoint("127.0.0.1", UMC_SM_UDP_PORT, &o->sm);
	if (c) {
		fprintf(stderr, "umc-sa: %s: not an SM address\n", sm ? sm : getenv("UMC_SM"));
		return 2;
	}
	return 0;
}

static int query(struct umc_sa_client *c, const struct opts *o)
{
	struct umc_sa_result res;
	struct umc_mcmember r;
	uint8_t mad[UMC_MAD_SIZE];
	uint64_t sm_key = o->cmd == CMD_GROUPS ? 0 : o->sm_key;
	size_t i, stride;
	int rc;

	memset(&r, 0, sizeof(r));
	if (o->cmd == CMD_CPI) {
		umc_sa_request_encode(mad, UMC_MAD_METHOD_GET, UMC_SA_ATTR_CLASS_PORT_INFO, 0,
				      sm_key, NULL);
	} else {
		memcpy(r.mgid, o->mgid, 16); /* zero unless CMD_MGID */
		umc_sa_request_encode(mad, UMC_SA_METHOD_GET_TABLE, UMC_SA_ATTR_MCMEMBER_RECORD,
				      o->cmd == CMD_MGID ? UMC_MCM_COMP_MGID : 0, sm_key, &r);
	}
	rc = umc_sa_call(c, mad, o->timeout_ms, UMC_SA_RETRIES, &res);
	if (rc) {
		fprintf(stderr, "umc-sa: no answer from the SA: %s\n", strerror(-rc));
		return 1;
	}
	if (res.status) {
		fprintf(stderr, "umc-sa: SA status 0x%04x %s\n", res.status,
			umc_sa_status_str(res.status));
		umc_sa_result_free(&res);
		return 1;
	}
	if (o->cmd == CMD_CPI) {
		struct umc_class_port_info cpi;

		umc_cpi_decode(res.data, &cpi);
		printf("base_version %u\nclass_version %u\ncapability_mask 0x%04x\n"
		       "capability_mask2 0x%08x\nresp_time_value %u\nsend_only_full_member %s\n",
		       cpi.base_version, cpi.class_version, cpi.cap_mask, cpi.cap_mask2,
		       cpi.resp_time, cpi.cap_mask2 & UMC_SA_CAP2_SENDONLY_FULL ? "yes" : "no");
	} else {
		struct umc_sa_hdr h;

		umc_sa_hdr_decode(res.mad, UMC_MAD_SIZE, &h);
		stride = (size_t)h.attr_offset * 8;
		for (i = 0; stride >= UMC_MCMEMBER_LEN && i + UMC_MCMEMBER_LEN <= res.data_len;
		     i += stride) {
			umc_mcmember_decode(res.data + i, &r);
			if (o->cmd == CMD_GROUPS || !o->sm_key)
				print_group(&r);
			else
				print_member(&r);
		}
	}
	umc_sa_result_free(&res);
	return 0;
}

int main(int argc, char **argv)
{
	struct umc_sa_open_args a = { .data = { .sin_family = AF_INET } };
	struct umc_sa_client *c;
	char addr[INET_ADDRSTRLEN];
	struct opts o;
	int rc;

	rc = parse(argc, argv, &o);
	if (rc)
		return rc;
	a.sm = o.sm;
	a.timeout_ms = o.timeout_ms;
	rc = umc_sa_open(&a, &c);
	if (rc) {
		inet_ntop(AF_INET, &o.sm.sin_addr, addr, sizeof(addr));
		fprintf(stderr, "umc-sa: cannot register with umc-sm at %s:%u: %s\n", addr,
			ntohs(o.sm.sin_port), strerror(-rc));
		return 1;
	}
	rc = query(c, &o);
	umc_sa_close(c);
	return rc;
}
