#!/usr/bin/env bash
# The README's example program: a full-member receiver and a send-only
# sender on loopback; the receiver must print exactly the message sent.
set -u
bin=${UMC_BIN:?UMC_BIN is set by ctest}/hello_mcast
group=239.7.7.7
out=$(mktemp)
trap 'kill $rpid 2>/dev/null; rm -f "$out"' EXIT

timeout 20 "$bin" recv 127.0.0.1 $group >"$out" 2>&1 &
rpid=$!
# Wait (bounded) for the receiver's join line: it is attached from then on.
for _ in $(seq 200); do
	grep -q '^joined' "$out" && break
	kill -0 $rpid 2>/dev/null || break
	sleep 0.05
done
grep -q "^joined $group (MGID ::ffff:$group, Q_Key 0x1234567)" "$out" || {
	echo "receiver did not join:"; cat "$out"; exit 1; }

timeout 20 "$bin" send 127.0.0.1 $group "hello, multicast" || { echo "sender failed"; exit 1; }
wait $rpid || { echo "receiver failed:"; cat "$out"; exit 1; }
cat "$out"
grep -Eq '^received 16 bytes from QP 0x[0-9a-f]+: hello, multicast$' "$out" || {
	echo "receiver output wrong"; exit 1; }
echo "1 passed, 0 failed"
