#!/usr/bin/env bash
# rxe-qemu.sh - exchange RoCEv2 traffic between umcast and real Linux
# soft-RoCE (rdma_rxe), the latter running in a QEMU guest.
#
# The guest is a Debian 12 (bookworm) system made with debootstrap: Linux
# 6.1 with rdma_rxe, rdma-core, ibverbs-utils (ibv_ud_pingpong) and
# rdmacm-utils (mckey).  It boots under QEMU (TCG: no KVM needed) from an
# ext4 image built with mkfs.ext4 -d, runs a small init of ours as PID 1,
# creates rxe0 on its eth0 and serves commands from the host on TCP port
# 7777 (socat): one line in, its output and "@@rc=N" out.
#
# The guest's NIC is a tap device in a network namespace of its own
# ($RXE_NS, default umc-rxe): host side 10.77.0.1/24, guest 10.77.0.2/24,
# 224.0.0.0/4 routed over the link on both sides.  Every umcast program runs
# inside that namespace, so it sees one RoCE device, umc_<tap>, and nothing
# crosses into other namespaces.
#
# Scenarios (each bounded by a timeout, each with its own capture of UDP
# port 4791 on the tap):
#   a   rxe mckey sender          -> umc-mckey receiver        (full member)
#   a2  rxe mckey sender          -> umc-run mckey receiver    (prebuilt mckey)
#   b   umc-mckey sender          -> rxe mckey receiver
#   b2  umc-run mckey sender      -> rxe mckey receiver
#   c1  umc-run ibv_ud_pingpong client -> rxe ibv_ud_pingpong server
#   c2  rxe ibv_ud_pingpong client     -> umc-run ibv_ud_pingpong server
#   d1  rxe mckey send-only sender     -> umc-mckey receiver
#   d2  umc-mckey send-only sender     -> rxe mckey receiver
#   e1, e2  as a and b with 1024-byte payloads (the port MTU on both sides)
#   f   umc-mckey send-only sender     -> rxe mckey receiver with 2 QPs
# For each it records the programs' output, the guest's rxe counters before
# and after, umcast's counters (UMC_STATS=1) and the packets on the wire per
# direction as tshark decodes them, with every packet's ICRC recomputed
# (Wireshark 4.0 does not verify it).
#
# Usage: rxe-qemu.sh [all|image|run|boot|clean] [SCENARIO...]
#   image  install the host packages, build the guest root and its image
#   run    image (when not up to date), then boot the guest and run the
#          scenarios (default: all of them); "all" is the same
#   boot   image, then boot the guest and keep it up (until it powers off)
#   clean  remove the namespace and everything under $RXE_DIR
# Run as root.  Idempotent: the guest image is built once and reused (the
# guest boots it with -snapshot, so it never changes); the namespace and tap
# are made again on every run.
#
# Environment:
#   RXE_DIR      work directory (default /var/tmp/umcast-rxe): root/, the
#                image, logs/ (one directory per run, logs/last links it)
#   UMC_BIN      umcast's tools (default: build/bin next to this script's
#                parent directory, else in PATH)
#   RXE_MIRROR   Debian mirror for debootstrap (default: the one the host's
#                apt sources use, scripts/apt-mirror.sh; without one,
#                debootstrap's own default)
#   RXE_NS       network namespace (default umc-rxe)
#   RXE_MEM, RXE_SMP   guest memory (default 1G) and CPUs (default 2)
#   RXE_BOOT_TIMEOUT   seconds to wait for the guest to be ready (default 600)
#   RXE_COUNT, RXE_SIZE  messages and payload bytes per scenario (100, 64)
#
# Exit status: 0 when every scenario run delivered every message / iteration,
# 1 when one did not, 2 when the rig could not be set up.

set -u
set -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${RXE_DIR:-/var/tmp/umcast-rxe}
ns=${RXE_NS:-umc-rxe}
tap=rxetap0
host_ip=10.77.0.1
guest_ip=10.77.0.2
ctl_port=7777
mem=${RXE_MEM:-1G}
smp=${RXE_SMP:-2}
boot_timeout=${RXE_BOOT_TIMEOUT:-600}
count=${RXE_COUNT:-100}
size=${RXE_SIZE:-64}
all_scenarios="a a2 b b2 c1 c2 d1 d2 e1 e2 f"
guest_pkgs=linux-image-amd64,initramfs-tools,kmod,iproute2,iputils-ping,procps,socat,rdma-core,ibverbs-providers,ibverbs-utils,rdmacm-utils

log() { printf 'rxe-qemu: %s\n' "$*" >&2; }
die() { log "$*"; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, namespaces, tap)"

if [ -n "${UMC_BIN:-}" ]; then
	bin=$UMC_BIN
elif [ -x "$here/../build/bin/umc-mckey" ]; then
	bin=$(cd "$here/../build/bin" && pwd)
elif [ -x "$here/umcast/build/bin/umc-mckey" ]; then
	bin=$here/umcast/build/bin
else
	bin=$(dirname "$(command -v umc-mckey 2>/dev/null || echo /nonexistent/x)")
fi

mirror() {
	if [ -n "${RXE_MIRROR:-}" ]; then
		echo "$RXE_MIRROR"
	else
		"$here/apt-mirror.sh" bookworm
	fi
}

# --- host packages ---------------------------------------------------------
host_deps() {
	local need=() p
	command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
	command -v debootstrap >/dev/null || need+=(debootstrap)
	command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
	command -v tshark >/dev/null && command -v dumpcap >/dev/null || need+=(tshark)
	command -v socat >/dev/null || need+=(socat)
	command -v ip >/dev/null || need+=(iproute2)
	command -v python3 >/dev/null || need+=(python3)
	[ ${#need[@]} -eq 0 ] && return 0
	log "installing ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${need[@]}" >"$dir/apt.log" 2>&1 ||
		{ tail -n 20 "$dir/apt.log" >&2; die "apt-get install failed"; }
	for p in qemu-system-x86_64 debootstrap mkfs.ext4 tshark dumpcap socat python3; do
		command -v $p >/dev/null || die "$p still missing"
	done
}

# --- the guest's own files -------------------------------------------------
# PID 1 of the guest: bring up the system by hand (no init system), create
# rxe0, then serve the host's commands until told to power off.
write_guest_init() {
	cat >"$1/sbin/rxe-init.new" <<'EOF'
#!/bin/bash
# PID 1 of the rxe-qemu guest (see rxe-qemu.sh on the host).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "rxe-guest: [$(cut -d' ' -f1 /proc/uptime 2>/dev/null)] $*"; }
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
hostname rxe-guest
say "kernel $(uname -r), root $(stat -f -c %T /)"
for m in virtio_net rdma_rxe ib_uverbs rdma_ucm; do
	modprobe $m || say "modprobe $m failed"
done
for i in $(seq 100); do [ -e /sys/class/net/eth0 ] && break; sleep 0.2; done
if [ ! -e /sys/class/net/eth0 ]; then
	for n in $(ls /sys/class/net); do
		[ "$n" = lo ] && continue
		say "renaming $n to eth0"
		ip link set "$n" name eth0 && break
	done
fi
if [ ! -e /sys/class/net/eth0 ]; then
	say "no eth0; interfaces: $(ls /sys/class/net)"
	for d in /sys/bus/pci/devices/*; do
		say "pci ${d##*/} $(cat $d/vendor $d/device | tr '\n' ' ')$(readlink $d/driver)"
	done
	say "modules: $(cut -d' ' -f1 /proc/modules | tr '\n' ' ')"
fi
ip link set lo up
ip addr add 10.77.0.2/24 dev eth0
ip link set eth0 up
ip route add 224.0.0.0/4 dev eth0
for i in $(seq 30); do ping -c1 -W1 10.77.0.1 >/dev/null 2>&1 && break; sleep 1; done
say "ping 10.77.0.1: $i tries"
if rdma link add rxe0 type rxe netdev eth0; then
	rdma link show
	# The table has 1024 entries; the interface's addresses are first.
	p=/sys/class/infiniband/rxe0/ports/1
	gids=
	for n in $(seq 0 7); do
		read -r v <$p/gids/$n 2>/dev/null || continue
		[ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
		read -r t <$p/gid_attrs/types/$n 2>/dev/null
		gids+="$n=$v($t) "
	done
	say "gids: $gids"
else
	say "rdma link add failed"
fi
socat -t 3600 TCP-LISTEN:7777,reuseaddr,fork EXEC:/sbin/rxe-cmd &
say READY
wait
say "control server ended: powering off"
echo o >/proc/sysrq-trigger
sleep 60
EOF
	# One command per connection: the line read is run by bash, its
	# output comes back, then "@@rc=" and its exit status.
	cat >"$1/sbin/rxe-cmd.new" <<'EOF'
#!/bin/bash
IFS= read -r line || exit 0
if [ "$line" = poweroff ]; then
	echo "@@rc=0"
	sync
	echo o >/proc/sysrq-trigger
	exit 0
fi
bash -c "$line" </dev/null 2>&1
echo "@@rc=$?"
EOF
	# Replaced only when changed, so that the image is remade only then.
	local f
	for f in rxe-init rxe-cmd; do
		chmod 755 "$1/sbin/$f.new"
		if cmp -s "$1/sbin/$f.new" "$1/sbin/$f"; then
			rm -f "$1/sbin/$f.new"
		else
			mv "$1/sbin/$f.new" "$1/sbin/$f"
		fi
	done
}

# --- guest root and image --------------------------------------------------
build_image() {
	local root=$dir/root tmp=$dir/root.new kver m
	mkdir -p "$dir"
	host_deps
	if [ ! -e "$root/.rxe-complete" ]; then
		rm -rf --one-file-system "$tmp"
		m=$(mirror)
		log "debootstrap bookworm${m:+ from $m} into $tmp (a few minutes)"
		# shellcheck disable=SC2086 # no mirror: debootstrap's default
		debootstrap --variant=minbase --include="$guest_pkgs" bookworm \
			"$tmp" $m >"$dir/debootstrap.log" 2>&1 ||
			{ tail -n 20 "$dir/debootstrap.log" >&2; die "debootstrap failed"; }
		# No udev in the guest: the initramfs must load the root
		# disk's drivers itself.
		printf '%s\n' virtio_pci virtio_blk ext4 >>"$tmp/etc/initramfs-tools/modules"
		kver=$(ls "$tmp/lib/modules" | sort -V | tail -n 1)
		[ -n "$kver" ] || die "no kernel in the guest root"
		chroot "$tmp" update-initramfs -u -k "$kver" >>"$dir/debootstrap.log" 2>&1 ||
			chroot "$tmp" update-initramfs -c -k "$kver" >>"$dir/debootstrap.log" 2>&1 ||
			die "update-initramfs failed"
		echo rxe-guest >"$tmp/etc/hostname"
		rm -rf --one-file-system "$root"
		touch "$tmp/.rxe-complete"
		mv "$tmp" "$root"
	fi
	write_guest_init "$root"
	if [ ! -e "$dir/root.img" ] || [ -n "$(find "$root/sbin/rxe-init" "$root/sbin/rxe-cmd" \
			"$root/.rxe-complete" -newer "$dir/root.img")" ]; then
		log "making $dir/root.img (mkfs.ext4 -d)"
		rm -f "$dir/root.img"
		truncate -s 3G "$dir/root.img.new"
		mkfs.ext4 -q -F -L rxe-root -d "$root" "$dir/root.img.new" ||
			die "mkfs.ext4 -d failed"
		mv "$dir/root.img.new" "$dir/root.img"
	fi
	kver=$(ls "$root/lib/modules" | sort -V | tail -n 1)
	cp "$root/boot/vmlinuz-$kver" "$dir/vmlinuz"
	cp "$root/boot/initrd.img-$kver" "$dir/initrd.img"
}

# --- the namespace and tap -------------------------------------------------
setup_net() {
	ip netns del "$ns" 2>/dev/null
	ip netns add "$ns" || die "ip netns add $ns failed"
	ip -n "$ns" link set lo up
	ip -n "$ns" tuntap add dev $tap mode tap || die "tuntap add failed"
	ip -n "$ns" addr add $host_ip/24 dev $tap
	ip -n "$ns" link set $tap up
	ip -n "$ns" route add 224.0.0.0/4 dev $tap
	ip netns exec "$ns" sysctl -q -w net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.$tap.rp_filter=0 net.ipv4.icmp_echo_ignore_broadcasts=0
}

nsx() { ip netns exec "$ns" "$@"; }

# --- talking to the guest --------------------------------------------------
# guest OUTFILE CMD: run CMD (one shell line) in the guest, its output into
# OUTFILE; returns CMD's exit status (255: no answer).  The connection is
# given up after $guest_timeout (default 900) seconds of silence.
guest() {
	local out=$1 rc tmo=${guest_timeout:-900}
	shift
	printf '%s\n' "$*" | nsx socat -t "$tmo" -T "$tmo" - TCP:$guest_ip:$ctl_port >"$out" 2>&1
	rc=$(sed -n 's/^@@rc=\([0-9]*\)$/\1/p' "$out" | tail -n 1)
	sed -i '/^@@rc=[0-9]*$/d' "$out"
	return "${rc:-255}"
}

# wait_for FILE REGEX SECONDS: until a line of FILE matches.
wait_for() {
	local i
	for ((i = 0; i < $3 * 4; i++)); do
		grep -Eq "$2" "$1" 2>/dev/null && return 0
		sleep 0.25
	done
	return 1
}

boot_guest() {
	local console=$run/console.log t0=$SECONDS i
	: >"$console"
	log "booting the guest (TCG, -m $mem -smp $smp); console in $console"
	ip netns exec "$ns" qemu-system-x86_64 -accel tcg,thread=multi -m "$mem" -smp "$smp" \
		-kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" \
		-append "root=/dev/vda ro console=ttyS0 net.ifnames=0 init=/sbin/rxe-init panic=-1" \
		-drive file="$dir/root.img",format=raw,if=virtio,snapshot=on \
		-netdev tap,id=n0,ifname=$tap,script=no,downscript=no \
		-device virtio-net-pci,netdev=n0,mac=52:54:00:77:00:02 \
		-nographic -monitor none -serial file:"$console" -no-reboot \
		-pidfile "$run/qemu.pid" >"$run/qemu.log" 2>&1 &
	qemu_pid=$!
	while ! grep -Eq '^rxe-guest: (\[[0-9.]*\] )?READY' "$console"; do
		kill -0 $qemu_pid 2>/dev/null || { cat "$run/qemu.log" >&2; die "qemu exited"; }
		((SECONDS - t0 > boot_timeout)) && die "guest not ready after ${boot_timeout}s"
		sleep 1
	done
	for ((i = 0; ; i++)); do
		guest "$run/ready.txt" 'echo up' && break
		((i < 30)) || die "guest control port not answering"
		sleep 1
	done
	boot_secs=$((SECONDS - t0))
	log "guest ready after ${boot_secs}s"
}

stop_guest() {
	[ -n "${qemu_pid:-}" ] || return 0
	if kill -0 "$qemu_pid" 2>/dev/null; then
		# The guest powers off without closing the connection.
		guest_timeout=5 guest "$run/poweroff.txt" poweroff >/dev/null 2>&1
		for ((i = 0; i < 60; i++)); do
			kill -0 "$qemu_pid" 2>/dev/null || break
			sleep 1
		done
		kill "$qemu_pid" 2>/dev/null
	fi
	wait "$qemu_pid" 2>/dev/null
	qemu_pid=
}

# cleanup: on exit, stop what this run started and remove the namespace.
cleanup() {
	[ -n "${cap_pid:-}" ] && kill -TERM "$cap_pid" 2>/dev/null
	stop_guest
	ip netns del "$ns" 2>/dev/null
}

# --- measuring -------------------------------------------------------------
counters_cmd='cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -H . * | tr : " "'

# counters_diff BEFORE AFTER: the counters that moved, "name +n".
counters_diff() {
	awk 'NR == FNR {b[$1] = $2; next} $2 != b[$1] {printf "%s +%d ", $1, $2 - b[$1]}' "$1" "$2"
}

# capture_start PCAP: capture UDP port 4791 on the tap until capture_stop.
# dumpcap (tshark's capturing half) is started straight from here so that
# $cap_pid is the capturing process itself.
capture_start() {
	ip netns exec "$ns" dumpcap -q -i $tap -f 'udp port 4791' -P -w "$1" >"$1.log" 2>&1 &
	cap_pid=$!
	wait_for "$1.log" 'Capturing on' 20 || log "dumpcap did not start"
}

capture_stop() {
	sleep 1
	kill -TERM "$cap_pid" 2>/dev/null
	wait "$cap_pid" 2>/dev/null
	cap_pid=
}

# icrc_check PCAP: per direction, packets, BTH opcodes, ICRC status and
# the IPv4 TTL, DF and TOS values seen.  The ICRC is recomputed over the
# IPv4, UDP and BTH headers and the payload with the variant fields masked
# (TOS, TTL, IP checksum, UDP checksum, BTH resv8a), as the RoCEv2 annex of
# the IBA specification defines it and rxe checks it.
icrc_check() {
	python3 - "$1" <<'EOF'
import struct, sys, zlib, collections
data = open(sys.argv[1], 'rb').read()
stats = collections.OrderedDict()
off = 24
while off + 16 <= len(data):
    _, _, caplen, _ = struct.unpack_from('<IIII', data, off)
    pkt = data[off + 16: off + 16 + caplen]
    off += 16 + caplen
    if len(pkt) < 14 + 20 + 8 + 12 + 4 or pkt[12:14] != b'\x08\x00':
        continue
    ip = bytearray(pkt[14:])
    ihl = (ip[0] & 15) * 4
    tot = struct.unpack_from('>H', ip, 2)[0]
    ip = ip[:tot]
    src = '.'.join(map(str, ip[12:16])); dst = '.'.join(map(str, ip[16:20]))
    rest = ip[ihl:]
    if len(rest) < 8 + 12 + 4:
        continue
    key = src + ' -> ' + dst
    s = stats.setdefault(key, {'pkts': 0, 'icrc_ok': 0, 'icrc_bad': 0, 'opcodes': collections.Counter(),
                               'ttl': set(), 'df': set(), 'tos': set()})
    s['pkts'] += 1
    s['ttl'].add(ip[8]); s['df'].add((ip[6] >> 6) & 1); s['tos'].add(ip[1])
    s['opcodes'][rest[8]] += 1
    m = bytearray(ip[:ihl] + rest[:-4])
    m[1] = 0xff; m[8] = 0xff; m[10:12] = b'\xff\xff'
    m[ihl + 6: ihl + 8] = b'\xff\xff'
    m[ihl + 8 + 4] = 0xff
    crc = zlib.crc32(b'\xff' * 8 + bytes(m)) & 0xffffffff
    if struct.unpack_from('<I', rest, len(rest) - 4)[0] == crc:
        s['icrc_ok'] += 1
    else:
        s['icrc_bad'] += 1
for k, s in stats.items():
    ops = ','.join('0x%02x:%d' % (o, n) for o, n in sorted(s['opcodes'].items()))
    ip = 'TTL %s DF %s TOS %s' % tuple('/'.join(str(v) for v in sorted(s[f])) for f in ('ttl', 'df', 'tos'))
    print('  wire %s: %d packets, BTH opcodes %s, ICRC ok %d bad %d, %s' % (k, s['pkts'], ops, s['icrc_ok'], s['icrc_bad'], ip))
if not stats:
    print('  wire: no RoCEv2 packets')
EOF
}

# decode PCAP: what tshark makes of the packets (first of each direction,
# and how many it flags malformed or with warnings).
decode() {
	local bad
	tshark -r "$1" -Y 'infiniband' -T fields -E separator=' ' \
		-e ip.src -e ip.dst -e _ws.col.Protocol -e infiniband.bth.opcode \
		-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.deth.q_key \
		-e infiniband.deth.srcqp -e infiniband.invariant.crc 2>/dev/null |
		awk '!seen[$1 $2]++ {print "  tshark first " $0}'
	bad=$(tshark -r "$1" -Y '_ws.malformed || _ws.expert.severity >= warning' 2>/dev/null | wc -l)
	echo "  tshark infiniband packets $(tshark -r "$1" -Y infiniband 2>/dev/null | wc -l), malformed/warnings $bad"
}

# --- scenarios -------------------------------------------------------------
# Each scenario writes $run/<name>.* (host and guest output, the guest's
# counters before and after, the capture) and appends its result to
# $run/summary.txt.

result() { echo "$*" | tee -a "$run/summary.txt"; }

umc() { nsx env UMC_STATS=1 stdbuf -oL -eL "$@"; }

# rxe_delta NAME: how much the guest's counter NAME moved in this scenario.
rxe_delta() {
	awk -v n="$1" 'NR == FNR {if ($1 == n) b = $2; next} $1 == n {print $2 - b}' \
		"$p.cnt0" "$p.cnt1"
}

# umc_stat NAME: umcast's counter NAME for the tap's device (UMC_STATS).
umc_stat() {
	grep -h "^umcast: umc_$tap " "$p.host" | tail -n 1 | tr ' ' '\n' |
		sed -n "s/^$1=//p"
}

# details: the counters that moved and what the wire carried.
details() {
	echo "  rxe counters: $(counters_diff "$p.cnt0" "$p.cnt1")"
	echo "  umcast umc_$tap: $(grep -h "^umcast: umc_$tap " "$p.host" | tail -n 1 | tr ' ' '\n' |
		grep '=' | grep -v '=0$' | tr '\n' ' ')"
	icrc_check "$p.pcap"
	decode "$p.pcap"
}

# verdict OK: PASS or FAIL, and the scenario's status.
verdict() { if [ "$1" = 1 ]; then echo PASS; else echo FAIL; fi; }

# scenario_mc NAME ROLE TOOL GROUP SIZE [CONNS [-o]]
#   ROLE send: the guest's mckey sends, the host's TOOL receives;
#   ROLE recv: the host's TOOL sends, the guest's mckey receives with CONNS
#   QPs (each gets every message).  TOOL umc-mckey, or mckey (Debian's,
#   under umc-run).  -o: the sender joins as a send-only full member.
scenario_mc() {
	local name=$1 role=$2 tool=$3 grp=$4 sz=$5 conns=${6:-1} so=${7:-}
	local p=$run/$1 hrc grc sent wire got exp ok=0 gcmd hcmd
	guest "$p.cnt0" "$counters_cmd"
	capture_start "$p.pcap"
	if [ "$tool" = umc-mckey ]; then
		hcmd=("$bin/umc-mckey" -m "$grp" -b "$host_ip" -C "$count" -S "$sz" -t 30000)
	else
		hcmd=("$bin/umc-run" mckey -m "$grp" -b "$host_ip" -C "$count" -S "$sz")
	fi
	gcmd="timeout 120 stdbuf -oL mckey -m $grp -b $guest_ip -C $count -S $sz"
	if [ "$role" = send ]; then
		umc timeout 120 "${hcmd[@]}" >"$p.host" 2>&1 &
		local hpid=$!
		wait_for "$p.host" 'joined' 60 || log "$name: host receiver did not join"
		guest "$p.guest" "$gcmd -s $so"
		grc=$?
		wait $hpid
		hrc=$?
	else
		guest "$p.guest" "$gcmd -c $conns" &
		local gpid=$!
		wait_for "$p.guest" 'joined' 60 || log "$name: guest receiver did not join"
		[ "$tool" = umc-mckey ] && hcmd+=(-w 1000)
		umc timeout 120 "${hcmd[@]}" -s $so >"$p.host" 2>&1
		hrc=$?
		wait $gpid
		grc=$?
	fi
	capture_stop
	guest "$p.cnt1" "$counters_cmd"
	if [ "$role" = send ]; then
		sent="$(rxe_delta sent_pkts) (rxe sent_pkts)"
		wire=$(icrc_check "$p.pcap" | sed -n "s/.*wire $guest_ip -> $grp: \([0-9]*\) packets.*/\1/p")
		got=$(sed -n 's/.*received \([0-9]*\) messages.*/\1/p' "$p.host" | tail -n 1)
		[ -n "$got" ] || got="$(umc_stat rx_delivered)"
		exp=$count
	else
		sent="$(umc_stat tx_packets) (umcast tx_packets)"
		wire=$(icrc_check "$p.pcap" | sed -n "s/.*wire $host_ip -> $grp: \([0-9]*\) packets.*/\1/p")
		got=$(rxe_delta rdma_recvs)
		exp=$((count * conns))
	fi
	[ "${got:-x}" = "$exp" ] && [ "$hrc" = 0 ] && [ "$grc" = 0 ] && ok=1
	{
		if [ "$role" = send ]; then
			echo -n "$name: rxe mckey -s${so:+ -o} -> umcast $tool"
		else
			echo -n "$name: umcast $tool -s${so:+ -o} -> rxe mckey"
			[ "$conns" -gt 1 ] && echo -n " -c $conns"
		fi
		echo " ($grp, $count x $sz B): sent ${sent}, on the wire ${wire:-0}," \
			"received ${got:-?}/$exp; exit host $hrc guest $grc: $(verdict $ok)"
		details
	} | tee -a "$run/summary.txt"
	[ $ok = 1 ]
}

# scenario_ud NAME SERVER: ibv_ud_pingpong, the server on SERVER
# (guest|host), the client on the other side; rxe uses the GID of its
# IPv4 address (RoCE v2), umcast GID 0 (the same kind).
scenario_ud() {
	local name=$1 server=$2 p=$run/$1 n=$count gidx hrc grc hi gi ok=0
	gidx=$(sed -n 's/.*gids:.* \([0-9]*\)=0000:0000:0000:0000:0000:ffff:[0-9a-f:]*(RoCE v2).*/\1/p' \
		"$run/console.log" | head -n 1)
	[ -n "$gidx" ] || gidx=1
	local gcmd="timeout 120 stdbuf -oL ibv_ud_pingpong -d rxe0 -g $gidx -s 512 -n $n"
	local hcmd=(timeout 120 "$bin/umc-run" ibv_ud_pingpong -d "umc_$tap" -g 0 -s 512 -n "$n")
	guest "$p.cnt0" "$counters_cmd"
	capture_start "$p.pcap"
	if [ "$server" = guest ]; then
		guest "$p.guest" "$gcmd" &
		local gpid=$!
		wait_for "$p.guest" 'local address' 60 || log "$name: guest server not up"
		sleep 2
		umc "${hcmd[@]}" $guest_ip >"$p.host" 2>&1
		hrc=$?
		wait $gpid
		grc=$?
	else
		umc "${hcmd[@]}" >"$p.host" 2>&1 &
		local hpid=$!
		wait_for "$p.host" 'local address' 60 || log "$name: host server not up"
		sleep 2
		guest "$p.guest" "$gcmd $host_ip"
		grc=$?
		wait $hpid
		hrc=$?
	fi
	capture_stop
	guest "$p.cnt1" "$counters_cmd"
	hi=$(sed -n 's/^\([0-9]*\) iters in.*/\1/p' "$p.host" | head -n 1)
	gi=$(sed -n 's/^\([0-9]*\) iters in.*/\1/p' "$p.guest" | head -n 1)
	# Both directions: no ICRC wrong, and umcast's TTL is the one rxe sends
	# (the route's: Linux replaces a unicast AH's hop limit, which
	# ibv_ud_pingpong sets to 1).
	local wire ttl_u ttl_r
	wire=$(icrc_check "$p.pcap")
	ttl_u=$(sed -n "s/.*wire $host_ip -> $guest_ip: .* bad 0, TTL \([0-9/]*\) .*/\1/p" <<<"$wire")
	ttl_r=$(sed -n "s/.*wire $guest_ip -> $host_ip: .* bad 0, TTL \([0-9/]*\) .*/\1/p" <<<"$wire")
	[ "$hi" = "$n" ] && [ "$gi" = "$n" ] && [ "$hrc" = 0 ] && [ "$grc" = 0 ] &&
		[ -n "$ttl_u" ] && [ "$ttl_u" = "$ttl_r" ] && ok=1
	{
		echo "$name: ibv_ud_pingpong -n $n -s 512, server on the $server (rxe -g $gidx," \
			"umcast -g 0): iterations host ${hi:-?}/$n guest ${gi:-?}/$n;" \
			"TTL umcast ${ttl_u:-?} rxe ${ttl_r:-?};" \
			"rxe received $(rxe_delta rdma_recvs), umcast delivered $(umc_stat rx_delivered);" \
			"exit host $hrc guest $grc: $(verdict $ok)"
		grep -h -i -E 'fail|error|couldn' "$p.host" "$p.guest" | grep -v '^umcast: ' |
			sed 's/^/  error: /' | head -n 6
		details
	} | tee -a "$run/summary.txt"
	[ $ok = 1 ]
}

run_scenario() {
	case $1 in
	a) scenario_mc a send umc-mckey 239.77.0.1 "$size" ;;
	a2) scenario_mc a2 send mckey 239.77.0.2 "$size" ;;
	b) scenario_mc b recv umc-mckey 239.77.0.3 "$size" ;;
	b2) scenario_mc b2 recv mckey 239.77.0.4 "$size" ;;
	c1) scenario_ud c1 guest ;;
	c2) scenario_ud c2 host ;;
	d1) scenario_mc d1 send umc-mckey 239.77.0.5 "$size" 1 -o ;;
	d2) scenario_mc d2 recv umc-mckey 239.77.0.6 "$size" 1 -o ;;
	e1) scenario_mc e1 send umc-mckey 239.77.0.7 1024 ;;
	e2) scenario_mc e2 recv umc-mckey 239.77.0.8 1024 ;;
	f) scenario_mc f recv umc-mckey 239.77.0.9 "$size" 2 -o ;;
	*) log "unknown scenario $1"; return 1 ;;
	esac
}

run_rig() {
	local s fails=0 t0=$SECONDS
	[ -x "$bin/umc-mckey" ] && [ -x "$bin/umc-run" ] || die "umcast tools not found (set UMC_BIN)"
	build_image
	run=$dir/logs/$(date +%Y%m%d-%H%M%S)
	mkdir -p "$run"
	ln -sfn "$run" "$dir/logs/last"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	setup_net
	boot_guest
	guest "$run/guest-info.txt" 'uname -r; rdma link show; ibv_devinfo -d rxe0 | grep -E "state|mtu|link_layer"; ip -br addr; ip route'
	: >"$run/summary.txt"
	for s in ${scenarios:-$all_scenarios}; do
		log "scenario $s"
		run_scenario "$s" || fails=$((fails + 1))
	done
	guest "$run/guest-dmesg.txt" 'dmesg | tail -n 60'
	stop_guest
	result "scenarios failed: $fails; guest boot ${boot_secs}s; whole run $((SECONDS - t0))s; logs $run"
	[ $fails -eq 0 ]
}

# boot: the guest up for inspection until it powers off (or Ctrl-C).
boot_only() {
	build_image
	run=$dir/logs/boot-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$run"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	setup_net
	boot_guest
	log "commands: echo CMD | ip netns exec $ns socat -t 900 - TCP:$guest_ip:$ctl_port"
	wait "$qemu_pid"
	qemu_pid=
}

cmd=${1:-all}
[ $# -gt 0 ] && shift
scenarios="$*"
case $cmd in
image) build_image ;;
run | all) run_rig ;;
boot) boot_only ;;
clean)
	ip netns del "$ns" 2>/dev/null
	rm -rf --one-file-system "$dir"
	;;
*) die "usage: $0 [all|image|run|boot|clean] [SCENARIO...]" ;;
esac
