/* SPDX-License-Identifier: MIT */
/*
 * objects.h - what the process's counters file (stat.h) shows of the
 * library's objects: each device with its port and counters, each QP,
 * each multicast group with its CM joins, attached QPs and counters, and
 * the injected faults in force.  umc-stat(1) reads it.
 *
 * The counters are the memory the data path counts in: a device's
 * dev->cnt and a group's counters point into the file (into anonymous
 * memory of the same layout when there is no file), so nothing is counted
 * twice and nothing is copied.  Every other field is written here, under
 * one lock, when it changes; none of it is on the data path.
 *
 * Context of every function: any thread; takes the file's lock
 * (UMC_LOCK_STAT, after every lock of a device, QP or CM id, which
 * callers may hold).  None fails: an
 * object that finds no free record is counted in the section's overflow
 * and counted privately.
 */
#ifndef UMC_STAT_OBJECTS_H
#define UMC_STAT_OBJECTS_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct umc_device;
struct umc_qp;
struct umc_mcg;
struct umc_counters;
struct umc_grp_counters;

/*
 * umc_stat_lib_init - make the process's counters file in @dir (NULL: the
 * same records in anonymous memory), before the first device registers.
 * The file goes at exit(3) (the state says EXITED first, for a reader that
 * has it open); a killed process's file stays.
 * Returns: 0 with a file, or -errno (counting then goes to memory).
 */
int umc_stat_lib_init(const char *dir);

/* umc_stat_lib_exit - at exit(3): the state says EXITED, then the file goes. */
void umc_stat_lib_exit(void);

/* umc_stat_lib_path - the file's path, or "" without one. */
const char *umc_stat_lib_path(void);

/* umc_stat_dev_add - @dev's record: its counters, never NULL.  Context: umc_dev_register. */
struct umc_counters *umc_stat_dev_add(struct umc_device *dev);

/*
 * umc_stat_dev_port - @dev's port changed (state, LID, MTU, GID 0): write
 * it again.  Context: not under dev->lock (the link's query_port takes it).
 */
void umc_stat_dev_port(struct umc_device *dev);

/* A QP appeared, changed (state, Q_Key, attachments) or went. */
void umc_stat_qp_add(struct umc_qp *qp);
void umc_stat_qp_set(struct umc_qp *qp);
void umc_stat_qp_del(struct umc_qp *qp);

/*
 * umc_stat_grp_get / umc_stat_grp_put - the counters of group @mgid of
 * @dev, held by a user (a group's receive side, an address handle to it,
 * a CM join); the record lives while someone holds it.  Never NULL.
 */
struct umc_grp_counters *umc_stat_grp_get(struct umc_device *dev, const union ibv_gid *mgid);
void umc_stat_grp_put(struct umc_device *dev, const union ibv_gid *mgid);

/* umc_stat_grp_qps - the QPs attached to @mcg and its MLID, written again. */
void umc_stat_grp_qps(struct umc_device *dev, const struct umc_mcg *mcg, uint16_t mlid);

/*
 * umc_stat_grp_join - CM join number @id (its rdma_cm_id's, umc-stat's "id")
 * of group @mgid on @dev, from IP group @addr (NULL: an MGID join), asking
 * @join_state: now in @state (enum umc_stat_join_state), or gone when
 * @state is 0.  Adds the join on first sight; holds the group meanwhile.
 */
void umc_stat_grp_join(struct umc_device *dev, const union ibv_gid *mgid, uint32_t id,
		       const struct sockaddr *addr, uint8_t join_state, int state);

/* umc_stat_faults_set - the rules in force ("" for none), canonical with their seed. */
void umc_stat_faults_set(const char *canon);

/* umc_stat_lib_forked - in a child of fork: the parent's records are not the child's. */
void umc_stat_lib_forked(void);

#endif /* UMC_STAT_OBJECTS_H */
