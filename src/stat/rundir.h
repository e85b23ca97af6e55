/* SPDX-License-Identifier: MIT */
/*
 * rundir.h - where a user's umcast processes keep their counters files
 * (PID.stat, stat.h) and control sockets (PID.ctl, wire/ctl_proto.h).
 *
 * The directory is $UMC_RUN_DIR when set, otherwise /dev/shm/umcast-UID
 * (/tmp/umcast-UID where /dev/shm is not a directory): memory, not disk,
 * and one per user.  It is created 0700 and used only while it is a
 * directory (not a symbolic link) owned by the user with no permission for
 * group or others, so that nobody else can read a counters file, reach a
 * control socket, or put a file of their own in its place.
 *
 * The same-host path's group files (link/shm/shm.h) are in its
 * subdirectory RUNDIR/shm (UMC_RUNDIR_SHM): apart from the counters files,
 * so that what killed processes leave there costs nothing to a process's
 * start, which reads the run directory (umc_stat_prune(), stat.h).
 */
#ifndef UMC_STAT_RUNDIR_H
#define UMC_STAT_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

enum { UMC_RUNDIR_MAX = 200 }; /* bytes of the directory's path, NUL included */

#define UMC_RUNDIR_SHM "shm" /* the same-host path's subdirectory */

/**
 * umc_rundir_path - the run directory of user @uid (see above).
 * Returns: 0, or -ENAMETOOLONG.
 */
int umc_rundir_path(uid_t uid, char *buf, size_t size);

/**
 * umc_rundir_of - the run directory process @pid uses: $UMC_RUN_DIR when
 * set, else that of the user /proc/PID belongs to, else (the process is
 * gone) the caller's.  Returns: 0, or -ENAMETOOLONG.
 */
int umc_rundir_of(pid_t pid, char *buf, size_t size);

/**
 * umc_rundir_make - the calling process's run directory (its effective
 * uid's), made if missing, then checked: a directory, not a link, owned
 * by the effective uid, mode without group or other bits.
 * Returns: 0; -EPERM (it exists but is not private: its path and mode
 * are in @why), or mkdir(2)/lstat(2)'s -errno.
 */
int umc_rundir_make(char *buf, size_t size, char *why, size_t why_size);

/**
 * umc_rundir_make_shm - the same-host path's subdirectory of the calling
 * process's run directory (RUNDIR/shm): umc_rundir_make(), then the
 * subdirectory made if missing and checked the same way.
 * Returns: as umc_rundir_make(); -ENAMETOOLONG if the path does not fit @size.
 */
int umc_rundir_make_shm(char *buf, size_t size, char *why, size_t why_size);

/**
 * umc_rundir_glob - the pattern every user's default run directory
 * matches ("/dev/shm/umcast-*"), or the one directory $UMC_RUN_DIR names:
 * where root looks for every process.
 */
const char *umc_rundir_glob(char *buf, size_t size);

#endif /* UMC_STAT_RUNDIR_H */
