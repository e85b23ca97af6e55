// SPDX-License-Identifier: MIT
/*
 * options.c - umc-sm's command line (umc-sm(8)).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "sa/sa_addr.h"

static const char usage_text[] =
	"usage: umc-sm [options]\n"
	"  -l, --listen ADDR:PORT      UDP address to serve (default 127.0.0.1:4795; port 0: any)\n"
	"      --no-sendonly           no SendOnlyFullMember support: ClassPortInfo\n"
	"                              CapabilityMask2 bit 12 clear, JoinState 0x8 Sets refused\n"
	"      --forwarding MODE       multicast (default): each MLID is an IP multicast group;\n"
	"                              unicast: senders send a copy to each receiving port\n"
	"      --forwarding-wait MS    a join or leave waits this long at most for the senders\n"
	"                              to take the new list (default 250; 0..2000, 0: never)\n"
	"      --prefix PREFIX         subnet prefix, IPv6 notation (default fe80::)\n"
	"      --lease MS              port lease in ms (default 10000; 100..3600000)\n"
	"      --sm-key KEY            SM_Key of trusted SA requests (default 1); given, it\n"
	"                              lets requests with it change other ports' memberships\n"
	"      --sm-key-file FILE      the same, read from FILE (not seen in ps)\n"
	"      --mcast-base ADDR       IPv4 group of MLID 0xC000 (default 239.255.192.0)\n"
	"      --data-port PORT        UDP port of IB packets to MLID groups (default 4796)\n"
	"      --max-mlid MLID         highest MLID to assign (default 0xFFFE)\n"
	"      --mtu BYTES             active MTU of every port: 256..4096 (default 2048)\n"
	"      --max-ports-per-host N  ports one source host may register (default 1024)\n"
	"      --max-groups-per-port N groups one port may be a member of (default 8192)\n"
	"      --max-groups-per-host N memberships of one source host's ports (default 8192)\n"
	"      --max-rmpp-per-port N   GetTable transfers open to one port (default 4)\n"
	"      --max-rmpp-per-host N   ... to one source host's ports (default 16)\n"
	"      --rmpp-time-limit MS    total time of a GetTable transfer, then it is aborted\n"
	"                              (default 10000; 1000..3600000)\n"
	"      --ready-fd FD           also write the ready line to FD, then close it\n"
	"  -v, --verbose               log registrations, groups, rejections; twice: every\n"
	"                              request\n"
	"  -h, --help                  this text\n"
	"      --version               umcast's version\n";

enum {
	OPT_NO_SENDONLY = 256,
	OPT_FORWARDING,
	OPT_FWD_WAIT,
	OPT_PREFIX,
	OPT_LEASE,
	OPT_SM_KEY,
	OPT_SM_KEY_FILE,
	OPT_RMPP_TIME,
	OPT_MCAST_BASE,
	OPT_DATA_PORT,
	OPT_MAX_MLID,
	OPT_MTU,
	OPT_READY_FD,
	OPT_VERSION,
	OPT_CAP = 512, /* + the index in caps[] */
};

/* The caps (umc-sm(8) CAPS): a number from 1 to hi into a field of the config. */
static const struct {
	const char *name;
	size_t field; /* offsetof(struct umc_sm_config, ...), an unsigned */
	unsigned hi;
} caps[] = {
	{ "max-ports-per-host", offsetof(struct umc_sm_config, max_ports_per_host), UMC_SM_MAX_PORTS },
	{ "max-groups-per-port", offsetof(struct umc_sm_config, max_groups_per_port),
	  UMC_SM_MLID_SPACE },
	{ "max-groups-per-host", offsetof(struct umc_sm_config, max_groups_per_host), 1u << 24 },
	{ "max-rmpp-per-port", offsetof(struct umc_sm_config, max_rmpp_per_port), 1024 },
	{ "max-rmpp-per-host", offsetof(struct umc_sm_config, max_rmpp_per_host), 1u << 16 },
};

#define NCAPS (sizeof(caps) / sizeof(caps[0]))

static const struct option long_opts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "no-sendonly", no_argument, NULL, OPT_NO_SENDONLY },
	{ "forwarding", required_argument, NULL, OPT_FORWARDING },
	{ "forwarding-wait", required_argument, NULL, OPT_FWD_WAIT },
	{ "prefix", required_argument, NULL, OPT_PREFIX },
	{ "lease", required_argument, NULL, OPT_LEASE },
	{ "sm-key", required_argument, NULL, OPT_SM_KEY },
	{ "sm-key-file", required_argument, NULL, OPT_SM_KEY_FILE },
	{ "rmpp-time-limit", required_argument, NULL, OPT_RMPP_TIME },
	{ "mcast-base", required_argument, NULL, OPT_MCAST_BASE },
	{ "data-port", required_argument, NULL, OPT_DATA_PORT },
	{ "max-mlid", required_argument, NULL, OPT_MAX_MLID },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "ready-fd", required_argument, NULL, OPT_READY_FD },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "max-ports-per-host", required_argument, NULL, OPT_CAP + 0 },
	{ "max-groups-per-port", required_argument, NULL, OPT_CAP + 1 },
	{ "max-groups-per-host", required_argument, NULL, OPT_CAP + 2 },
	{ "max-rmpp-per-port", required_argument, NULL, OPT_CAP + 3 },
	{ "max-rmpp-per-host", required_argument, NULL, OPT_CAP + 4 },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "umc-sm: %s %s: %s\n", opt, arg, why);
	return UMC_SM_OPT_ERROR;
}

/* An unsigned number (0x hex or decimal) within [lo, hi]. */
static int number(const char *opt, const char *arg, unsigned long long lo, unsigned long long hi,
		  unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || arg[0] == '-' || *out < lo || *out > hi)
		return bad(opt, arg, "not a number in range");
	return 0;
}

/*
 * The SM key from the first line of @path (a number, as --sm-key takes):
 * a file its owner alone can read keeps the key out of ps(1) and
 * /proc/PID/cmdline, which every local user can read.
 */
static int key_file(const char *path, unsigned long long *out)
{
	char line[64] = "";
	FILE *f = fopen(path, "r");

	if (!f)
		return bad("--sm-key-file", path, strerror(errno));
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	char opt[PATH_MAX + 20];
	size_t n;

	n = strcspn(line, " \t\r\n");
	line[n] = 0;
	snprintf(opt, sizeof(opt), "--sm-key-file %s:", path);
	return number(opt, line, 0, UINT64_MAX, out);
}

static int prefix(const char *arg, uint64_t *out)
{
	char text[INET6_ADDRSTRLEN + 4];
	uint8_t b[16];
	char *slash;
	int i;

	snprintf(text, sizeof(text), "%s", arg);
	slash = strchr(text, '/');
	if (slash && strcmp(slash, "/64"))
		return bad("--prefix", arg, "only a /64 prefix");
	if (slash)
		*slash = 0;
	if (inet_pton(AF_INET6, text, b) != 1)
		return bad("--prefix", arg, "not an IPv6 prefix");
	for (i = 8; i < 16; i++)
		if (b[i])
			return bad("--prefix", arg, "the low 64 bits must be zero");
	*out = 0;
	for (i = 0; i < 8; i++)
		*out = *out << 8 | b[i];
	return 0;
}

static int mtu_code(const char *arg, uint8_t *out)
{
	unsigned long long v;
	int code;

	if (number("--mtu", arg, 256, 4096, &v))
		return UMC_SM_OPT_ERROR;
	for (code = 1; code <= 5; code++)
		if (v == 128ull << code) {
			*out = (uint8_t)code;
			return 0;
		}
	return bad("--mtu", arg, "must be 256, 512, 1024, 2048 or 4096");
}

static int mcast_base(const char *arg, uint32_t *out)
{
	struct in_addr a;
	uint32_t v;

	if (inet_pton(AF_INET, arg, &a) != 1)
		return bad("--mcast-base", arg, "not an IPv4 address");
	v = ntohl(a.s_addr);
	if ((v >> 28) != 0xE || (uint64_t)v + UMC_SM_MLID_SPACE - 1 > 0xEFFFFFFFu)
		return bad("--mcast-base", arg, "needs 16384 multicast addresses from here in 224.0.0.0/4");
	*out = v;
	return 0;
}

/**
 * umc_sm_parse_options - fill @cfg from the command line.
 * @argc, @argv: as main() got them
 * @cfg:         defaults on entry (umc_sm_config_default())
 *
 * Returns: 0 to run, UMC_SM_OPT_EXIT after --help or --version, UMC_SM_OPT_ERROR after
 * a message on stderr.
 */
int umc_sm_parse_options(int argc, char **argv, struct umc_sm_config *cfg)
{
	unsigned long long v;
	int c;

	while ((c = getopt_long(argc, argv, "l:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (umc_sa_parse_endpoint(optarg, UMC_SM_UDP_PORT, &cfg->listen))
				return bad("--listen", optarg, "not ADDR:PORT");
			break;
		case OPT_NO_SENDONLY:
			cfg->sendonly = false;
			break;
		case OPT_FORWARDING:
			if (strcmp(optarg, "multicast") && strcmp(optarg, "unicast"))
				return bad("--forwarding", optarg, "must be multicast or unicast");
			cfg->unicast_fwd = !strcmp(optarg, "unicast");
			break;
		case OPT_FWD_WAIT:
			if (number("--forwarding-wait", optarg, 0, UMC_SM_FWD_HOLD_MAX_MS, &v))
				return UMC_SM_OPT_ERROR;
			cfg->fwd_wait_ms = (uint32_t)v;
			break;
		case OPT_PREFIX:
			if (prefix(optarg, &cfg->subnet_prefix))
				return UMC_SM_OPT_ERROR;
			break;
		case OPT_LEASE:
			if (number("--lease", optarg, UMC_SM_LEASE_MIN_MS, UMC_SM_LEASE_MAX_MS, &v))
				return UMC_SM_OPT_ERROR;
			cfg->lease_ms = (uint32_t)v;
			break;
		case OPT_RMPP_TIME:
			if (number("--rmpp-time-limit", optarg, 1000, 3600000, &v))
				return UMC_SM_OPT_ERROR;
			cfg->rmpp_time_ms = (uint32_t)v;
			break;
		case OPT_SM_KEY:
		case OPT_SM_KEY_FILE:
			if (c == OPT_SM_KEY ? number("--sm-key", optarg, 0, UINT64_MAX, &v)
					    : key_file(optarg, &v))
				return UMC_SM_OPT_ERROR;
			cfg->sm_key = v;
			cfg->sm_key_set = true;
			break;
		case OPT_MCAST_BASE:
			if (mcast_base(optarg, &cfg->mcast_base))
				return UMC_SM_OPT_ERROR;
			break;
		case OPT_DATA_PORT:
			if (number("--data-port", optarg, 1, 65535, &v))
				return UMC_SM_OPT_ERROR;
			if (v == UMC_ROCEV2_UDP_PORT)
				return bad("--data-port", optarg, "4791 is RoCEv2's port");
			cfg->data_port = (uint16_t)v;
			break;
		case OPT_MAX_MLID:
			if (number("--max-mlid", optarg, UMC_SM_MLID_BASE + 1, UMC_SM_MLID_MAX, &v))
				return UMC_SM_OPT_ERROR;
			cfg->mlid_max = (uint16_t)v;
			break;
		case OPT_MTU:
			if (mtu_code(optarg, &cfg->port_mtu))
				return UMC_SM_OPT_ERROR;
			break;
		case OPT_READY_FD:
			if (number("--ready-fd", optarg, 0, INT_MAX, &v))
				return UMC_SM_OPT_ERROR;
			cfg->ready_fd = (int)v;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return UMC_SM_OPT_EXIT;
		case OPT_VERSION:
			printf("umc-sm (umcast) %s\n", UMC_VERSION);
			return UMC_SM_OPT_EXIT;
		default:
			if (c >= OPT_CAP && c < OPT_CAP + (int)NCAPS) {
				char opt[32];

				snprintf(opt, sizeof(opt), "--%s", caps[c - OPT_CAP].name);
				if (number(opt, optarg, 1, caps[c - OPT_CAP].hi, &v))
					return UMC_SM_OPT_ERROR;
				*(unsigned *)((char *)cfg + caps[c - OPT_CAP].field) = (unsigned)v;
				break;
			}
			fputs(usage_text, stderr);
			return UMC_SM_OPT_ERROR;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "umc-sm: unexpected argument %s\n", argv[optind]);
		return UMC_SM_OPT_ERROR;
	}
	return 0;
}
