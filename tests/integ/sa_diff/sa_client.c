// SPDX-License-Identifier: MIT
/*
 * sa_client - send one SA MAD sequence to an SA and print the replies,
 * normalised, for the differential test against OpenSM
 * (tests/integ/sa_diff/README.md).
 *
 *   sa_client [--check] --opensm SEQ   OpenSM through ibsim: run inside
 *                                      opensm.sh, which sets IBSIM_SOCKNAME
 *                                      and SA_DIFF_UMAD2SIM
 *   sa_client [--check] --sm ADDR:PORT SEQ   umc-sm over sm_proto datagrams
 *   sa_client --opensm|--sm ADDR:PORT bench ...   the join benchmark (sa_bench.c)
 *
 * --check also compares every reply with the results the sequence file
 * records after "=>" and fails (exit 1) on any mismatch.
 *
 * Exit status: 0; 1 on a failed check; 2 on a usage, sequence or
 * transport error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sa_client.h"

static void usage(void)
{
	fprintf(stderr, "usage: sa_client [--check] --opensm SEQ\n"
			"       sa_client [--check] --sm ADDR:PORT SEQ\n"
			"       sa_client --opensm|--sm ADDR:PORT bench [bench options]\n"
			"       sa_client --agent NODE   (internal: one ibsim node)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "opensm", no_argument, NULL, 'o' },
		{ "sm", required_argument, NULL, 's' },
		{ "check", no_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "worker", no_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sa_xport x = { .self = "/proc/self/exe", .agent_mode = 1 };
	static struct sa_seq seq;
	struct sa_run *r;
	bool check = false, worker = false;
	char self[4096];
	ssize_t len;
	int c, rc;

	/* The agents are this program executed again: remember its path. */
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0) {
		self[len] = 0;
		x.self = self;
	}
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			x.ops = &sa_xport_umad;
			break;
		case 's':
			x.ops = &sa_xport_sm;
			x.sm_addr = optarg;
			break;
		case 'c':
			check = true;
			break;
		case 'a':
			return sa_umad_agent_main(optarg);
		case 'w':
			worker = true;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return 2;
		}
	}
	if (!x.ops || optind >= argc) {
		usage();
		return 2;
	}
	if (worker) {
		x.agent_mode = 0; /* a worker is its node's only process */
		return sa_bench_worker_main(&x, argc - optind, argv + optind);
	}
	if (!strcmp(argv[optind], "bench"))
		return sa_bench_main(&x, argc - optind, argv + optind);
	if (optind + 1 != argc) {
		usage();
		return 2;
	}
	rc = sa_seq_load(argv[optind], &seq);
	if (rc) {
		if (rc != -EINVAL)
			fprintf(stderr, "sa_client: %s: %s\n", argv[optind], strerror(-rc));
		return 2;
	}
	r = sa_run_new(&x, &seq);
	if (!r)
		return 2;
	rc = sa_run_all(r, stdout, check);
	sa_run_free(r);
	if (rc < 0)
		return 2;
	if (rc > 0) {
		fprintf(stderr, "sa_client: %d result(s) differ from the recorded ones\n", rc);
		return 1;
	}
	return 0;
}
