#!/usr/bin/env bash
# The README's example program: a full-member receiver and a send-only
# sender on loopback; the receiver must print exactly the message sent.
set -u
bin=${UMC_BIN:?UMC_BIN is set by ctest}/hello_mcast
group=239.7.7.7
out=$(mktemp)
# shellcheck source=../lib/wait.sh
. "$(dirname "$0")/../lib/wait.sh"
rpid=
trap 'stop_pids 5 $rpid; rm -f "$out"' EXIT

timeout 20 "$bin" recv 127.0.0.1 $group >"$out" 2>&1 &
rpid=$!
# The receiver's join line: it is attached from then on.
wait_grep "$out" '^joined' 10 $rpid
grep -q "^joined $group (MGID ::ffff:$group, Q_Key 0x1234567)" "$out" || {
	echo "receiver did not join:"; cat "$out"; exit 1; }

timeout 10 "$bin" send 127.0.0.1 $group "hello, multicast" || { echo "sender failed"; exit 1; }
wait_pid 10 $rpid || { echo "receiver failed:"; cat "$out"; exit 1; }
cat "$out"
grep -Eq '^received 16 bytes from QP 0x[0-9a-f]+: hello, multicast$' "$out" || {
	echo "receiver output wrong"; exit 1; }
echo "1 passed, 0 failed"
