// SPDX-License-Identifier: MIT
/*
 * control.c - umc-sm's faults on demand (umc-ctl(1), umc-sm(8) RUN-TIME
 * CONTROL): fail over, answer nothing for a while, reject the joins of a
 * group with a chosen MAD status.
 *
 * umc_sm_control() takes one decoded request of the control socket
 * (wire/ctl_proto.h) and fills the reply; main.c serves the socket.  Like
 * the rest of the state it is pure: the time comes from the caller.  A
 * rejected group is kept as an sa rule of umc-faults(7) ("sa group=G
 * reject=S"), parsed and matched by the same code as the library's, so a
 * group is written, and matches an MGID, as there.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sm.h"

uint16_t umc_sm_reject_status(const struct umc_sm *sm, const uint8_t mgid[16])
{
	for (int i = 0; i < sm->faults.nreject; i++)
		if (umc_fault_group_match(&sm->faults.reject[i], mgid))
			return sm->faults.reject[i].reject;
	return 0;
}

bool umc_sm_silent(struct umc_sm *sm, uint64_t now)
{
	if (now >= sm->faults.silent_until)
		return false;
	sm->cnt.silent_dropped++;
	return true;
}

/* Is @a the group of @b (the same address or MGID, as written)? */
static bool same_group(const struct umc_fault_rule *a, const struct umc_fault_rule *b)
{
	return a->group_v4 == b->group_v4 && !memcmp(a->group, b->group, a->group_v4 ? 4 : 16);
}

static void do_reject(struct umc_sm *sm, const struct umc_ctl_msg *req, struct umc_ctl_msg *rep)
{
	struct umc_sm_faults *f = &sm->faults;
	char spec[UMC_CTL_TEXT_MAX + 64], err[UMC_FAULT_ERR_MAX], line[UMC_CTL_TEXT_MAX + 128];
	struct umc_fault_spec s;
	int i;

	/* The status is checked by the parser too: any but 0, which turns it off. */
	snprintf(spec, sizeof(spec), "sa group=%s reject=%u", req->text, req->arg ? req->arg : 1);
	if (req->arg > 0xffff || strpbrk(req->text, " \t\r\n;") ||
	    umc_fault_spec_parse(spec, &s, err)) {
		rep->status = -EINVAL;
		snprintf(line, sizeof(line), "%s: not a group (an IPv4 or IPv6 multicast address, "
					     "or an MGID)", req->text);
		umc_ctl_set_text(rep, line);
		return;
	}
	s.rule[0].reject = (uint16_t)req->arg;
	for (i = 0; i < f->nreject && !same_group(&f->reject[i], &s.rule[0]); i++)
		;
	if (!req->arg) {
		if (i < f->nreject)
			f->reject[i] = f->reject[--f->nreject];
		snprintf(line, sizeof(line), "joins of %s are answered again", req->text);
	} else if (i == f->nreject && f->nreject == UMC_SM_REJECT_MAX) {
		rep->status = -ENOSPC;
		snprintf(line, sizeof(line), "already %d groups rejected", UMC_SM_REJECT_MAX);
	} else {
		if (i == f->nreject)
			f->nreject++;
		f->reject[i] = s.rule[0];
		snprintf(line, sizeof(line), "joins of %s are rejected with status 0x%04x (%s)",
			 req->text, req->arg, umc_sa_status_str((uint16_t)req->arg));
	}
	umc_sm_log(sm, UMC_SM_LOG_INFO, "umc-ctl: %s", line);
	umc_ctl_set_text(rep, line);
}

void umc_sm_control(struct umc_sm *sm, uint64_t now, const struct umc_ctl_msg *req,
		    struct umc_ctl_msg *rep)
{
	char line[128];

	switch (req->op) {
	case UMC_CTL_SM_FAILOVER:
		if (umc_sm_failover(sm)) {
			rep->status = -ENOMEM;
			return;
		}
		snprintf(line, sizeof(line), "failed over: epoch 0x%016llx, no ports, no groups",
			 (unsigned long long)sm->epoch);
		break;
	case UMC_CTL_SM_SILENT:
		if (req->arg > UMC_CTL_MAX_SECS) {
			rep->status = -EINVAL;
			snprintf(line, sizeof(line), "silent takes 0 to %d seconds", UMC_CTL_MAX_SECS);
			break;
		}
		sm->faults.silent_until = now + (uint64_t)req->arg * 1000;
		snprintf(line, sizeof(line), req->arg ? "silent for %u s" : "answering again",
			 req->arg);
		break;
	case UMC_CTL_SM_REJECT:
		return do_reject(sm, req, rep);
	default:
		rep->status = -EOPNOTSUPP;
		snprintf(line, sizeof(line), "%s is not for umc-sm: it takes failover, silent "
					     "and reject", umc_ctl_op_str(req->op));
		break;
	}
	if (!rep->status)
		umc_sm_log(sm, UMC_SM_LOG_INFO, "umc-ctl: %s", line);
	umc_ctl_set_text(rep, line);
}
