// SPDX-License-Identifier: MIT
/*
 * umc-ctl - change a running umcast process, or umc-sm, without restarting
 * it (umc-ctl(1)): its injected faults (umc-faults(7)), a client
 * reregister or a port going down on its InfiniBand port, and umc-sm's
 * failover, silence and rejected joins.  One request on the process's
 * private control socket (src/ctl), one reply printed.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "fault/fault.h"
#include "stat/rundir.h"

static const char usage_text[] =
	"usage: umc-ctl [-t MS] PID faults SPEC      set the process's injected faults ('' clears)\n"
	"       umc-ctl [-t MS] PID reregister [DEV]  a client reregister of its InfiniBand port\n"
	"       umc-ctl [-t MS] PID port-down SECS [DEV]  its port down for SECS s, then up\n"
	"       umc-ctl [-t MS] SMPID failover        umc-sm: start over, as after a restart\n"
	"       umc-ctl [-t MS] SMPID silent SECS     umc-sm: answer nothing for SECS s (0: now)\n"
	"       umc-ctl [-t MS] SMPID reject GROUP STATUS|off  umc-sm: reject GROUP's joins\n"
	"  -t, --timeout MS  wait at most MS ms for the reply (default 5000)\n"
	"  -h, --help        this text\n"
	"      --version     umcast's version\n";

static int usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

static bool parse_uint(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return *s >= '0' && *s <= '9' && !*end && !errno && *v <= max;
}

/* The request the words after the PID ask for; 2 after a usage message. */
static int build(int argc, char **argv, struct umc_ctl_msg *m)
{
	const char *cmd = argv[0];
	unsigned long n;

	memset(m, 0, sizeof(*m));
	if (!strcmp(cmd, "faults") && argc == 2) {
		if (strlen(argv[1]) > UMC_FAULT_SPEC_MAX) {
			fprintf(stderr, "umc-ctl: the SPEC is longer than %d bytes\n",
				UMC_FAULT_SPEC_MAX);
			return 2;
		}
		m->op = UMC_CTL_FAULTS;
		umc_ctl_set_text(m, argv[1]);
	} else if (!strcmp(cmd, "reregister") && argc <= 2) {
		m->op = UMC_CTL_REREGISTER;
		umc_ctl_set_text(m, argc == 2 ? argv[1] : "");
	} else if (!strcmp(cmd, "port-down") && (argc == 2 || argc == 3)) {
		if (!parse_uint(argv[1], UMC_CTL_MAX_SECS, &n) || !n) {
			fprintf(stderr, "umc-ctl: port-down takes seconds, 1 to %d\n",
				UMC_CTL_MAX_SECS);
			return 2;
		}
		m->op = UMC_CTL_PORT_DOWN;
		m->arg = (uint32_t)n;
		umc_ctl_set_text(m, argc == 3 ? argv[2] : "");
	} else if (!strcmp(cmd, "failover") && argc == 1) {
		m->op = UMC_CTL_SM_FAILOVER;
	} else if (!strcmp(cmd, "silent") && argc == 2) {
		if (!parse_uint(argv[1], UMC_CTL_MAX_SECS, &n)) {
			fprintf(stderr, "umc-ctl: silent takes seconds, 0 to %d\n", UMC_CTL_MAX_SECS);
			return 2;
		}
		m->op = UMC_CTL_SM_SILENT;
		m->arg = (uint32_t)n;
	} else if (!strcmp(cmd, "reject") && argc == 3) {
		m->op = UMC_CTL_SM_REJECT;
		m->arg = strcmp(argv[2], "off") ? umc_fault_sa_status(argv[2], strlen(argv[2])) : 0;
		if (!m->arg && strcmp(argv[2], "off")) {
			fprintf(stderr, "umc-ctl: reject's STATUS is a MAD status other than 0 (0x0200, "
					"512, no_resources, req_invalid, no_records, too_many_records, "
					"invalid_gid, insufficient_components, denied) or off\n");
			return 2;
		}
		umc_ctl_set_text(m, argv[1]);
	} else {
		return usage();
	}
	return 0;
}

static const char *why(int err)
{
	switch (err) {
	case -ENOENT:
		return "no control socket: not an umcast process (or umc-sm), or it is gone";
	case -EACCES:
		return "permission denied: the process belongs to another user";
	case -ECONNREFUSED:
		return "the process does not answer (it was killed, or stopped)";
	case -ETIMEDOUT:
		return "no reply in time (the process is stopped or busy)";
	case -ECONNRESET:
		return "the process closed the connection without a reply";
	case -EPROTONOSUPPORT:
		return "the process speaks another version of the control protocol";
	}
	return strerror(-err);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{"timeout", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	static struct umc_ctl_msg req, rep;
	char dir[UMC_RUNDIR_MAX], path[UMC_RUNDIR_MAX + 32];
	unsigned long timeout = 5000, pid;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+t:h", lopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!parse_uint(optarg, 3600000, &timeout) || !timeout)
				return usage();
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("umc-ctl (umcast) %s\n", UMC_VERSION);
			return 0;
		default:
			return usage();
		}
	}
	if (argc - optind < 2)
		return usage();
	if (!parse_uint(argv[optind], 0x3fffffff, &pid) || !pid) {
		fprintf(stderr, "umc-ctl: '%s' is not a PID\n", argv[optind]);
		return 2;
	}
	rc = build(argc - optind - 1, argv + optind + 1, &req);
	if (rc)
		return rc;
	if (umc_rundir_of((pid_t)pid, dir, sizeof(dir)) ||
	    umc_ctl_path(dir, (pid_t)pid, path, sizeof(path))) {
		fprintf(stderr, "umc-ctl: the run directory's path is too long\n");
		return 1;
	}
	rc = umc_ctl_call(path, &req, &rep, (int)timeout);
	if (rc) {
		fprintf(stderr, "umc-ctl: %lu: %s\n", pid, why(rc));
		return 1;
	}
	if (rep.status) {
		fprintf(stderr, "umc-ctl: %lu: %s: %s\n", pid, umc_ctl_op_str(req.op),
			rep.len ? rep.text : strerror(-rep.status));
		return 1;
	}
	if (rep.len)
		printf("%s\n", rep.text);
	return 0;
}
