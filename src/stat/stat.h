/* SPDX-License-Identifier: MIT */
/*
 * stat.h - a process's counters file: what umc-stat(1) reads, without the
 * process's help, while it runs, is stuck or busy-polling, or after it was
 * killed.
 *
 * The file is RUNDIR/PID.stat (rundir.h), mode 0600, mapped shared by the
 * process that owns it, which writes its counters and state records in
 * place; nobody else writes it.  After Aeron's counters file (its
 * CncFileDescriptor and CountersReader: a versioned header that gives the
 * sections' offsets and lengths, fixed-size records, counters that are
 * plain 64-bit words updated where they lie, labels kept beside them so
 * that a reader of another version can name them).
 *
 * Layout (host byte order: the reader runs on the same host):
 *
 *   header    struct umc_stat_hdr, UMC_STAT_HDR_SIZE bytes, with a table
 *             of sections (struct umc_stat_sect), one per kind of record
 *   names     per section with counters: their names, UMC_STAT_NAME_LEN
 *             bytes each, in their order in a record's counter block
 *   sections  faults (one struct umc_stat_faults: the rules in force),
 *             devices (struct umc_stat_dev, then the counters), QPs
 *             (struct umc_stat_qp), groups (struct umc_stat_group, then
 *             the counters): @slots records of @size bytes each
 *
 * Every offset and size comes from the header, so a reader checks them
 * against the file's size and never assumes this version's structs; a
 * newer minor version only appends fields to records and sections.
 *
 * Consistency.  A counter is one naturally aligned 64-bit word, written
 * by atomic stores or adds and read by atomic loads: each value read is
 * one the counter had.  A record's other fields change together under a
 * sequence number (a seqlock): the writer makes @seq odd, writes, and
 * makes it even again, with release ordering; a reader copies the record
 * between two equal even readings of @seq.  A record the writer was
 * killed in the middle of keeps an odd @seq: the reader gives up after a
 * bounded number of tries and says so.  @used says whether a slot holds
 * anything; a slot that is freed and used again changes @seq, so a reader
 * never mixes two tenants' fields.
 *
 * Only the process writes its file, and it never reads back from it
 * anything that decides where it writes: a file changed by someone else
 * changes what umc-stat shows, never the process's memory.  (Truncating
 * the file, which only its owner or root can do, would make the process's
 * next write to it fault, as with any shared mapping.)
 */
#ifndef UMC_STAT_H
#define UMC_STAT_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UMC_STAT_MAGIC "umcstat"
/* Semantic version major << 16 | minor: a reader takes its major, any minor. */
#define UMC_STAT_VERSION_MAJOR 1
#define UMC_STAT_VERSION_MINOR 0
#define UMC_STAT_VERSION (UMC_STAT_VERSION_MAJOR << 16 | UMC_STAT_VERSION_MINOR)

enum {
	UMC_STAT_HDR_SIZE = 512,
	UMC_STAT_NAME_LEN = 32,	      /* a counter's name, NUL-padded */
	UMC_STAT_ALIGN = 64,	      /* records start on cache lines */
	UMC_STAT_DEV_SLOTS = 64,      /* UMC_MAX_DEVICES */
	UMC_STAT_QP_SLOTS = 1024,     /* QPs shown; more are counted in the section's overflow */
	UMC_STAT_GRP_SLOTS = 512,     /* groups shown; likewise */
	UMC_STAT_MAX_SLOTS = 1024,    /* the most of any section */
	UMC_STAT_GRP_QPS = 56,	      /* attached QPNs a group record lists (rxe's limit) */
	UMC_STAT_GRP_IDS = 16,	      /* CM joins a group record lists */
	UMC_STAT_FAULTS_TEXT = 4096,  /* the rules' canonical text, NUL included */
	UMC_STAT_COMM_LEN = 16,	      /* /proc/PID/comm */
	UMC_STAT_CMDLINE_LEN = 128,   /* the start of /proc/PID/cmdline, arguments joined by spaces */
	UMC_STAT_READ_MS = 50,	      /* a reader waits this long for a record being written */
	UMC_STAT_KEEP_GONE = 64,      /* files of gone processes a new process leaves in place */
};

/* What became of the process (hdr.state). */
enum umc_stat_state {
	UMC_STAT_RUNNING = 1,
	UMC_STAT_EXITED = 2, /* exit(3) ran: the values are final */
};

/* The kinds of record, in the order of the header's sections. */
enum umc_stat_kind { UMC_STAT_FAULTS, UMC_STAT_DEV, UMC_STAT_QP, UMC_STAT_GRP, UMC_STAT_NKIND };

/* One section: @slots records of one kind. */
struct umc_stat_sect {
	uint64_t off;		   /* the first record */
	uint64_t names_off;	   /* @ncnt names of UMC_STAT_NAME_LEN bytes (0: none) */
	uint32_t slots;		   /* records */
	uint32_t size;		   /* bytes per record, a multiple of UMC_STAT_ALIGN */
	uint32_t cnt_off;	   /* the counter block within a record */
	uint32_t ncnt;		   /* 64-bit counters per record (0: none) */
	_Atomic uint64_t overflow; /* records that found no free slot (not shown) */
};

struct umc_stat_hdr {
	char magic[8];		/* UMC_STAT_MAGIC, NUL-padded */
	uint32_t version;	/* UMC_STAT_VERSION */
	uint32_t hdr_size;	/* UMC_STAT_HDR_SIZE */
	uint64_t file_size;
	int32_t pid;
	uint32_t uid;		/* the effective uid that made it */
	uint64_t start_ticks;	/* /proc/PID/stat starttime: with the PID, names the process */
	int64_t created_sec;	/* CLOCK_REALTIME when the file was made */
	_Atomic uint32_t state; /* enum umc_stat_state */
	uint32_t nsect;		/* sections in @sect (UMC_STAT_NKIND) */
	char comm[UMC_STAT_COMM_LEN];
	char cmdline[UMC_STAT_CMDLINE_LEN];
	struct umc_stat_sect sect[UMC_STAT_NKIND];
};
static_assert(sizeof(struct umc_stat_hdr) <= UMC_STAT_HDR_SIZE, "the header fits its size");

/* Every record starts so. */
struct umc_stat_rec {
	_Atomic uint32_t seq; /* odd while the writer changes the record */
	uint32_t used;	      /* 0: a free slot */
};

/* The rules of injected faults in force (umc-faults(7)). */
struct umc_stat_faults {
	struct umc_stat_rec rec; /* used: rules are in force */
	char spec[UMC_STAT_FAULTS_TEXT]; /* canonical, seed included */
};

/* A device (one port, port 1). */
struct umc_stat_dev {
	struct umc_stat_rec rec;
	char name[64];	     /* umc_lo, umc_ib0 */
	char netdev[16];     /* the interface behind a RoCE port */
	uint8_t link_layer;  /* IBV_LINK_LAYER_INFINIBAND 1, _ETHERNET 2 */
	uint8_t port_state;  /* enum ibv_port_state */
	uint8_t active_mtu;  /* enum ibv_mtu */
	uint8_t reserved;
	uint16_t lid, sm_lid;
	uint8_t gid[16];     /* GID index 0 */
	uint64_t node_guid;  /* host order */
};

/* A QP. */
struct umc_stat_qp {
	struct umc_stat_rec rec;
	uint32_t qpn;
	uint16_t dev;	     /* its device's slot */
	uint8_t qp_type;     /* enum ibv_qp_type */
	uint8_t state;	     /* enum ibv_qp_state */
	uint32_t qkey;
	uint16_t pkey_index;
	uint16_t nattach;    /* groups it is attached to */
	uint32_t max_send_wr, max_recv_wr;
};

/* A CM join of a group (rdma_join_multicast). */
struct umc_stat_join {
	uint32_t id;	     /* the rdma_cm_id's number in this process */
	uint8_t join_state;  /* the JoinState it asked for: 1 full, 8 send-only full */
	uint8_t state;	     /* enum umc_stat_join_state */
	uint16_t reserved;
};

enum umc_stat_join_state {
	UMC_STAT_JOINING = 1, /* no event yet */
	UMC_STAT_JOINED = 2,  /* RDMA_CM_EVENT_MULTICAST_JOIN */
	UMC_STAT_ERROR = 3,   /* RDMA_CM_EVENT_MULTICAST_ERROR */
};

/* A multicast group of a device. */
struct umc_stat_group {
	struct umc_stat_rec rec;
	uint16_t dev;	     /* its device's slot */
	uint16_t mlid;	     /* InfiniBand; 0 on RoCE */
	uint8_t join_state;  /* the JoinState bits the port holds */
	uint8_t family;	     /* of @addr: 0 none (attached by MGID only), 4, 6 */
	uint16_t nqp;	     /* QPs attached; qpn[] lists the first UMC_STAT_GRP_QPS */
	uint16_t njoin;	     /* CM joins; join[] lists the first UMC_STAT_GRP_IDS */
	uint16_t reserved;
	uint8_t addr[16];    /* the IP group address the CM joined (4 or 16 bytes) */
	uint8_t mgid[16];
	uint32_t qpn[UMC_STAT_GRP_QPS];
	struct umc_stat_join join[UMC_STAT_GRP_IDS];
};


/* The counters of a file: names, in the order of their blocks. */
struct umc_stat_layout {
	uint32_t ncnt[UMC_STAT_NKIND];		    /* counters per record (devices, groups) */
	const char *const *names[UMC_STAT_NKIND]; /* their names */
};

/* A counters file as its writer holds it. */
struct umc_stat_file {
	uint8_t *base;	/* the mapping (or anonymous memory) */
	size_t size;
	bool file;	/* a file: RUNDIR/PID.stat; else anonymous memory */
	char path[256];
	struct umc_stat_sect sect[UMC_STAT_NKIND]; /* the layout, kept in process memory */
	bool busy[UMC_STAT_NKIND][UMC_STAT_MAX_SLOTS]; /* the slots this process gave out */
	uint32_t nbusy[UMC_STAT_NKIND];		      /* how many */
};

/**
 * umc_stat_create - make this process's counters file in @dir (NULL: no
 * file, the same layout in anonymous memory, so that counting works
 * without one), map it, and write its header and counter names.
 * @f:      the file, filled in
 * @dir:    the run directory (rundir.h), already checked private
 * @layout: the counters
 *
 * A file of the same name (a dead process with this PID) is replaced.
 * The file is created 0600 (O_EXCL after unlinking, O_NOFOLLOW).
 *
 * Context: blocks (file system).
 * Returns: 0 or -errno (-ENOMEM, open(2), ftruncate(2) or mmap(2)'s);
 * on failure nothing is left behind.
 */
int umc_stat_create(struct umc_stat_file *f, const char *dir, const struct umc_stat_layout *layout);

/**
 * umc_stat_prune - keep the files of at most @keep processes of @dir that
 * are gone without exit(3) (killed, _exit(2)): the oldest others go, with
 * their control sockets.  Files of running processes, and files that are
 * not counters files, are left alone.
 * Context: blocks (file system).
 */
void umc_stat_prune(const char *dir, int keep);

/* umc_stat_close - unmap, and unlink the file if @unlink_file. */
void umc_stat_close(struct umc_stat_file *f, bool unlink_file);

/**
 * umc_stat_slot_get - give out a free slot of @kind and mark it used
 * (under a write, so its old fields are cleared and its counters zeroed).
 * Context: the caller serializes every write to @f (one lock).
 * Returns: the slot, or -ENOSPC (counted in the section's overflow).
 */
int umc_stat_slot_get(struct umc_stat_file *f, enum umc_stat_kind kind);

/* umc_stat_slot_put - free slot @i of @kind.  Context: as umc_stat_slot_get. */
void umc_stat_slot_put(struct umc_stat_file *f, enum umc_stat_kind kind, int i);

/* The record in slot @i of @kind. */
void *umc_stat_rec(const struct umc_stat_file *f, enum umc_stat_kind kind, int i);

/* The counter block of slot @i of @kind (UMC_STAT_DEV, UMC_STAT_GRP). */
_Atomic uint64_t *umc_stat_counters(const struct umc_stat_file *f, enum umc_stat_kind kind,
				    int i);

/*
 * umc_stat_write_begin / umc_stat_write_end - around every change of a
 * record's fields (the seqlock).  Context: the caller serializes writers.
 */
void umc_stat_write_begin(struct umc_stat_rec *r);
void umc_stat_write_end(struct umc_stat_rec *r);

/*
 * umc_stat_proc_start - process @pid's start time, in clock ticks after
 * boot (proc(5), /proc/PID/stat field 22 starttime); 0 if it cannot be
 * read (no such process).  With the PID it names one process: a PID
 * reused later has another start time.
 */
uint64_t umc_stat_proc_start(pid_t pid);

/* umc_stat_set_state - the process's fate (enum umc_stat_state). */
void umc_stat_set_state(struct umc_stat_file *f, enum umc_stat_state state);

/* ------------------------------------------------------------------------- */
/* Reading (umc-stat, tests): a file mapped read-only, checked before use.   */

struct umc_stat_view {
	const uint8_t *base;
	size_t size;
	struct umc_stat_hdr hdr; /* a checked copy of the header */
};

/**
 * umc_stat_open - map the counters file @path read-only and check its
 * header: magic, major version, and every section inside the file.
 * @v:   the view
 * @err: on failure, why (one line)
 *
 * Returns: 0; -errno of open(2)/fstat(2)/mmap(2) (-ENOENT, -EACCES ...);
 * -EPROTONOSUPPORT (another major version); -EBADMSG (not a counters file,
 * or a header that does not fit the file).
 */
int umc_stat_open(const char *path, struct umc_stat_view *v, char err[128]);

void umc_stat_view_close(struct umc_stat_view *v);

/**
 * umc_stat_read - copy record @i of @kind into @out (@size bytes at most,
 * the rest zeroed), consistently.
 * Returns: 0; -ENOENT (a free slot); -EAGAIN (torn: the writer stopped in
 * the middle of changing it; @out holds the last copy); -ERANGE (@i out
 * of range).
 */
int umc_stat_read(const struct umc_stat_view *v, enum umc_stat_kind kind, int i, void *out,
		  size_t size);

/* The number of slots of @kind (0 when the file has no such section). */
int umc_stat_slots(const struct umc_stat_view *v, enum umc_stat_kind kind);

/* Counter @c of slot @i of @kind (0 when out of range). */
uint64_t umc_stat_counter(const struct umc_stat_view *v, enum umc_stat_kind kind, int i,
			  uint32_t c);

/* The name of counter @c of @kind, NUL-terminated into @buf. */
const char *umc_stat_counter_name(const struct umc_stat_view *v, enum umc_stat_kind kind,
				  uint32_t c, char buf[UMC_STAT_NAME_LEN + 1]);

/* The number of counters per record of @kind. */
uint32_t umc_stat_ncounters(const struct umc_stat_view *v, enum umc_stat_kind kind);

/* The process's state (enum umc_stat_state) as the file says. */
uint32_t umc_stat_state(const struct umc_stat_view *v);

#endif /* UMC_STAT_H */
