/* SPDX-License-Identifier: MIT */
/*
 * lackey-lines.c - how many distinct cache lines, and pages, of code and
 * of data a program touches per unit of work, read from a valgrind lackey
 * trace (valgrind --tool=lackey --trace-mem=yes) on stdin.
 *
 * Usage: lackey-lines SKIP WINDOW COUNT
 *
 * The first SKIP instructions (start-up and warm-up) and the data accesses
 * they make are left out; then COUNT windows of WINDOW instructions each
 * are read, and for each the distinct 64-byte lines holding the
 * instructions run ("I" records) and the data loaded, stored or modified
 * (" L", " S", " M" records; an access that crosses a line boundary
 * counts both lines) are counted, and so are the distinct 4 KiB pages
 * they lie on.  Prints "code_lines=C data_lines=D code_pages=P
 * data_pages=Q windows=N": the means per window (one decimal) and how
 * many windows the trace held, which is COUNT unless it ended first.  The
 * rest of the trace is read to its end, so that the writer is never cut
 * off.
 *
 * With WINDOW the instructions of one unit of work (one round trip, say),
 * in a steady state where every unit runs the same code, a window holds
 * what one unit touches: what a cache that kept nothing from one unit to
 * the next (a sleeping thread's, after the kernel and other programs ran)
 * would have to fetch again, and the pages what a TLB that kept nothing
 * would have to walk again.  bench/footprint.sh drives it.
 *
 * Exit status: 2 for bad arguments, 1 when no window was completed or a
 * window touched more lines than the sets hold (TABLE_SIZE / 2).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { LINE_SHIFT = 6, PAGE_SHIFT = 12, TABLE_BITS = 20, TABLE_SIZE = 1 << TABLE_BITS };

/*
 * A set of line (or page) numbers, open addressing, emptied in O(1) per
 * window: a slot belongs to the current window only if its stamp is the
 * window's.  Kept at most half full, so that a probe always ends.
 */
struct line_set {
	uint64_t line[TABLE_SIZE];
	uint32_t stamp[TABLE_SIZE];
	uint64_t n; /* lines in the current window */
};

static struct line_set code, data, code_pages, data_pages;

/* Add @line to @s for window @w. */
static void line_add(struct line_set *s, uint32_t w, uint64_t line)
{
	uint64_t h = (line * 0x9e3779b97f4a7c15u) >> (64 - TABLE_BITS);

	for (;; h = (h + 1) & (TABLE_SIZE - 1)) {
		if (s->stamp[h] != w)
			break;
		if (s->line[h] == line)
			return;
	}
	if (s->n >= TABLE_SIZE / 2) {
		fprintf(stderr, "lackey-lines: a window touched more than %d lines: "
				"make WINDOW smaller\n",
			TABLE_SIZE / 2);
		exit(1);
	}
	s->stamp[h] = w;
	s->line[h] = line;
	s->n++;
}

/* Every unit of 1 << @shift bytes (a line, a page) that @size bytes at @addr cover. */
static void access_add(struct line_set *s, unsigned shift, uint32_t w, uint64_t addr,
		       uint64_t size)
{
	uint64_t last = (addr + (size ? size - 1 : 0)) >> shift;

	for (uint64_t unit = addr >> shift; unit <= last; unit++)
		line_add(s, w, unit);
}

/* A decimal count (digits only, 0 or more), or exit 2. */
static long arg(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!isdigit((unsigned char)*s) || *end != 0 || errno == ERANGE) {
		fprintf(stderr, "lackey-lines: %s: not a count: '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long skip, window, count, done = 0, in_window = 0;
	uint64_t code_sum = 0, data_sum = 0, code_page_sum = 0, data_page_sum = 0;
	uint32_t w = 1; /* stamp of the current window; 0 marks a free slot */
	bool counting = false; /* past the skipped instructions and their data */
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
	while (done < count && fgets(rec, sizeof(rec), stdin)) {
		/* "I  addr,size" or " L addr,size" (S, M): hexadecimal, decimal. */
		bool is_code = rec[0] == 'I';
		bool is_data = rec[0] == ' ' && (rec[1] == 'L' || rec[1] == 'S' || rec[1] == 'M');
		uint64_t addr, size;
		char *p;

		if (!is_code && !is_data)
			continue;
		if (is_code && !counting && skip-- == 0)
			counting = true;
		if (!counting)
			continue;
		if (is_code && in_window++ == window) { /* this one opens the next window */
			code_sum += code.n;
			data_sum += data.n;
			code_page_sum += code_pages.n;
			data_page_sum += data_pages.n;
			code.n = data.n = code_pages.n = data_pages.n = 0;
			in_window = 1;
			w++;
			if (++done == count)
				break;
		}
		addr = strtoull(rec + 3, &p, 16);
		size = *p == ',' ? strtoull(p + 1, NULL, 10) : 1;
		access_add(is_code ? &code : &data, LINE_SHIFT, w, addr, size);
		access_add(is_code ? &code_pages : &data_pages, PAGE_SHIFT, w, addr, size);
	}
	while (fgets(rec, sizeof(rec), stdin)) /* let the writer finish its run */
		;
	if (!done) {
		fprintf(stderr, "lackey-lines: the trace ended before the first window did\n");
		return 1;
	}
	printf("code_lines=%.1f data_lines=%.1f code_pages=%.1f data_pages=%.1f windows=%ld\n",
	       (double)code_sum / (double)done, (double)data_sum / (double)done,
	       (double)code_page_sum / (double)done, (double)data_page_sum / (double)done, done);
	return 0;
}
