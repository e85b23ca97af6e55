/* SPDX-License-Identifier: MIT */
/*
 * test_vectors.h - reading a known-answer vectors file for the wire tests.
 *
 * A vectors file has one vector per line, fields separated by " | ", the
 * last field a hex string; lines starting with '#' and empty lines are
 * comments.  Files are found through $UMC_TEST_DATA (set by ctest).
 */
#ifndef TEST_VECTORS_H
#define TEST_VECTORS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	T_VEC_FIELDS = 5,
	T_VEC_MAX = 32,
	T_VEC_BYTES = 8192,
};

struct vec {
	char *field[T_VEC_FIELDS]; /* into line */
	char line[3 * T_VEC_BYTES];
	int nfield;
	uint8_t bytes[T_VEC_BYTES]; /* last field, decoded from hex */
	size_t len;
};

static inline int t_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static inline size_t t_unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (t_hexval(s[0]) >= 0 && t_hexval(s[1]) >= 0 && n < max) {
		out[n++] = (uint8_t)(t_hexval(s[0]) << 4 | t_hexval(s[1]));
		s += 2;
	}
	return n;
}

static inline char *t_trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Read $UMC_TEST_DATA/@file into @vecs (at most T_VEC_MAX); returns how many, or -1. */
static inline int t_vec_load(const char *file, struct vec *vecs)
{
	const char *dir = getenv("UMC_TEST_DATA");
	char path[1024];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/data", file);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "cannot open %s (set UMC_TEST_DATA)\n", path);
		return -1;
	}
	while (n < T_VEC_MAX && fgets(vecs[n].line, sizeof(vecs[0].line), f)) {
		struct vec *v = &vecs[n];
		char *p = v->line, *bar;

		if (p[0] == '#' || p[0] == '\n')
			continue;
		v->nfield = 0;
		while (v->nfield < T_VEC_FIELDS) {
			bar = strstr(p, " | ");
			if (bar)
				*bar = '\0';
			v->field[v->nfield++] = t_trim(p);
			if (!bar)
				break;
			p = bar + 3;
		}
		v->len = t_unhex(v->field[v->nfield - 1], v->bytes, sizeof(v->bytes));
		n++;
	}
	fclose(f);
	return n;
}

/* The vector called @name of the @n in @vecs, or NULL. */
static inline const struct vec *t_vec_find(const struct vec *vecs, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(vecs[i].field[0], name))
			return &vecs[i];
	return NULL;
}

#endif /* TEST_VECTORS_H */
