/* SPDX-License-Identifier: MIT */
/*
 * sa_client.h - the differential SA test's MAD client
 * (tests/integ/sa_diff/README.md): one sequence of SA MADs, sent either to
 * OpenSM through ibsim (libibumad under umad2sim) or to umc-sm (sm_proto
 * datagrams), every reply printed as normalised "STEP FIELD VALUE" lines.
 *
 * The MAD field codec here is table-driven from the IBA bit offsets and is
 * deliberately independent of src/wire/ib_mad.c: a test that decodes
 * replies with the code under test could not see that code's layout
 * mistakes (ProxyJoin's bit, for one).
 */
#ifndef SA_CLIENT_H
#define SA_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum {
	SA_MAD_SIZE = 256,
	SA_HDR_LEN = 56,	 /* common + RMPP + SA headers */
	SA_DATA_LEN = 200,
	SA_MCMR_STRIDE = 56,	 /* MCMemberRecord (52) padded: AttributeOffset 7 */
	SA_MAX_NODES = 16,
	SA_MAX_STEPS = 256,
	SA_MAX_SETS = 48,	 /* field assignments per step */
	SA_MAX_EXPECT = 16,	 /* expectations per step */
	SA_NAME_LEN = 32,
	SA_VALUE_LEN = 64,
	SA_MAX_LABELS = 256,	 /* SA-assigned MGIDs / MLIDs one run can label */
	SA_DEFAULT_TIMEOUT_MS = 3000,
};

/* MAD values the sequences and the bench use (IBA 13.4, 15.2). */
enum {
	SA_MGMT_CLASS = 0x03,
	SA_CLASS_VERSION = 2,
	SA_GSI_QKEY = 0x80010000,
	SA_METHOD_GET = 0x01,
	SA_METHOD_SET = 0x02,
	SA_METHOD_GET_TABLE = 0x12,
	SA_METHOD_DELETE = 0x15,
	SA_ATTR_CPI = 0x0001,
	SA_ATTR_MCMR = 0x0038,
	SA_RMPP_ACTIVE = 0x1,
	SA_RMPP_LAST = 0x4,
	SA_RMPP_TYPE_DATA = 1,
	SA_RMPP_TYPE_STOP = 3,
	SA_RMPP_STATUS_RESX = 1,
};

/* ---- fields (sa_fields.c) ---------------------------------------------- */

enum sa_fmt {
	SA_FMT_HEX,  /* 0x... with width/4 digits */
	SA_FMT_GID,  /* 128 bits, normalised as a port GID */
	SA_FMT_MGID, /* 128 bits, normalised as an MGID */
	SA_FMT_MLID, /* 16 bits, normalised as an MLID */
	SA_FMT_LID,  /* 16 bits, normalised as a unicast LID */
};

/* One field of a MAD, an MCMemberRecord or a ClassPortInfo. */
struct sa_field {
	const char *name;
	uint16_t bit;	/* IBA big-endian bit offset from the start of its area */
	uint8_t width;	/* bits: 1..64, or 128 for a GID */
	uint8_t fmt;	/* enum sa_fmt */
	const char *key; /* the sequence file's name for it, or NULL */
	bool rmpp;	/* an RMPP header field (see sa_run.c on GetTable replies) */
};

extern const struct sa_field sa_hdr_fields[];	/* from MAD byte 0 */
extern const struct sa_field sa_mcmr_fields[];	/* from the record's byte 0 */
extern const struct sa_field sa_cpi_fields[];	/* from the attribute's byte 0 */

uint64_t sa_get_bits(const uint8_t *p, unsigned bit, unsigned width);
void sa_set_bits(uint8_t *p, unsigned bit, unsigned width, uint64_t v);
const struct sa_field *sa_field_by_key(const struct sa_field *table, const char *key);

/* ---- nodes and transports ---------------------------------------------- */

/* A port the client speaks for: H2, H3, ... */
struct sa_node {
	char name[SA_NAME_LEN];
	uint64_t prefix; /* subnet prefix of GID 0 */
	uint64_t guid;	 /* port GUID */
	uint16_t lid;
	uint16_t sm_lid;
	void *priv;	 /* the transport's */
};

struct sa_xport;

/*
 * Transport operations.  xact sends one request MAD from @n and returns
 * the first reply whose TransactionID matches within @timeout_ms:
 * 0, -ETIMEDOUT (no reply) or another negative errno.  A multi-segment
 * RMPP reply returns its first segment; the transport ends the transfer.
 */
struct sa_xport_ops {
	const char *name;
	int (*open)(struct sa_xport *x, struct sa_node *n);
	int (*xact)(struct sa_xport *x, struct sa_node *n, const uint8_t *req, uint8_t *rep,
		    int timeout_ms);
	void (*close)(struct sa_xport *x, struct sa_node *n);
};

struct sa_xport {
	const struct sa_xport_ops *ops;
	const char *sm_addr;	/* umc-sm: ADDR:PORT */
	const char *self;	/* this program, for re-executing agents */
	int agent_mode;		/* umad: 1 = agents (one process per node), 0 = in process */
};

extern const struct sa_xport_ops sa_xport_umad; /* OpenSM through ibsim (libibumad) */
extern const struct sa_xport_ops sa_xport_sm;	/* umc-sm (sm_proto datagrams) */

/* The agent side of the umad transport: serve one node over stdin/stdout. */
int sa_umad_agent_main(const char *node);

/* ---- shared helpers (sa_util.c) ---------------------------------------- */

int64_t sa_now_ms(void);
int64_t sa_now_ns(void);
uint64_t sa_next_tid(void);
int sa_write_all(int fd, const void *buf, size_t len);
int sa_read_all(int fd, void *buf, size_t len, int timeout_ms);
pid_t sa_spawn(const struct sa_xport *x, const char *sim_host, char *const args[], int *to,
	       int *from);
int sa_reap(pid_t pid, int timeout_ms);

/* ---- sequences (sa_seq.c) ---------------------------------------------- */

/* KEY=VALUE: a field assignment, or an expected result ("=>"). */
struct sa_kv {
	char key[SA_NAME_LEN];
	char value[SA_VALUE_LEN];
};

struct sa_step {
	char name[SA_NAME_LEN];
	char node[SA_NAME_LEN];
	int line;
	uint8_t method;
	uint16_t attr;
	int timeout_ms;
	int nsets;
	struct sa_kv sets[SA_MAX_SETS];
	int nexpect;
	struct sa_kv expect[SA_MAX_EXPECT];
};

struct sa_seq {
	int nsteps;
	struct sa_step steps[SA_MAX_STEPS];
	int nnodes;
	char nodes[SA_MAX_NODES][SA_NAME_LEN]; /* in order of first use */
};

int sa_seq_load(const char *path, struct sa_seq *seq);

/* ---- running and normalising (sa_run.c) -------------------------------- */

struct sa_run;

struct sa_run *sa_run_new(struct sa_xport *x, const struct sa_seq *seq);
/* Opens every node, then runs the steps in order, printing to @out. */
int sa_run_all(struct sa_run *r, FILE *out, bool check);
void sa_run_free(struct sa_run *r);

/* ---- bench (sa_bench.c) ------------------------------------------------ */

int sa_bench_main(struct sa_xport *x, int argc, char **argv);
int sa_bench_worker_main(struct sa_xport *x, int argc, char **argv);

/* A full-member create of @mgid from @n (mask 0x130C7, Q_Key 0x01234567). */
void sa_build_create(uint8_t *mad, const struct sa_node *n, const uint8_t *mgid);

#endif /* SA_CLIENT_H */
