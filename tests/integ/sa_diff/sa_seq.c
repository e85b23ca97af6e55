// SPDX-License-Identifier: MIT
/*
 * sa_seq.c - the MAD-sequence file (format in tests/integ/sa_diff/README.md):
 *
 *   # comment (a '#' at the start of a line or after a blank)
 *   def NAME TOKEN...                          a macro: +NAME inserts its tokens
 *   STEP NODE METHOD ATTRIBUTE TOKEN... [=> FIELD=VALUE...]
 *
 * METHOD is get, set, delete, gettable or a number; ATTRIBUTE is mcmr,
 * cpi or a number.  A TOKEN is KEY=VALUE (a header or record field by its
 * key in sa_fields.c, or timeout=MS) or +NAME.  Assignments apply in
 * order, so a later one overrides a macro's.  What follows "=>" are the
 * results OpenSM 3.3.23 gave (checked with sa_client --check); values stay
 * text here and are resolved when the step runs (node names, @STEP).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sa_client.h"

struct sa_def {
	char name[SA_NAME_LEN];
	char tokens[512];
};

enum { SA_MAX_DEFS = 32, SA_LINE_MAX = 1024 };

static int parse_err(const char *path, int line, const char *what, const char *tok)
{
	fprintf(stderr, "%s:%d: %s%s%s\n", path, line, what, tok ? ": " : "", tok ? tok : "");
	return -EINVAL;
}

static int copy_str(char *dst, size_t size, const char *src)
{
	if (strlen(src) >= size)
		return -ENAMETOOLONG;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int parse_method(const char *s, uint8_t *m)
{
	static const struct {
		const char *name;
		uint8_t method;
	} names[] = {
		{ "get", SA_METHOD_GET },
		{ "set", SA_METHOD_SET },
		{ "delete", SA_METHOD_DELETE },
		{ "gettable", SA_METHOD_GET_TABLE },
	};
	char *end;
	unsigned long v;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name)) {
			*m = names[i].method;
			return 0;
		}
	v = strtoul(s, &end, 0);
	if (*end || end == s || v > 0xff)
		return -EINVAL;
	*m = (uint8_t)v;
	return 0;
}

static int parse_attr(const char *s, uint16_t *a)
{
	char *end;
	unsigned long v;

	if (!strcmp(s, "mcmr")) {
		*a = SA_ATTR_MCMR;
		return 0;
	}
	if (!strcmp(s, "cpi")) {
		*a = SA_ATTR_CPI;
		return 0;
	}
	v = strtoul(s, &end, 0);
	if (*end || end == s || v > 0xffff)
		return -EINVAL;
	*a = (uint16_t)v;
	return 0;
}

static bool known_key(const char *key)
{
	return !strcmp(key, "timeout") || !strcmp(key, "prefix") ||
	       sa_field_by_key(sa_hdr_fields, key) || sa_field_by_key(sa_mcmr_fields, key);
}

static int add_node(struct sa_seq *seq, const char *node)
{
	int i;

	for (i = 0; i < seq->nnodes; i++)
		if (!strcmp(seq->nodes[i], node))
			return 0;
	if (seq->nnodes == SA_MAX_NODES)
		return -ENOSPC;
	return copy_str(seq->nodes[seq->nnodes++], SA_NAME_LEN, node);
}

static int add_kv(struct sa_kv *kv, int *n, int max, const char *key, const char *value)
{
	if (*n == max)
		return -ENOSPC;
	if (copy_str(kv[*n].key, SA_NAME_LEN, key) || copy_str(kv[*n].value, SA_VALUE_LEN, value))
		return -ENAMETOOLONG;
	(*n)++;
	return 0;
}

/* One KEY=VALUE token of a step (after macro expansion). */
static int step_token(struct sa_step *st, char *tok, bool expect, const char *path)
{
	char *eq = strchr(tok, '=');
	int rc;

	if (!eq || eq == tok)
		return parse_err(path, st->line, "expected KEY=VALUE", tok);
	*eq = 0;
	if (expect) {
		rc = add_kv(st->expect, &st->nexpect, SA_MAX_EXPECT, tok, eq + 1);
	} else if (!known_key(tok)) {
		return parse_err(path, st->line, "unknown field", tok);
	} else if (!strcmp(tok, "timeout")) {
		st->timeout_ms = atoi(eq + 1);
		return st->timeout_ms > 0 ? 0 : parse_err(path, st->line, "bad timeout", eq + 1);
	} else {
		rc = add_kv(st->sets, &st->nsets, SA_MAX_SETS, tok, eq + 1);
	}
	if (rc)
		return parse_err(path, st->line, rc == -ENOSPC ? "too many tokens" : "too long", tok);
	return 0;
}

static const struct sa_def *find_def(const struct sa_def *defs, int ndefs, const char *name)
{
	int i;

	for (i = 0; i < ndefs; i++)
		if (!strcmp(defs[i].name, name))
			return &defs[i];
	return NULL;
}

/* The tokens of a step line after its four words; +NAME expands a def. */
static int step_tokens(struct sa_step *st, char *rest, const struct sa_def *defs, int ndefs,
		       const char *path, bool *expect)
{
	char *save = NULL, *tok;
	int rc;

	for (tok = strtok_r(rest, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!strcmp(tok, "=>")) {
			if (*expect)
				return parse_err(path, st->line, "second =>", NULL);
			*expect = true;
			continue;
		}
		if (tok[0] == '+' && !*expect) {
			const struct sa_def *d = find_def(defs, ndefs, tok + 1);
			char copy[sizeof(d->tokens)];

			if (!d)
				return parse_err(path, st->line, "unknown macro", tok);
			memcpy(copy, d->tokens, sizeof(copy));
			rc = step_tokens(st, copy, defs, ndefs, path, expect);
			if (rc)
				return rc;
			continue;
		}
		rc = step_token(st, tok, *expect, path);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_step(struct sa_seq *seq, char *line, int lineno, const struct sa_def *defs,
		      int ndefs, const char *path)
{
	struct sa_step *st;
	char *save = NULL, *w[4];
	bool expect = false;
	int i;

	if (seq->nsteps == SA_MAX_STEPS)
		return parse_err(path, lineno, "too many steps", NULL);
	st = &seq->steps[seq->nsteps];
	memset(st, 0, sizeof(*st));
	st->line = lineno;
	st->timeout_ms = SA_DEFAULT_TIMEOUT_MS;
	for (i = 0; i < 4; i++) {
		w[i] = strtok_r(i ? NULL : line, " \t", &save);
		if (!w[i])
			return parse_err(path, lineno, "expected STEP NODE METHOD ATTRIBUTE", NULL);
	}
	for (i = 0; i < seq->nsteps; i++)
		if (!strcmp(seq->steps[i].name, w[0]))
			return parse_err(path, lineno, "duplicate step", w[0]);
	if (copy_str(st->name, SA_NAME_LEN, w[0]) || copy_str(st->node, SA_NAME_LEN, w[1]))
		return parse_err(path, lineno, "name too long", NULL);
	if (parse_method(w[2], &st->method))
		return parse_err(path, lineno, "bad method", w[2]);
	if (parse_attr(w[3], &st->attr))
		return parse_err(path, lineno, "bad attribute", w[3]);
	if (add_node(seq, st->node))
		return parse_err(path, lineno, "too many nodes", st->node);
	if (step_tokens(st, save ? save : (char *)"", defs, ndefs, path, &expect))
		return -EINVAL;
	seq->nsteps++;
	return 0;
}

/**
 * sa_seq_load - read a sequence file.
 * @path: the file
 * @seq:  filled in
 *
 * Returns: 0; -errno when the file cannot be read; -EINVAL on a syntax
 * error (reported on stderr with the line number).
 */
int sa_seq_load(const char *path, struct sa_seq *seq)
{
	static struct sa_def defs[SA_MAX_DEFS];
	char line[SA_LINE_MAX];
	int ndefs = 0, lineno = 0, rc = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	memset(seq, 0, sizeof(*seq));
	while (!rc && fgets(line, sizeof(line), f)) {
		char *p = line, *hash;

		lineno++;
		for (hash = line; (hash = strchr(hash, '#')); hash++) /* '#' after a blank */
			if (hash == line || hash[-1] == ' ' || hash[-1] == '\t') {
				*hash = 0;
				break;
			}
		line[strcspn(line, "\r\n")] = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			continue;
		if (!strncmp(p, "def ", 4)) {
			char *name = p + 4, *toks;

			while (*name == ' ')
				name++;
			toks = name + strcspn(name, " \t");
			if (*toks)
				*toks++ = 0;
			if (ndefs == SA_MAX_DEFS || !*name ||
			    copy_str(defs[ndefs].name, SA_NAME_LEN, name) ||
			    copy_str(defs[ndefs].tokens, sizeof(defs[ndefs].tokens), toks))
				rc = parse_err(path, lineno, "bad def", name);
			else
				ndefs++;
			continue;
		}
		rc = parse_step(seq, p, lineno, defs, ndefs, path);
	}
	fclose(f);
	return rc;
}
