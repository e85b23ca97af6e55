/* SPDX-License-Identifier: MIT */
/*
 * lackey-lines.c - how many distinct cache lines of code and of data a
 * program touches per unit of work, read from a valgrind lackey trace
 * (valgrind --tool=lackey --trace-mem=yes) on stdin.
 *
 * Usage: lackey-lines SKIP WINDOW COUNT
 *
 * The first SKIP instructions (start-up and warm-up) are left out; then
 * COUNT windows of WINDOW instructions each are read, and for each the
 * distinct 64-byte lines holding the instructions run ("I" records) and
 * the data loaded, stored or modified (" L", " S", " M" records) are
 * counted.  Prints "code_lines=C data_lines=D windows=N", the means per
 * window.  With WINDOW the instructions of one unit of work (one round
 * trip, say), in a steady state where every unit runs the same code, a
 * window holds what one unit touches: what a cache that forgot everything
 * between two units (a sleeping thread's, after the kernel and other
 * programs ran) has to fetch again.  bench/footprint.sh drives it.
 *
 * Exit status 2 for bad arguments, 1 when the trace ended before the
 * first window did.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { LINE_SHIFT = 6, TABLE_BITS = 20, TABLE_SIZE = 1 << TABLE_BITS };

/*
 * A set of line numbers, emptied in O(1) per window: a slot belongs to the
 * current window only if its stamp is the window's.
 */
struct line_set {
	uint64_t line[TABLE_SIZE];
	uint32_t stamp[TABLE_SIZE];
};

static struct line_set code, data;

/* Add @line to @s for window @w; 1 if it was not there yet. */
static int line_add(struct line_set *s, uint32_t w, uint64_t line)
{
	uint64_t h = (line * 0x9e3779b97f4a7c15u) >> (64 - TABLE_BITS);

	for (;; h = (h + 1) & (TABLE_SIZE - 1)) {
		if (s->stamp[h] != w) {
			s->stamp[h] = w;
			s->line[h] = line;
			return 1;
		}
		if (s->line[h] == line)
			return 0;
	}
}

/* A decimal count (0 or more), or exit 2. */
static long arg(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == 0 || *end != 0 || v < 0) {
		fprintf(stderr, "lackey-lines: %s: not a count: '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long skip, window, count, done = 0, in_window = 0;
	uint64_t code_sum = 0, data_sum = 0, ncode = 0, ndata = 0;
	uint32_t w = 1; /* stamp of the current window; 0 marks a free slot */
	char rec[256];

	if (argc != 4) {
		fprintf(stderr, "usage: lackey-lines SKIP WINDOW COUNT < lackey-trace\n");
		return 2;
	}
	skip = arg(argv[1], "SKIP");
	window = arg(argv[2], "WINDOW");
	count = arg(argv[3], "COUNT");
	if (!window || !count) {
		fprintf(stderr, "lackey-lines: WINDOW and COUNT must be at least 1\n");
		return 2;
	}
	while (fgets(rec, sizeof(rec), stdin)) {
		/* "I  addr,size" or " L addr,size" (S, M): the address in hex. */
		bool is_code = rec[0] == 'I';
		bool is_data = rec[0] == ' ' && (rec[1] == 'L' || rec[1] == 'S' || rec[1] == 'M');
		uint64_t line;

		if (!is_code && !is_data)
			continue;
		if (is_code && skip) {
			skip--;
			continue;
		}
		if (skip)
			continue;
		if (is_code && in_window++ == window) { /* this one opens the next window */
			code_sum += ncode;
			data_sum += ndata;
			ncode = ndata = 0;
			in_window = 1;
			w++;
			if (++done == count)
				break;
		}
		line = strtoull(rec + 3, NULL, 16) >> LINE_SHIFT;
		if (is_code)
			ncode += line_add(&code, w, line);
		else
			ndata += line_add(&data, w, line);
	}
	while (fgets(rec, sizeof(rec), stdin)) /* the writer finishes its run */
		;
	if (!done) {
		fprintf(stderr, "lackey-lines: the trace ended before the first window did\n");
		return 1;
	}
	printf("code_lines=%.0f data_lines=%.0f windows=%ld\n", (double)code_sum / (double)done,
	       (double)data_sum / (double)done, done);
	return 0;
}
