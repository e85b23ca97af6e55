// SPDX-License-Identifier: MIT
/*
 * objects.c - the library's objects in the process's counters file
 * (objects.h; the file's format is stat.h).
 *
 * Everything written to the file is kept here too, in process memory (a
 * group's joins, its record): a record is rewritten whole from that copy
 * under its sequence number, and nothing is ever read back from the file.
 * Groups are found by device and MGID in a hash table; each holds its
 * users' count.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "stat/objects.h"
#include "stat/stat.h"
#include "verbs/verbs_int.h"

static const char *const dev_names[] = {
#define UMC_COUNTER_NAME(name) #name,
	UMC_COUNTERS(UMC_COUNTER_NAME)
#undef UMC_COUNTER_NAME
};

static const char *const grp_names[] = {
#define UMC_GRP_COUNTER_NAME(name) #name,
	UMC_GROUP_COUNTERS(UMC_GRP_COUNTER_NAME)
#undef UMC_GRP_COUNTER_NAME
};

static_assert(sizeof(struct umc_counters) == sizeof(dev_names) / sizeof(dev_names[0]) * 8,
	      "a device's counters are the file's 64-bit words, in their names' order");
static_assert(sizeof(struct umc_grp_counters) == sizeof(grp_names) / sizeof(grp_names[0]) * 8,
	      "a group's counters are the file's 64-bit words, in their names' order");

struct grp {
	struct grp *next; /* in its hash bucket */
	struct umc_device *dev;
	union ibv_gid mgid;
	int refs;
	int slot; /* in the file, or -1 */
	struct umc_grp_counters *cnt; /* the file's, or @own */
	struct umc_grp_counters own;
	struct umc_stat_group rec; /* what the file holds, kept here */
	struct umc_stat_join *joins; /* every join; rec lists the first UMC_STAT_GRP_IDS */
	int njoins, cap;
};

enum { GRP_BUCKETS = 1024 }; /* a device may have UMC_MAX_MCAST_GRP groups */

static pthread_mutex_t umc_stat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umc_stat_file umc_stat_file;
static bool umc_stat_ready;
static struct grp *umc_stat_grps[GRP_BUCKETS];

UMC_ATFORK_MUTEX(umc_stat_lock, UMC_LOCK_STAT, umc_stat_lib_forked)

int umc_stat_lib_init(const char *dir)
{
	const struct umc_stat_layout layout = {
		.ncnt = {[UMC_STAT_DEV] = sizeof(dev_names) / sizeof(dev_names[0]),
			 [UMC_STAT_GRP] = sizeof(grp_names) / sizeof(grp_names[0])},
		.names = {[UMC_STAT_DEV] = dev_names, [UMC_STAT_GRP] = grp_names},
	};
	int ret;

	/* What killed processes leave behind is kept, but not forever. */
	if (dir)
		umc_stat_prune(dir, UMC_STAT_KEEP_GONE);
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	ret = dir ? umc_stat_create(&umc_stat_file, dir, &layout) : -ENOENT;
	if (ret && umc_stat_create(&umc_stat_file, NULL, &layout)) {
		umc_mutex_unlock(&umc_stat_lock);
		return -ENOMEM;
	}
	umc_stat_ready = true;
	umc_mutex_unlock(&umc_stat_lock);
	return ret;
}

const char *umc_stat_lib_path(void)
{
	return umc_stat_file.file ? umc_stat_file.path : "";
}

/* At exit(3): final values, then the file goes (a killed process's stays). */
void umc_stat_lib_exit(void)
{
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	if (umc_stat_ready && umc_stat_file.file) {
		umc_stat_set_state(&umc_stat_file, UMC_STAT_EXITED);
		/* The mapping stays: threads may still count until the process ends. */
		unlink(umc_stat_file.path);
	}
	umc_mutex_unlock(&umc_stat_lock);
}

/*
 * In a child of fork (every library lock held): the parent's file is not
 * the child's.  Its mapping becomes private zeroes at the same address,
 * so that the parent's objects, which the child may still touch, count
 * there and not in the parent's file; the child makes its own file at its
 * first use of a device.  The parent's groups stay listed (their devices
 * are the parent's, which no new record names), with no record.
 */
void umc_stat_lib_forked(void)
{
	if (umc_stat_ready && umc_stat_file.file)
		mmap(umc_stat_file.base, umc_stat_file.size, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	memset(&umc_stat_file, 0, sizeof(umc_stat_file));
	umc_stat_ready = false;
	for (int b = 0; b < GRP_BUCKETS; b++)
		for (struct grp *g = umc_stat_grps[b]; g; g = g->next)
			g->slot = -1;
}

/* ------------------------------------------------------------------------- */
/* Devices.                                                                  */

/* What @dev's record shows of its port, asked of its link (which takes dev->lock). */
struct dev_port {
	struct ibv_port_attr attr;
	char netdev[IF_NAMESIZE];
};

static void dev_port_read(struct umc_device *dev, struct dev_port *p)
{
	unsigned ifindex;

	memset(p, 0, sizeof(*p));
	dev->link->query_port(dev, &p->attr);
	if (dev->link->netdev(dev, p->netdev, &ifindex))
		p->netdev[0] = 0;
}

/* Context: the lock held. */
static void dev_write(struct umc_device *dev, const struct dev_port *p)
{
	const struct ibv_port_attr attr = p->attr;
	struct umc_stat_dev *d;

	if (dev->stat_slot < 0)
		return;
	d = umc_stat_rec(&umc_stat_file, UMC_STAT_DEV, dev->stat_slot);
	umc_stat_write_begin(&d->rec);
	snprintf(d->name, sizeof(d->name), "%s", dev->ibdev.name);
	snprintf(d->netdev, sizeof(d->netdev), "%.*s", IF_NAMESIZE - 1, p->netdev);
	d->link_layer = dev->link->link_layer;
	d->port_state = (uint8_t)attr.state;
	d->active_mtu = (uint8_t)attr.active_mtu;
	d->lid = attr.lid;
	d->sm_lid = attr.sm_lid;
	if (__atomic_load_n(&dev->gid_count, __ATOMIC_ACQUIRE))
		memcpy(d->gid, dev->gids[0].raw, 16);
	d->node_guid = dev->guid;
	umc_stat_write_end(&d->rec);
}

struct umc_counters *umc_stat_dev_add(struct umc_device *dev)
{
	struct umc_counters *cnt;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	/* The device list holds at most UMC_MAX_DEVICES = UMC_STAT_DEV_SLOTS: never full. */
	dev->stat_slot = umc_stat_slot_get(&umc_stat_file, UMC_STAT_DEV);
	cnt = (struct umc_counters *)umc_stat_counters(&umc_stat_file, UMC_STAT_DEV,
						       dev->stat_slot);
	umc_mutex_unlock(&umc_stat_lock);
	return cnt;
}

void umc_stat_dev_port(struct umc_device *dev)
{
	struct dev_port p;

	dev_port_read(dev, &p); /* not under the lock, which dev->lock's holders take */
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	if (umc_stat_ready)
		dev_write(dev, &p);
	umc_mutex_unlock(&umc_stat_lock);
}

/* ------------------------------------------------------------------------- */
/* QPs.                                                                      */

static void qp_write(struct umc_qp *qp)
{
	struct umc_stat_qp *q = umc_stat_rec(&umc_stat_file, UMC_STAT_QP, qp->stat_slot);
	/* qp->attached is dev->lock's: only its length is read, without it. */
	int n = __atomic_load_n(&qp->nattach, __ATOMIC_RELAXED);

	umc_stat_write_begin(&q->rec);
	q->qpn = qp->ibqp.qp_num;
	q->dev = (uint16_t)qp->dev->stat_slot;
	q->qp_type = (uint8_t)qp->ibqp.qp_type;
	q->state = (uint8_t)umc_qp_state(qp);
	q->qkey = atomic_load_explicit(&qp->qkey, memory_order_relaxed);
	q->pkey_index = qp->pkey_index;
	q->nattach = (uint16_t)n;
	q->max_send_wr = qp->cap.max_send_wr;
	q->max_recv_wr = qp->cap.max_recv_wr;
	umc_stat_write_end(&q->rec);
}

void umc_stat_qp_add(struct umc_qp *qp)
{
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	qp->stat_slot = umc_stat_ready ? umc_stat_slot_get(&umc_stat_file, UMC_STAT_QP) : -1;
	if (qp->stat_slot >= 0)
		qp_write(qp);
	umc_mutex_unlock(&umc_stat_lock);
}

void umc_stat_qp_set(struct umc_qp *qp)
{
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	if (umc_stat_ready && qp->stat_slot >= 0)
		qp_write(qp);
	umc_mutex_unlock(&umc_stat_lock);
}

void umc_stat_qp_del(struct umc_qp *qp)
{
	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	if (umc_stat_ready && qp->stat_slot >= 0)
		umc_stat_slot_put(&umc_stat_file, UMC_STAT_QP, qp->stat_slot);
	qp->stat_slot = -1;
	umc_mutex_unlock(&umc_stat_lock);
}

/* ------------------------------------------------------------------------- */
/* Groups.                                                                   */

/* The bucket of group @mgid of @dev: MGIDs differ in their last bytes. */
static struct grp **grp_bucket(const struct umc_device *dev, const union ibv_gid *mgid)
{
	uint32_t h = (uint32_t)(uintptr_t)dev * 2654435761u;

	for (int i = 10; i < 16; i++)
		h = (h ^ mgid->raw[i]) * 16777619u;
	return &umc_stat_grps[h % GRP_BUCKETS];
}

static struct grp *grp_find(struct umc_device *dev, const union ibv_gid *mgid)
{
	for (struct grp *g = *grp_bucket(dev, mgid); g; g = g->next)
		if (g->dev == dev && !memcmp(&g->mgid, mgid, sizeof(*mgid)))
			return g;
	return NULL;
}

static void grp_write(struct grp *g)
{
	struct umc_stat_group *r;
	uint8_t js = 0;

	if (g->slot < 0)
		return;
	g->rec.njoin = (uint16_t)g->njoins;
	for (int i = 0; i < g->njoins; i++) {
		if (g->joins[i].state == UMC_STAT_JOINED)
			js |= g->joins[i].join_state;
		if (i < UMC_STAT_GRP_IDS)
			g->rec.join[i] = g->joins[i];
	}
	g->rec.join_state = js;
	r = umc_stat_rec(&umc_stat_file, UMC_STAT_GRP, g->slot);
	umc_stat_write_begin(&r->rec);
	memcpy((uint8_t *)r + sizeof(r->rec), (uint8_t *)&g->rec + sizeof(g->rec.rec),
	       sizeof(*r) - sizeof(r->rec));
	umc_stat_write_end(&r->rec);
}

/* Hold group @mgid of @dev, made on first use.  Context: the lock held. */
static struct grp *grp_hold(struct umc_device *dev, const union ibv_gid *mgid)
{
	struct grp *g = grp_find(dev, mgid);

	if (g) {
		g->refs++;
		return g;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->dev = dev;
	g->mgid = *mgid;
	g->refs = 1;
	g->slot = umc_stat_ready ? umc_stat_slot_get(&umc_stat_file, UMC_STAT_GRP) : -1;
	g->cnt = g->slot >= 0 ? (struct umc_grp_counters *)umc_stat_counters(
					&umc_stat_file, UMC_STAT_GRP, g->slot)
			      : &g->own;
	g->rec.dev = (uint16_t)dev->stat_slot;
	memcpy(g->rec.mgid, mgid->raw, 16);
	g->next = *grp_bucket(dev, mgid);
	*grp_bucket(dev, mgid) = g;
	grp_write(g);
	return g;
}

/* Drop a hold; the last frees the group and its record.  Context: the lock held. */
static void grp_drop(struct grp *g)
{
	if (--g->refs)
		return;
	for (struct grp **pp = grp_bucket(g->dev, &g->mgid); *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	if (g->slot >= 0)
		umc_stat_slot_put(&umc_stat_file, UMC_STAT_GRP, g->slot);
	free(g->joins);
	free(g);
}

/* A group whose record could not be made counts here, as nobody's. */
static struct umc_grp_counters umc_stat_grp_lost;

struct umc_grp_counters *umc_stat_grp_get(struct umc_device *dev, const union ibv_gid *mgid)
{
	struct grp *g;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	g = grp_hold(dev, mgid);
	umc_mutex_unlock(&umc_stat_lock);
	return g ? g->cnt : &umc_stat_grp_lost;
}

void umc_stat_grp_put(struct umc_device *dev, const union ibv_gid *mgid)
{
	struct grp *g;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	g = grp_find(dev, mgid);
	if (g)
		grp_drop(g);
	umc_mutex_unlock(&umc_stat_lock);
}

void umc_stat_grp_qps(struct umc_device *dev, const struct umc_mcg *mcg, uint16_t mlid)
{
	struct grp *g;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	g = grp_find(dev, &mcg->mgid);
	if (g) {
		g->rec.nqp = (uint16_t)mcg->nqp;
		for (int i = 0; i < mcg->nqp && i < UMC_STAT_GRP_QPS; i++)
			g->rec.qpn[i] = mcg->qps[i]->ibqp.qp_num;
		if (mlid)
			g->rec.mlid = mlid;
		grp_write(g);
	}
	umc_mutex_unlock(&umc_stat_lock);
}

/* Room for one more join of @g; false when there is none. */
static bool joins_room(struct grp *g)
{
	struct umc_stat_join *j;
	int cap = g->cap ? 2 * g->cap : 4;

	if (g->njoins < g->cap)
		return true;
	j = realloc(g->joins, (size_t)cap * sizeof(*j));
	if (!j)
		return false;
	g->joins = j;
	g->cap = cap;
	return true;
}

void umc_stat_grp_join(struct umc_device *dev, const union ibv_gid *mgid, uint32_t id,
		       const struct sockaddr *addr, uint8_t join_state, int state)
{
	struct grp *g;
	int i = 0;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	g = grp_find(dev, mgid);
	while (g && i < g->njoins && g->joins[i].id != id)
		i++;
	if (!g || i == g->njoins) {
		if (!state) /* a join never seen: nothing to forget */
			goto out;
		g = grp_hold(dev, mgid); /* the join's hold */
		if (!g)
			goto out;
		if (!joins_room(g)) {
			grp_drop(g);
			goto out;
		}
		i = g->njoins++;
		g->joins[i] = (struct umc_stat_join){.id = id};
	}
	if (!state) { /* the join goes, and its hold */
		memmove(&g->joins[i], &g->joins[i + 1],
			(size_t)(g->njoins - i - 1) * sizeof(g->joins[0]));
		g->njoins--;
		grp_write(g);
		grp_drop(g);
		goto out;
	}
	g->joins[i].join_state = join_state;
	g->joins[i].state = (uint8_t)state;
	if (addr && !g->rec.family && addr->sa_family == AF_INET) {
		g->rec.family = 4;
		memcpy(g->rec.addr, &((const struct sockaddr_in *)addr)->sin_addr, 4);
	} else if (addr && !g->rec.family && addr->sa_family == AF_INET6) {
		g->rec.family = 6;
		memcpy(g->rec.addr, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
	}
	grp_write(g);
out:
	umc_mutex_unlock(&umc_stat_lock);
}

/* ------------------------------------------------------------------------- */
/* Faults.                                                                   */

void umc_stat_faults_set(const char *canon)
{
	struct umc_stat_faults *f;

	umc_mutex_lock(&umc_stat_lock, UMC_LOCK_STAT);
	if (umc_stat_ready) {
		f = umc_stat_rec(&umc_stat_file, UMC_STAT_FAULTS, 0);
		umc_stat_write_begin(&f->rec);
		f->rec.used = canon[0] != 0;
		snprintf(f->spec, sizeof(f->spec), "%s", canon);
		umc_stat_write_end(&f->rec);
	}
	umc_mutex_unlock(&umc_stat_lock);
}
