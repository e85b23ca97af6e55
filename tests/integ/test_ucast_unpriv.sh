#!/usr/bin/env bash
# test_ucast_unpriv.sh - unicast needs no privilege (link/roce/uc/):
#   - the kill scenario (election, forwarding, hand-over after SIGKILL) run
#     entirely as an unprivileged user;
#   - the ping-pong scenario with the processes of two users on one host
#     (UC_PROCS_ODD_UID: agents B and D drop to that user), one
#     demultiplexer serving both.
# As root the agents drop to nobody (UC_PROCS_UID) inside the test's own
# namespace; as another user the first part runs as that user (in a user
# namespace if one can be made) and the second is left out.
set -u
BIN=${UMC_BIN:?UMC_BIN is set by ctest}/uc_procs
NOBODY=65534

if [ "$(id -u)" -ne 0 ]; then
	"$BIN" kill || exit 1
	echo "SKIP: two users need root to set up"
	exit 0
fi
UC_PROCS_UID=$NOBODY "$BIN" kill || exit 1
UC_PROCS_ODD_UID=$NOBODY "$BIN" pingpong
