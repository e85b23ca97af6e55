#!/usr/bin/env bash
# bench/sm-bench.sh - umc-sm beside OpenSM 3.3.23 on ibsim (issue 8): SA joins
# per second from 8 client processes, and the time to create 10 000 groups.
#
#   bench/sm-bench.sh                       build (Release, build-bench/) and measure
#   REPS=5 PROCS=8 JOINS=500 CREATE=10000 bench/sm-bench.sh
#
# Prints a table and the lines
#   ratio sm_joins_vs_opensm VALUE     umc-sm joins/s / OpenSM joins/s
#   ratio sm_create_vs_opensm VALUE    OpenSM seconds / umc-sm seconds (10 000 groups)
#   ratio sm_joins_floor_vs_opensm VALUE  sa-null joins/s / OpenSM joins/s
#   ratio sm_joins_vs_floor VALUE      umc-sm joins/s / sa-null joins/s
# (medians of the per-repetition ratios of back-to-back runs, with their
# spread), also written to $BUILD/sm-bench-summary.txt.  sa-null
# (bench/sa-null.c) is the floor: it answers the same datagrams with
# umc-sm's loop (poll, recvmmsg, sendmmsg) and does nothing else, so no SA
# over umc-sm's transport can reach a higher sm_joins_vs_opensm than its
# sm_joins_floor_vs_opensm but by the machine's noise (one pair may show
# umc-sm above sa-null; the median should not); it runs between umc-sm
# and OpenSM in each repetition, with the same client.
#
# How the comparison is kept fair:
# - One client program (tests/integ/sa_diff: sa_client bench) sends the same
#   MADs to both SAs: a SubnAdmSet(MCMemberRecord) with the kernel's create
#   mask 0x130C7, JoinState FullMember, Q_Key 0x01234567, P_Key 0xFFFF, for
#   an MGID no other join uses, so every join creates its group; each
#   process waits for a join's reply before sending the next, as one
#   rdma_join_multicast caller does.  Every reply must be a success with an
#   MLID, or the run fails.
# - Joins: PROCS (8) processes start together (released by a pipe), each
#   with its own port: a port registered with umc-sm, or an ibsim HCA
#   (H2..H9 of a fabric with PROCS+1 HCAs; ibsim serves at most 10
#   clients, and OpenSM is one).  Each makes JOINS joins; the rate is all
#   joins over the time from the first start to the last end.
# - 10 000 groups: one process creates CREATE groups, all of which exist at
#   the end.  ibsim's default MulticastFDBCap is 1024, which gives OpenSM
#   only MLIDs 0xC000..0xC3FF (the 1024th group would get NO_RESOURCES), so
#   OpenSM runs on a fabric built with -M 16384: the whole MLID space
#   (0xC000..0xFFFE), as umc-sm has.  So both SAs hold all 10 000 groups at
#   once and no deletes are mixed into the timing.  (A group with a single
#   member needs no forwarding-table change in OpenSM either.)
# - Every measurement starts from a fresh SA (a new umc-sm; a new ibsim +
#   OpenSM), so no run inherits another's groups; start-up is not timed.
#   umc-sm and OpenSM are measured back to back in each repetition.
# - What "OpenSM on ibsim" includes: each MAD goes client -> umad2sim ->
#   ibsim -> umad2sim -> OpenSM and back (unix sockets, two simulator hops
#   each way), while umc-sm is one loopback UDP datagram each way.  That is
#   the set-up the issue asks to compare with; it says nothing of OpenSM on
#   hardware.  OpenSM logs at its default level (-D 0x03), flushed per line.
# - Each side's transport waits for a reply as cheaply as its interface
#   lets it (sleeping, never spinning): umc-sm's in one blocking recv(),
#   OpenSM's in libibumad's umad_recv() (a poll() and a read()).  Neither
#   makes a syscall per MAD that the MAD does not need (the TransactionID's
#   pid is read once).
#
# Everything runs in a private network namespace when one can be made
# (unshare -n), every process under timeout(1), readiness by pipe.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build-bench}
REPS=${REPS:-5}
PROCS=${PROCS:-8}
JOINS=${JOINS:-500}     # joins per process
CREATE=${CREATE:-10000} # groups (GROUPS is a bash variable)
PROC_TIMEOUT=${PROC_TIMEOUT:-600}
OPENSM_SH=$ROOT/tests/integ/sa_diff/opensm.sh
CLIENT=$BUILD/bin/sa_client
UMC_SM=$BUILD/bin/umc-sm
SA_NULL=$BUILD/bin/sa-null
# shellcheck source=bench/netns.sh
. "$ROOT/bench/netns.sh"

log() { printf '%s\n' "$*" >&2; }
die() { log "sm-bench: $*"; exit 1; }

# --- build (outside the namespace) -------------------------------------------
if [ -z "${UMC_BENCH_INNER:-}" ]; then
	bench_build sm-bench umc-sm sa-null sa_client || die "build failed (sa_client needs libibumad-dev)"
	bench_netns_enter -n "${BASH_SOURCE[0]}" "$@"
	export UMC_BENCH_INNER=host
fi
bench_netns_lo

[ -x "$CLIENT" ] || die "$CLIENT not built (libibumad-dev: scripts/deps.sh test)"
[ -x "$UMC_SM" ] || die "$UMC_SM not built"
[ -x "$SA_NULL" ] || die "$SA_NULL not built"
[ "$PROCS" -ge 1 ] && [ "$PROCS" -le 9 ] || die "PROCS must be 1..9 (ibsim serves 10 clients, OpenSM is one)"
[ "$CREATE" -ge 1 ] && [ "$CREATE" -le 16382 ] || die "CREATE must be 1..16382 (0xC001..0xFFFE)"
rc=0
"$OPENSM_SH" -- true || rc=$?
[ "$rc" = 77 ] && { log "sm-bench: OpenSM/ibsim not installed: nothing to compare with"; exit 77; }
[ "$rc" = 0 ] || die "OpenSM on ibsim does not start"

TMP=$(mktemp -d /tmp/umc-sm-bench.XXXXXX)
SM_PID=
cleanup() {
	if [ -n "$SM_PID" ]; then
		kill "$SM_PID" 2>/dev/null || true
		wait "$SM_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# value NAME FILE: VAL = the number on FILE's "result NAME" line, or "-"
value() {
	VAL=$(sed -n "s/^result $1 \\([0-9.]*\\)$/\\1/p" "$2")
	VAL=${VAL:--}
}

# on_server SERVER... -- NAME BENCH-ARGS...: a fresh SA server (umc-sm or
# sa-null), one sa_client bench run; VAL = NAME's value (not in a subshell:
# the EXIT trap must see SM_PID)
on_server() {
	local server=() name ready addr
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	name=$2
	shift 2
	rm -f "$TMP/ready"
	mkfifo "$TMP/ready"
	"${server[@]}" --listen 127.0.0.1:0 --ready-fd 3 3>"$TMP/ready" >/dev/null 2>"$TMP/sa.log" &
	SM_PID=$!
	read -r -t 30 ready <"$TMP/ready" || die "${server[0]##*/} did not get ready: $(tail -3 "$TMP/sa.log")"
	addr=${ready#*ready on }
	addr=${addr%% *}
	timeout "$PROC_TIMEOUT" "$CLIENT" --sm "$addr" bench "$@" >"$TMP/run.out" 2>"$TMP/run.err" ||
		log "   ${server[0]##*/} bench $*: failed: $(tail -3 "$TMP/run.err")"
	kill "$SM_PID"
	wait "$SM_PID" || die "${server[0]##*/} did not exit cleanly: $(tail -3 "$TMP/sa.log")"
	SM_PID=
	value "$name" "$TMP/run.out"
}

# on_umc_sm NAME BENCH-ARGS...: against a fresh umc-sm.  One port creates
# all CREATE groups: above umc-sm's default caps of 8192.
on_umc_sm() { on_server "$UMC_SM" --max-groups-per-port 16384 --max-groups-per-host 16384 -- "$@"; }

# on_null NAME BENCH-ARGS...: against sa-null, an SA that does nothing (the floor)
on_null() { on_server "$SA_NULL" -- "$@"; }

# on_opensm NAME HCAS BENCH-ARGS...: a fresh ibsim + OpenSM, one run; VAL = NAME's value
on_opensm() {
	local name=$1 hcas=$2
	shift 2
	timeout "$PROC_TIMEOUT" "$OPENSM_SH" -n "$hcas" -M 16384 -- "$CLIENT" --opensm bench "$@" \
		>"$TMP/run.out" 2>"$TMP/run.err" ||
		log "   OpenSM bench $*: failed: $(tail -3 "$TMP/run.err")"
	value "$name" "$TMP/run.out"
}

median() { # numbers on stdin -> the median (lower middle), or "-" if none
	grep -v -e '^-$' -e '^$' | sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "-"}'
}
# pairs "a1 a2 .." "b1 b2 ..": the paired ratios a_k/b_k, one per line
pairs() {
	awk -v A="$1" -v B="$2" 'BEGIN {
		n = split(A, a, " "); split(B, b, " ")
		for (i = 1; i <= n; i++)
			if (a[i] != "-" && b[i] != "-" && b[i] + 0 > 0)
				printf "%.6f\n", a[i] / b[i] }'
}
pratio() { pairs "$1" "$2" | median | awk '{ if ($1 == "-") print "-"; else printf "%.2f\n", $1 }'; }
prange() { pairs "$1" "$2" | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {if (NR) printf "%.2f-%.2f\n", lo, hi; else print "-"}'; }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "== $REPS repetitions: joins ($PROCS processes x $JOINS), create $CREATE groups"
J_SM= J_OSM= J_NULL= C_SM= C_OSM=
for ((r = 1; r <= REPS; r++)); do
	on_umc_sm joins_per_sec joins "$PROCS" "$JOINS"
	j_sm=$VAL
	on_null joins_per_sec joins "$PROCS" "$JOINS"
	j_null=$VAL
	on_opensm joins_per_sec "$PROCS" joins "$PROCS" "$JOINS"
	j_osm=$VAL
	on_umc_sm create_seconds create "$CREATE"
	c_sm=$VAL
	on_opensm create_seconds 1 create "$CREATE"
	c_osm=$VAL
	log "   rep $r: joins/s umc-sm $j_sm, sa-null $j_null, OpenSM $j_osm;" \
		"create $CREATE: umc-sm $c_sm s, OpenSM $c_osm s (load $(cut -d' ' -f1 /proc/loadavg))"
	J_SM+="$j_sm " J_OSM+="$j_osm " J_NULL+="$j_null " C_SM+="$c_sm " C_OSM+="$c_osm "
done

med() { tr ' ' '\n' | median; }
r_joins=$(pratio "$J_SM" "$J_OSM")
r_floor=$(pratio "$J_NULL" "$J_OSM")
r_vs_floor=$(pratio "$J_SM" "$J_NULL")
r_create=$(pratio "$C_OSM" "$C_SM")
{
	echo "SA joins and group creation: umc-sm vs OpenSM 3.3.23 on ibsim ($REPS repetitions, medians)"
	printf '  %-36s %14s %14s %8s  (pairs: %s)\n' "" umc-sm OpenSM ratio range
	printf '  %-36s %14s %14s %8s  (%s)\n' "joins/s, $PROCS processes x $JOINS" \
		"$(med <<<"$J_SM")" "$(med <<<"$J_OSM")" "$r_joins" "$(prange "$J_SM" "$J_OSM")"
	printf '  %-36s %14s %14s %8s  (%s)\n' "seconds to create $CREATE groups" \
		"$(med <<<"$C_SM")" "$(med <<<"$C_OSM")" "$r_create" "$(prange "$C_OSM" "$C_SM")"
	printf '  %-36s %14s %14s %8s  (%s)\n' "joins/s, sa-null (the floor)" \
		"$(med <<<"$J_NULL")" "$(med <<<"$J_OSM")" "$r_floor" "$(prange "$J_NULL" "$J_OSM")"
	printf '  %-36s %14s %14s %8s  (%s)\n' "joins/s, umc-sm / sa-null" \
		"$(med <<<"$J_SM")" "$(med <<<"$J_NULL")" "$r_vs_floor" "$(prange "$J_SM" "$J_NULL")"
	echo "  (sa-null answers the same datagrams with the same loop and does nothing else:"
	echo "   no SA over umc-sm's transport can beat it but by noise; load $LOAD_BEFORE before, $(cut -d' ' -f1-3 /proc/loadavg) after)"
	echo
	echo "ratio sm_joins_vs_opensm $r_joins"
	echo "ratio sm_create_vs_opensm $r_create"
	echo "ratio sm_joins_floor_vs_opensm $r_floor"
	echo "ratio sm_joins_vs_floor $r_vs_floor"
} | tee "$TMP/table"
grep '^ratio ' "$TMP/table" >"$BUILD/sm-bench-summary.txt"
log "summary: $BUILD/sm-bench-summary.txt"
