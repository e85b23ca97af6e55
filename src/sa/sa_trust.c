// SPDX-License-Identifier: MIT
/*
 * sa_trust.c - whom a umcast process trusts with its traffic on this host
 * (sa_trust.h), and who owns a local UDP socket.
 *
 * A squatter is a process that binds, before the rightful owner, the
 * address every process of the host meets at: umc-sm's UDP address, or a
 * RoCE unicast demultiplexer's abstract name.  Nothing in umcast's
 * protocols can tell it apart (they carry no credentials); the kernel can:
 * it knows the owner of every socket (sock_diag(7), SO_PEERCRED in
 * unix(7)), and a user's process cannot make a socket another user's.  A
 * process therefore believes only a holder of a user it trusts: its own
 * (which could trace it anyway), root, and those it is told to.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "sa/sa_trust.h"
#include "umc_param.h"

enum { TRUST_MAX = 32, DIAG_WAIT_MS = 100 };

static struct {
	pthread_once_t once;
	int n;
	uid_t uid[TRUST_MAX];
	bool have_sm_user;
	uid_t sm_user;
} trust = {.once = PTHREAD_ONCE_INIT};

/* The uid of user @name (or a number), into *@uid; false if none. */
static bool lookup_uid(const char *name, uid_t *uid)
{
	struct passwd pw, *res = NULL;
	char buf[1024], *end;
	unsigned long v;

	if (isdigit((unsigned char)name[0])) {
		errno = 0;
		v = strtoul(name, &end, 10);
		if (errno || *end || v >= (uid_t)-1)
			return false;
		*uid = (uid_t)v;
		return true;
	}
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) || !res)
		return false;
	*uid = res->pw_uid;
	return true;
}

static void trust_read(void)
{
	const char *env = getenv("UMC_TRUST_UIDS");
	char list[512], *save = NULL;

	trust.have_sm_user = lookup_uid(UMC_SM_USER, &trust.sm_user);
	if (!env || strlen(env) >= sizeof(list))
		return;
	strcpy(list, env);
	for (char *t = strtok_r(list, ", ", &save); t && trust.n < TRUST_MAX;
	     t = strtok_r(NULL, ", ", &save)) {
		if (lookup_uid(t, &trust.uid[trust.n]))
			trust.n++;
		else
			fprintf(stderr, "umcast: UMC_TRUST_UIDS: no user %s\n", t);
	}
}

bool umc_trusted_uid(uid_t uid, bool sm)
{
	pthread_once(&trust.once, trust_read);
	if (uid == geteuid() || uid == 0 || (sm && trust.have_sm_user && uid == trust.sm_user))
		return true;
	for (int i = 0; i < trust.n; i++)
		if (trust.uid[i] == uid)
			return true;
	return false;
}

int umc_sock_diag_open(void)
{
	struct timeval tv = {.tv_usec = DIAG_WAIT_MS * 1000};
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

int umc_udp_receiver(int nl, const struct sockaddr_in *to, const struct sockaddr_in *from,
		     struct umc_udp_sock *out)
{
	/*
	 * The socket that receives a datagram from @from to @to: udp_dump_one
	 * looks the request's source and destination up as a packet's.  The
	 * answer's source is the socket's own (local) address.
	 */
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
	    .nlh = {.nlmsg_len = sizeof(q),
		    .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		    .nlmsg_flags = NLM_F_REQUEST,
		    .nlmsg_seq = 1},
	    .req = {.sdiag_family = AF_INET,
		    .sdiag_protocol = IPPROTO_UDP,
		    .idiag_states = ~0u,
		    .id = {.idiag_sport = from->sin_port,
			   .idiag_dport = to->sin_port,
			   .idiag_src = {from->sin_addr.s_addr},
			   .idiag_dst = {to->sin_addr.s_addr},
			   .idiag_cookie = {INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE}}},
	};
	union {
		struct nlmsghdr nlh;
		uint8_t buf[512];
	} a;
	const struct inet_diag_msg *msg;
	ssize_t n;

	if (send(nl, &q, sizeof(q), 0) != (ssize_t)sizeof(q))
		return -errno;
	n = recv(nl, &a, sizeof(a), 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(a.nlh) || !NLMSG_OK(&a.nlh, (size_t)n))
		return -EBADMSG;
	if (a.nlh.nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(&a.nlh);

		return a.nlh.nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error ? e->error : -EBADMSG;
	}
	if (a.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY || a.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*msg)))
		return -EBADMSG;
	msg = NLMSG_DATA(&a.nlh);
	out->uid = msg->idiag_uid;
	out->inode = msg->idiag_inode;
	memset(&out->bound, 0, sizeof(out->bound));
	out->bound.sin_family = AF_INET;
	out->bound.sin_addr.s_addr = msg->id.idiag_src[0];
	out->bound.sin_port = msg->id.idiag_sport;
	return 0;
}

pid_t umc_pid_of_inode(uint64_t inode, char *comm, size_t len)
{
	char want[48], path[320], link[64];
	DIR *proc = opendir("/proc");
	struct dirent *p;
	pid_t found = 0;

	if (len)
		comm[0] = 0;
	if (!proc)
		return 0;
	snprintf(want, sizeof(want), "socket:[%llu]", (unsigned long long)inode);
	while (!found && (p = readdir(proc))) {
		DIR *fds;
		struct dirent *f;

		if (!isdigit((unsigned char)p->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		if (!(fds = opendir(path)))
			continue; /* another user's, or gone */
		while ((f = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%.16s", p->d_name, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n > 0 && (link[n] = 0, !strcmp(link, want))) {
				found = (pid_t)atoi(p->d_name);
				break;
			}
		}
		closedir(fds);
	}
	closedir(proc);
	if (found && len) {
		FILE *c;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)found);
		if ((c = fopen(path, "re"))) {
			if (fgets(comm, (int)len, c))
				comm[strcspn(comm, "\n")] = 0;
			fclose(c);
		}
	}
	return found;
}
