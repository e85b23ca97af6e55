// SPDX-License-Identifier: MIT
/*
 * sa_run.c - run a MAD sequence through one transport and print every
 * reply as normalised lines "STEP<TAB>FIELD<TAB>VALUE".
 *
 * Normalisation makes two SAs comparable although they number things
 * differently; each rule keeps the behaviour visible:
 *   - a GID whose GUID is a node's port GUID prints as the node ("H2"),
 *     prefixed with its subnet prefix if that is not the node's own
 *     ("fe80:0:0:1/H2"); an all-zero GID prints "::";
 *   - an MGID with the SA signature a01b that the sequence never wrote
 *     itself is SA-assigned: bytes 4..13 (prefix and counter) print as
 *     "<sa-mgid#N>" in order of first appearance, bytes 0..3 and 14..15
 *     as they are (ff12:a01b:<sa-mgid#1>:0000);
 *   - a multicast LID (0xC000..0xFFFE) prints as "mlid#N" in order of first
 *     appearance, so "the group got the next free MLID" and "a freed MLID
 *     was reused" stay visible; one the sequence writes itself (a
 *     requested MLID) prints as it is;
 *   - a unicast LID prints as the node it belongs to, "SM" for the SM's.
 * Every other field prints as it is, in hexadecimal.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sa_client.h"

struct sa_run {
	struct sa_xport *x;
	const struct sa_seq *seq;
	struct sa_node nodes[SA_MAX_NODES];
	int nnodes;
	/* raw replies, for @STEP references */
	uint8_t reply[SA_MAX_STEPS][SA_MAD_SIZE];
	bool replied[SA_MAX_STEPS];
	/* labels */
	uint8_t sa_mgids[SA_MAX_LABELS][16];
	int nsa_mgids;
	uint16_t mlids[SA_MAX_LABELS];
	int nmlids;
	/* MGIDs and MLIDs the sequence writes literally */
	uint8_t literal_mgids[SA_MAX_STEPS][16];
	int nliteral;
	uint16_t literal_mlids[SA_MAX_STEPS];
	int nliteral_mlids;
};

/* One printed field: "FIELD\tVALUE". */
struct sa_line {
	char field[SA_NAME_LEN + 8];
	char value[SA_VALUE_LEN];
};

enum { SA_MAX_LINES = 160, SA_MAX_RECS = SA_DATA_LEN / SA_MCMR_STRIDE };

struct sa_out {
	int n;
	struct sa_line l[SA_MAX_LINES];
};

static void out_add(struct sa_out *o, const char *prefix, const char *field, const char *value)
{
	if (o->n == SA_MAX_LINES) { /* the tables below cannot make this many */
		fprintf(stderr, "sa_client: more than %d fields in one reply\n", SA_MAX_LINES);
		exit(2);
	}
	snprintf(o->l[o->n].field, sizeof(o->l[o->n].field), "%s%s", prefix, field);
	snprintf(o->l[o->n].value, sizeof(o->l[o->n].value), "%s", value);
	o->n++;
}

static const struct sa_node *node_by_name(const struct sa_run *r, const char *name)
{
	int i;

	for (i = 0; i < r->nnodes; i++)
		if (!strcmp(r->nodes[i].name, name))
			return &r->nodes[i];
	return NULL;
}

static int step_index(const struct sa_run *r, const char *name)
{
	int i;

	for (i = 0; i < r->seq->nsteps; i++)
		if (!strcmp(r->seq->steps[i].name, name))
			return i;
	return -1;
}

static uint64_t be64_at(const uint8_t *p)
{
	return sa_get_bits(p, 0, 64);
}

static void gid_text(const uint8_t *g, char *buf, size_t size)
{
	char t[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, g, t, sizeof(t));
	snprintf(buf, size, "%s", t);
}

/* ---- normalisation --------------------------------------------------------- */

static void norm_gid(const struct sa_run *r, const uint8_t *g, char *buf, size_t size)
{
	uint64_t prefix = be64_at(g), guid = be64_at(g + 8);
	int i;

	for (i = 0; i < r->nnodes; i++) {
		if (guid != r->nodes[i].guid)
			continue;
		if (prefix == r->nodes[i].prefix) {
			snprintf(buf, size, "%s", r->nodes[i].name);
		} else {
			uint8_t p[16] = { 0 };
			char t[INET6_ADDRSTRLEN];

			memcpy(p, g, 8);
			inet_ntop(AF_INET6, p, t, sizeof(t));
			snprintf(buf, size, "%s/%s", t, r->nodes[i].name);
		}
		return;
	}
	gid_text(g, buf, size);
}

static bool is_literal_mgid(const struct sa_run *r, const uint8_t *g)
{
	int i;

	for (i = 0; i < r->nliteral; i++)
		if (!memcmp(r->literal_mgids[i], g, 16))
			return true;
	return false;
}

static void norm_mgid(struct sa_run *r, const uint8_t *g, char *buf, size_t size)
{
	int i;

	if (g[0] != 0xff || g[2] != 0xa0 || g[3] != 0x1b || is_literal_mgid(r, g)) {
		gid_text(g, buf, size);
		return;
	}
	for (i = 0; i < r->nsa_mgids; i++)
		if (!memcmp(r->sa_mgids[i], g, 16))
			break;
	if (i == r->nsa_mgids && r->nsa_mgids < SA_MAX_LABELS)
		memcpy(r->sa_mgids[r->nsa_mgids++], g, 16);
	snprintf(buf, size, "%02x%02x:%02x%02x:<sa-mgid#%d>:%02x%02x", g[0], g[1], g[2], g[3],
		 i + 1, g[14], g[15]);
}

static bool is_literal_mlid(const struct sa_run *r, uint16_t mlid)
{
	int i;

	for (i = 0; i < r->nliteral_mlids; i++)
		if (r->literal_mlids[i] == mlid)
			return true;
	return false;
}

static void norm_mlid(struct sa_run *r, uint16_t mlid, char *buf, size_t size)
{
	int i;

	if (mlid < 0xc000 || mlid == 0xffff || is_literal_mlid(r, mlid)) {
		snprintf(buf, size, "0x%04x", mlid);
		return;
	}
	for (i = 0; i < r->nmlids; i++)
		if (r->mlids[i] == mlid)
			break;
	if (i == r->nmlids && r->nmlids < SA_MAX_LABELS)
		r->mlids[r->nmlids++] = mlid;
	snprintf(buf, size, "mlid#%d", i + 1);
}

static void norm_lid(const struct sa_run *r, uint16_t lid, char *buf, size_t size)
{
	int i;

	if (lid && r->nnodes && lid == r->nodes[0].sm_lid) {
		snprintf(buf, size, "SM");
		return;
	}
	for (i = 0; lid && i < r->nnodes; i++)
		if (lid == r->nodes[i].lid) {
			snprintf(buf, size, "%s", r->nodes[i].name);
			return;
		}
	snprintf(buf, size, "0x%04x", lid);
}

/*
 * Print every field of @table over @area into @o, names prefixed @prefix;
 * RMPP header fields only if @rmpp.
 */
static void print_fields(struct sa_run *r, struct sa_out *o, const char *prefix,
			 const struct sa_field *table, const uint8_t *area, bool rmpp)
{
	char v[SA_VALUE_LEN];

	for (; table->name; table++) {
		if (table->rmpp && !rmpp)
			continue;
		if (table->width == 128) {
			if (table->fmt == SA_FMT_MGID)
				norm_mgid(r, area + table->bit / 8, v, sizeof(v));
			else
				norm_gid(r, area + table->bit / 8, v, sizeof(v));
		} else {
			uint64_t x = sa_get_bits(area, table->bit, table->width);

			if (table->fmt == SA_FMT_MLID)
				norm_mlid(r, (uint16_t)x, v, sizeof(v));
			else if (table->fmt == SA_FMT_LID)
				norm_lid(r, (uint16_t)x, v, sizeof(v));
			else
				snprintf(v, sizeof(v), "0x%0*llx", (table->width + 3) / 4,
					 (unsigned long long)x);
		}
		out_add(o, prefix, table->name, v);
	}
}

/* ---- requests ---------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

/*
 * A GID value for field @f: a literal in IPv6 notation, a node name (its
 * GID 0), or @STEP (that field of that step's first returned record).
 */
static int resolve_gid(struct sa_run *r, const char *s, const struct sa_field *f, uint8_t *g)
{
	const struct sa_node *n = node_by_name(r, s);

	if (n) {
		sa_set_bits(g, 0, 64, n->prefix);
		sa_set_bits(g, 64, 64, n->guid);
		return 0;
	}
	if (s[0] == '@') {
		int i = step_index(r, s + 1);

		if (i < 0 || !r->replied[i])
			return -ENOENT;
		memcpy(g, r->reply[i] + SA_HDR_LEN + f->bit / 8, 16);
		return 0;
	}
	if (inet_pton(AF_INET6, s, g) != 1)
		return -EINVAL;
	if (f->fmt == SA_FMT_MGID && !is_literal_mgid(r, g) && r->nliteral < SA_MAX_STEPS)
		memcpy(r->literal_mgids[r->nliteral++], g, 16);
	return 0;
}

/* Parse @s as a value of @width bits. */
static int parse_field(const char *s, unsigned width, uint64_t *v)
{
	if (parse_u64(s, v))
		return -EINVAL;
	return width < 64 && *v >> width ? -ERANGE : 0;
}

/*
 * The request of step @st: the MAD header, then the step's assignments in
 * order; "prefix" replaces PortGID's subnet prefix after all of them.
 */
static int build_request(struct sa_run *r, const struct sa_step *st, uint8_t *mad)
{
	uint8_t *rec = mad + SA_HDR_LEN, prefix[16];
	bool new_prefix = false;
	int i, rc;

	memset(mad, 0, SA_MAD_SIZE);
	mad[0] = 1;
	mad[1] = SA_MGMT_CLASS;
	mad[2] = SA_CLASS_VERSION;
	mad[3] = st->method;
	sa_set_bits(mad, 64, 64, sa_next_tid());
	sa_set_bits(mad, 128, 16, st->attr);
	for (i = 0; i < st->nsets; i++) {
		const struct sa_kv *a = &st->sets[i];
		const struct sa_field *f;
		uint64_t v;

		if (!strcmp(a->key, "prefix")) {
			if (inet_pton(AF_INET6, a->value, prefix) != 1)
				return -EINVAL;
			new_prefix = true;
			continue;
		}
		f = sa_field_by_key(sa_hdr_fields, a->key);
		if (f) {
			rc = parse_field(a->value, f->width, &v);
			if (rc)
				return rc;
			sa_set_bits(mad, f->bit, f->width, v);
			continue;
		}
		f = sa_field_by_key(sa_mcmr_fields, a->key);
		if (f->width == 128) {
			rc = resolve_gid(r, a->value, f, rec + f->bit / 8);
			if (rc)
				return rc;
			continue;
		}
		if (a->value[0] == '@') { /* @STEP: that reply's value of this field */
			int k = step_index(r, a->value + 1);

			if (k < 0 || !r->replied[k])
				return -ENOENT;
			v = sa_get_bits(r->reply[k] + SA_HDR_LEN, f->bit, f->width);
		} else {
			rc = parse_field(a->value, f->width, &v);
			if (rc)
				return rc;
			if (f->fmt == SA_FMT_MLID && !is_literal_mlid(r, (uint16_t)v) &&
			    r->nliteral_mlids < SA_MAX_STEPS)
				r->literal_mlids[r->nliteral_mlids++] = (uint16_t)v;
		}
		sa_set_bits(rec, f->bit, f->width, v);
	}
	if (new_prefix)
		memcpy(rec + 16, prefix, 8);
	return 0;
}

/* ---- replies ------------------------------------------------------------------ */

static int cmp_block(const void *a, const void *b)
{
	const struct sa_out *x = a, *y = b;
	int i, c;

	for (i = 0; i < x->n && i < y->n; i++) {
		c = strcmp(x->l[i].value, y->l[i].value);
		if (c)
			return c;
	}
	return x->n - y->n;
}

static bool is_gettable_resp(const uint8_t *mad)
{
	return mad[3] == (0x80 | SA_METHOD_GET_TABLE);
}

static bool all_zero(const uint8_t *p, size_t len)
{
	while (len--)
		if (*p++)
			return false;
	return true;
}

/*
 * The records of an MCMemberRecord reply.  Any reply but GetTable's
 * carries one record (an error reply too: OpenSM echoes the request's).
 *
 * A GetTable reply is compared on what ibsim carries of it: the first
 * 168 data bytes of its first segment, records 1..3 (sa_xport_umad.c).  The
 * records in it are those whose MGID is not zero (no group has a zero
 * MGID).  "records" is their number when it is 0..2, and "3+" when all
 * three slots are used, because a fourth would not be seen; the records
 * are printed only when there are at most 2, sorted, because two SAs need
 * not agree on the order of a table.
 */
static void print_mcmr(struct sa_run *r, struct sa_out *o, const uint8_t *mad)
{
	static struct sa_out recs[SA_MAX_RECS];
	const uint8_t *data = mad + SA_HDR_LEN;
	int n = 1, i, k;
	char v[16];

	if (is_gettable_resp(mad)) {
		/* AttributeOffset 0: no records (OpenSM echoes the request's then) */
		for (n = 0; sa_get_bits(mad, 352, 16) && n < SA_MAX_RECS &&
			    !all_zero(data + n * SA_MCMR_STRIDE, 16);
		     n++)
			;
		if (n == SA_MAX_RECS) {
			out_add(o, "", "records", "3+");
			return;
		}
	}
	snprintf(v, sizeof(v), "%d", n);
	out_add(o, "", "records", v);
	for (i = 0; i < n; i++) {
		recs[i].n = 0;
		print_fields(r, &recs[i], "", sa_mcmr_fields, data + i * SA_MCMR_STRIDE, false);
	}
	qsort(recs, (size_t)n, sizeof(recs[0]), cmp_block);
	for (i = 0; i < n; i++) {
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "rec%d.", i + 1);
		for (k = 0; k < recs[i].n; k++)
			out_add(o, prefix, recs[i].l[k].field, recs[i].l[k].value);
	}
}

static void print_reply(struct sa_run *r, struct sa_out *o, const uint8_t *mad)
{
	uint16_t attr = (uint16_t)sa_get_bits(mad, 128, 16);

	out_add(o, "", "reply", "yes");
	/*
	 * OpenSM leaves a GetTable reply's RMPP header to the kernel's MAD
	 * layer, which umad2sim does not have: through ibsim it arrives
	 * with only the Active flag set.  So those replies show that flag
	 * and no other RMPP field; every other reply shows them all.
	 */
	print_fields(r, o, "", sa_hdr_fields, mad, !is_gettable_resp(mad));
	if (is_gettable_resp(mad))
		out_add(o, "", "RMPPActive", mad[26] & SA_RMPP_ACTIVE ? "1" : "0");
	if (attr == SA_ATTR_MCMR)
		print_mcmr(r, o, mad);
	else if (attr == SA_ATTR_CPI)
		print_fields(r, o, "cpi.", sa_cpi_fields, mad + SA_HDR_LEN, true);
}

/* ---- checks against the recorded OpenSM results ------------------------------- */

static bool same_value(const char *a, const char *b)
{
	uint64_t x, y;

	if (!parse_u64(a, &x) && !parse_u64(b, &y))
		return x == y;
	return !strcmp(a, b);
}

static int check_step(const struct sa_step *st, const struct sa_out *o)
{
	int i, k, bad = 0;

	for (i = 0; i < st->nexpect; i++) {
		const struct sa_kv *e = &st->expect[i];

		for (k = 0; k < o->n; k++)
			if (!strcmp(o->l[k].field, e->key))
				break;
		if (k == o->n) {
			fprintf(stderr, "check: step %s (line %d): no field %s (expected %s)\n",
				st->name, st->line, e->key, e->value);
			bad++;
		} else if (!same_value(o->l[k].value, e->value)) {
			fprintf(stderr, "check: step %s (line %d): %s is %s, expected %s\n",
				st->name, st->line, e->key, o->l[k].value, e->value);
			bad++;
		}
	}
	return bad;
}

/* ---- the run -------------------------------------------------------------------- */

/**
 * sa_run_new - a run of @seq through transport @x (nothing opened yet).
 * @x:   the transport
 * @seq: the loaded sequence; it must outlive the run
 *
 * Returns: the run, or NULL when out of memory.
 */
struct sa_run *sa_run_new(struct sa_xport *x, const struct sa_seq *seq)
{
	struct sa_run *r = calloc(1, sizeof(*r));

	if (r) {
		r->x = x;
		r->seq = seq;
	}
	return r;
}

/** sa_run_free - close every node the run opened (ending agents, unregistering ports) and free it. */
void sa_run_free(struct sa_run *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; i < r->nnodes; i++)
		r->x->ops->close(r->x, &r->nodes[i]);
	free(r);
}

static int open_nodes(struct sa_run *r)
{
	int i, rc;

	for (i = 0; i < r->seq->nnodes; i++) {
		struct sa_node *n = &r->nodes[i];

		snprintf(n->name, sizeof(n->name), "%s", r->seq->nodes[i]);
		r->nnodes = i + 1; /* closed by sa_run_free even if open fails */
		rc = r->x->ops->open(r->x, n);
		if (rc) {
			fprintf(stderr, "sa_client: %s: cannot open node %s: %s\n",
				r->x->ops->name, n->name, strerror(-rc));
			return rc;
		}
		fprintf(stderr, "sa_client: %s: node %s LID 0x%04x GUID 0x%016llx prefix 0x%016llx SM LID 0x%04x\n",
			r->x->ops->name, n->name, n->lid, (unsigned long long)n->guid,
			(unsigned long long)n->prefix, n->sm_lid);
	}
	return 0;
}

/**
 * sa_run_all - run every step of the sequence and print the normalised
 * replies to @out.
 * @r:     the run
 * @out:   where the lines go
 * @check: also compare each reply with the step's "=>" expectations and
 *         report every mismatch on stderr
 *
 * Returns: 0; the number of failed expectations with @check; -errno when
 * a node cannot be opened or a request cannot be built or sent.
 */
int sa_run_all(struct sa_run *r, FILE *out, bool check)
{
	static struct sa_out o;
	int i, k, rc, bad = 0;

	rc = open_nodes(r);
	if (rc)
		return rc;
	for (i = 0; i < r->seq->nsteps; i++) {
		const struct sa_step *st = &r->seq->steps[i];
		struct sa_node *n = (struct sa_node *)node_by_name(r, st->node);
		uint8_t req[SA_MAD_SIZE];

		rc = build_request(r, st, req);
		if (rc) {
			fprintf(stderr, "sa_client: step %s (line %d): cannot build the request: %s\n",
				st->name, st->line, strerror(-rc));
			return rc;
		}
		rc = r->x->ops->xact(r->x, n, req, r->reply[i], st->timeout_ms);
		o.n = 0;
		if (rc == -ETIMEDOUT) {
			out_add(&o, "", "reply", "none");
		} else if (rc) {
			fprintf(stderr, "sa_client: step %s: %s\n", st->name, strerror(-rc));
			return rc;
		} else {
			r->replied[i] = true;
			print_reply(r, &o, r->reply[i]);
		}
		for (k = 0; k < o.n; k++)
			fprintf(out, "%s\t%s\t%s\n", st->name, o.l[k].field, o.l[k].value);
		fflush(out);
		if (check)
			bad += check_step(st, &o);
	}
	return bad;
}
