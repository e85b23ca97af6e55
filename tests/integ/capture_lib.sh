# shellcheck shell=bash
# capture_lib.sh - a live tshark capture on lo for the capture tests
# (test_capture.sh, test_ib_capture.sh); sourced, not a test by itself.
#
# tshark prints one summary line per captured frame (-P) on a FIFO that is
# read with read -t, so readiness and completion are seen, not guessed: a
# unicast probe datagram to 127.0.0.1:CAP_PROBE_PORT, which the capture
# filter always lets through, shows when the capture is live.  Every wait
# is bounded; tshark is stopped by its PID.
#
# The caller sources test_mckey_lib.sh first: $WORK (a private directory),
# fail(), and PIDS, the processes killed on exit (tshark is added).

CAP_PID=
CAP_PROBE_PORT=$((40000 + $$ % 20000))

# cap_is_probe LINE : is LINE tshark's summary of a probe ("... 60638 → 40786
# Len=5")?  By the port and the length after it: the port's digits alone
# also stand in other frames' lines, in a timestamp such as 0.640786.
cap_is_probe() {
	case $1 in *" $CAP_PROBE_PORT Len="*) return 0 ;; esac
	return 1
}

# capture_start PCAP FILTER : capture on lo what FILTER (a BPF expression)
# or the probe matches into PCAP (classic pcap).  Returns 0 once live, 77
# (with a SKIP line) without permission to capture, 1 otherwise.
capture_start() {
	local pcap=$1 filter=$2 live=0 line
	mkfifo "$WORK/live"
	timeout -k 2 90 tshark -n -l -i lo -P -F pcap -w "$pcap" -a duration:80 \
		-f "udp and (($filter) or (dst host 127.0.0.1 and dst port $CAP_PROBE_PORT))" \
		>"$WORK/live" 2>"$WORK/tshark.err" &
	CAP_PID=$!
	PIDS+=("$CAP_PID")
	exec 3<"$WORK/live"
	for _ in $(seq 100); do
		printf 'probe' 2>/dev/null >"/dev/udp/127.0.0.1/$CAP_PROBE_PORT"
		if IFS= read -r -t 0.2 -u 3 line; then
			cap_is_probe "$line" && { live=1; break; }
		fi
		kill -0 "$CAP_PID" 2>/dev/null || break
	done
	[ "$live" -eq 1 ] && return 0
	if grep -qiE 'permission|not permitted|capture privileges|socket: Operation' "$WORK/tshark.err"; then
		echo "SKIP: no permission to capture on lo:"
		cat "$WORK/tshark.err"
		return 77
	fi
	cat "$WORK/tshark.err"
	fail "the capture on lo did not start"
	return 1
}

# capture_wait N : wait (10 s at most between frames) until tshark has
# reported N frames other than probes; fails the test otherwise.
capture_wait() {
	local seen=0 line
	while [ $seen -lt "$1" ] && IFS= read -r -t 10 -u 3 line; do
		cap_is_probe "$line" || seen=$((seen + 1))
	done
	[ $seen -eq "$1" ] || fail "tshark saw $seen datagrams live, expected $1"
}

# capture_stop : end the capture (SIGINT, so the file is complete).
capture_stop() {
	kill -INT "$CAP_PID" 2>/dev/null
	wait_until 10 gone "$CAP_PID" || fail "tshark did not stop"
	CAP_PID=
	exec 3<&-
}
