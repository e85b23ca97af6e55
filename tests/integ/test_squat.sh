#!/usr/bin/env bash
# test_squat.sh - another process holds a data port with a plain UDP
# socket (no SO_REUSEADDR), in a network namespace of the test's own
# (issue 32, defect 1):
#
#   1. RoCEv2, 0.0.0.0:4791 held: rdma_join_multicast fails with
#      EADDRINUSE (umc-mckey: "failure joining: Address already in use"),
#      and stderr names the port, the group and the holder ("UDP port 4791
#      of GROUP is held by process PID (python3)");
#   2. RoCEv2, GROUP:4791 held: the same for GROUP, and another group is
#      joined and received;
#   3. RoCEv2, 127.0.0.1:4791 held: a group still works, and the unicast
#      demultiplexer says within 2 s that unicast to 127.0.0.1 cannot be
#      received, naming the holder;
#   4. the InfiniBand link (umc-sm's default multicast forwarding),
#      0.0.0.0:4796 held: the join completes and every message arrives
#      (umc-sm forwards the MLID by unicast: fwd_squatted 1).
#
# Needs root (a network namespace) and python3: exits 77 otherwise.
set -u

BIN=${UMC_BIN:?UMC_BIN is set by ctest}
SKIP=77
[ "$(id -u)" -eq 0 ] && unshare -n true 2>/dev/null || { echo "SKIP: needs root for a network namespace"; exit $SKIP; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit $SKIP; }
if [ -z "${UMC_SQUAT_INNER:-}" ]; then
	exec unshare -n env UMC_SQUAT_INNER=1 bash "$0" "$@"
fi
ip link set lo up
ip route add 224.0.0.0/4 dev lo src 127.0.0.1

# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/umc-squat.XXXXXX")
PIDS=()
FAILS=0
cleanup() {
	stop_pids 5 "${PIDS[@]}"
	if [ "$FAILS" -eq 0 ] && [ -z "${KEEP_WORK:-}" ]; then rm -rf "$WORK"; else echo "# outputs kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
fail() {
	echo "FAIL: $*"
	FAILS=$((FAILS + 1))
}
pass() { echo "ok: $*"; }

# squat ADDR PORT: a python3 process holding ADDR:PORT (plain bind) until
# the test ends; SQ is its pid once it holds it.
squat() {
	python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
print("held", flush=True)
time.sleep(60)' "$1" "$2" >"$WORK/squat.out" 2>&1 &
	SQ=$!
	PIDS+=("$SQ")
	wait_grep "$WORK/squat.out" '^held' 5 "$SQ" || { fail "cannot hold $1:$2: $(cat "$WORK/squat.out")"; exit 1; }
}
unsquat() {
	stop_pids 5 "$SQ"
}

# mckey NAME SECS ARGS...: umc-mckey on lo for at most SECS; its exit status.
mckey() {
	local name=$1 secs=$2
	shift 2
	timeout -k 2 "$secs" "$BIN/umc-mckey" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
}

G1=239.71.$((RANDOM % 250 + 1)).1
G2=239.71.$((RANDOM % 250 + 1)).2

# 1. RoCEv2, every address held.
squat 0.0.0.0 4791
mckey r1 10 -m "$G1" -b 127.0.0.1 -C 1
st=$?
grep -q 'failure joining: Address already in use' "$WORK/r1.err" && [ $st -ne 0 ] &&
	pass "0.0.0.0:4791 held: the join fails with EADDRINUSE" ||
	fail "0.0.0.0:4791 held: status $st, $(cat "$WORK/r1.out" "$WORK/r1.err")"
want="umcast: UDP port 4791 of $G1 is held by process $SQ (python3)"
grep -qF "$want" "$WORK/r1.err" && pass "stderr: $want" || fail "stderr lacks '$want': $(cat "$WORK/r1.err")"
unsquat

# 2. RoCEv2, one group's address held: that group fails, another works.
squat "$G1" 4791
mckey r2 10 -m "$G1" -b 127.0.0.1 -C 1
grep -q 'failure joining: Address already in use' "$WORK/r2.err" && pass "$G1:4791 held: its join fails" ||
	fail "$G1:4791 held: $(cat "$WORK/r2.out" "$WORK/r2.err")"
grep -qF "umcast: UDP port 4791 of $G1 is held by process $SQ (python3)" "$WORK/r2.err" ||
	fail "stderr: $(cat "$WORK/r2.err")"
timeout -k 2 20 "$BIN/umc-mckey" -m "$G2" -b 127.0.0.1 -C 5 >"$WORK/r3.out" 2>&1 &
r3=$!
PIDS+=("$r3")
wait_grep "$WORK/r3.out" 'joined' 10 "$r3"
mckey s3 20 -m "$G2" -b 127.0.0.1 -s -o -C 5 || fail "sender to $G2: $(cat "$WORK/s3.out")"
wait_pid 15 "$r3" && grep -q 'received 5 messages' "$WORK/r3.out" && pass "$G2 received alongside" ||
	fail "$G2: $(cat "$WORK/r3.out")"
unsquat

# 3. RoCEv2, the unicast port of 127.0.0.1 held.
squat 127.0.0.1 4791
timeout -k 2 20 "$BIN/umc-mckey" -m "$G2" -b 127.0.0.1 -C 5 >"$WORK/r4.out" 2>"$WORK/r4.err" &
r4=$!
PIDS+=("$r4")
want="umcast: UDP port 4791 of 127.0.0.1 is held by process $SQ (python3)"
wait_grep "$WORK/r4.err" "unicast to this address cannot be received" 5 "$r4" &&
	grep -qF "$want" "$WORK/r4.err" && pass "unicast: $want" || fail "unicast: $(cat "$WORK/r4.err")"
mckey s4 20 -m "$G2" -b 127.0.0.1 -s -o -C 5 || fail "sender to $G2: $(cat "$WORK/s4.out")"
wait_pid 15 "$r4" && grep -q 'received 5 messages' "$WORK/r4.out" && pass "$G2 received with the unicast port held" ||
	fail "$G2, unicast port held: $(cat "$WORK/r4.out")"
unsquat

# 4. The InfiniBand link: umc-sm's data port held on every address.
squat 0.0.0.0 4796
"$BIN/umc-sm" -v --listen 127.0.0.1:0 >"$WORK/sm.out" 2>"$WORK/sm.err" &
sm=$!
PIDS+=("$sm")
wait_grep "$WORK/sm.out" '^umc-sm: ready on ' 10 "$sm" || { fail "umc-sm: $(cat "$WORK/sm.err")"; exit 1; }
export UMC_SM
UMC_SM=$(sed -n 's/^umc-sm: ready on \([0-9.]*:[0-9]*\) .*/\1/p' "$WORK/sm.out")
timeout -k 2 20 "$BIN/umc-mckey" -m "$G1" -b 127.0.0.2 -C 5 >"$WORK/r5.out" 2>&1 &
r5=$!
PIDS+=("$r5")
wait_grep "$WORK/r5.out" 'joined|fail|error' 10 "$r5"
mckey s5 20 -m "$G1" -b 127.0.0.2 -s -o -C 5 || fail "InfiniBand sender: $(cat "$WORK/s5.out")"
wait_pid 15 "$r5" && grep -q 'received 5 messages' "$WORK/r5.out" &&
	pass "InfiniBand: 4796 held, every message received" || fail "InfiniBand: $(cat "$WORK/r5.out")"
kill -TERM "$sm"
wait_pid 10 "$sm"
grep -q '^umc-sm: counter fwd_squatted 1$' "$WORK/sm.err" && pass "umc-sm forwards the MLID by unicast" ||
	fail "umc-sm: $(grep fwd_squatted "$WORK/sm.err")"
unsquat

[ "$FAILS" -eq 0 ] && { echo "PASS"; exit 0; }
echo "FAIL: $FAILS check(s) failed"
exit 1
