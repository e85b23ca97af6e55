#!/usr/bin/env bash
# test_devinfo.sh - the prebuilt ibv_devinfo of ibverbs-utils, unchanged,
# under umc-run: it lists exactly umcast's devices (umc_<ifname> for every
# interface that is up with an address) and shows the loopback device with
# the attributes soft-RoCE (rxe) reports for a RoCE v2 port: transport
# InfiniBand, vendor 0xffffff part 0, one port, PORT_ACTIVE, max_mtu 4096,
# the active MTU from the interface MTU less 80 (rxe's rule), LID 0, link
# layer Ethernet, rxe's multicast limits (8192 groups, 56 QPs per group,
# 458752 attachments) and 64 P_Keys, and GID 0 = ::ffff:127.0.0.1 of type
# RoCE v2.  Errors are ibv_devinfo's own: an unknown device, a bad port.
#
# References: the kernel's drivers/infiniband/sw/rxe/rxe_param.h (the limits,
# and the MTU rule of eth_mtu_int_to_enum(): active_mtu 1024 for a
# 1500-byte MTU).
#
# Env: UMC_BIN (umc-run; ctest sets it), DEVINFO_BIN (default: ibv_devinfo
# on PATH).  Skipped (77) without ibv_devinfo.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test_mckey_lib.sh
. "$here/test_mckey_lib.sh"
# shellcheck source=prebuilt_lib.sh
. "$here/prebuilt_lib.sh"

devinfo=${DEVINFO_BIN:-$(command -v ibv_devinfo 2>/dev/null)}
if [ -z "$devinfo" ] || [ ! -x "$devinfo" ]; then
	echo "SKIP: no ibv_devinfo (ibverbs-utils)"
	exit 77
fi
prebuilt_env
T=30

# ibv_devinfo's lines with every run of blanks made one space.
devinfo_run() {	# NAME ARGS...
	local name=$1
	shift
	start "$name" $T "$UMC_RUN" "$devinfo" "$@"
	finish "$name"
	tr -s ' \t' '  ' <"$WORK/$name.out" | sed 's/^ //' >"$WORK/$name.norm"
}

expect_norm() {	# NAME LINE
	if grep -Fxq -- "$2" "$WORK/$1.norm"; then
		pass "$1: '$2'"
	else
		fail "$1 lacks the line '$2'"
		show "$1"
	fi
}

# rxe: the IB MTU is the interface MTU less 80, rounded down to an IB MTU.
ib_mtu() {
	local room=$(($1 - 80))
	if [ $room -ge 4096 ]; then echo "4096 (5)"
	elif [ $room -ge 2048 ]; then echo "2048 (4)"
	elif [ $room -ge 1024 ]; then echo "1024 (3)"
	elif [ $room -ge 512 ]; then echo "512 (2)"
	else echo "256 (1)"
	fi
}

echo "# 1. the device list is umcast's"
devinfo_run list -l
expect_rc list 0
want=$(ip -o addr show up | awk '{sub(/@.*/, "", $2); print "umc_" $2}' | sort -u)
got=$(grep -v -e 'HCAs* found:$' -e '^$' "$WORK/list.norm" | sort)
n=$(echo "$want" | wc -l)
if [ "$got" = "$want" ]; then
	pass "devices: $(echo $got)"
else
	fail "ibv_devinfo -l lists '$(echo $got)', interfaces give '$(echo $want)'"
	show list
fi
if [ "$n" -eq 1 ]; then expect_norm list "1 HCA found:"; else expect_norm list "$n HCAs found:"; fi

echo "# 2. umc_lo, verbose"
devinfo_run lo -d umc_lo -v
expect_rc lo 0
for line in "hca_id: umc_lo" "transport: InfiniBand (0)" "vendor_id: 0xffffff" \
	"vendor_part_id: 0" "hw_ver: 0x0" "phys_port_cnt: 1" "max_mcast_grp: 8192" \
	"max_mcast_qp_attach: 56" "max_total_mcast_qp_attach: 458752" "max_pkeys: 64" \
	"atomic_cap: ATOMIC_NONE (0)" "max_srq: 0" "num_comp_vectors: 1" "port: 1" \
	"state: PORT_ACTIVE (4)" "max_mtu: 4096 (5)" \
	"active_mtu: $(ib_mtu "$(cat /sys/class/net/lo/mtu)")" "sm_lid: 0" "port_lid: 0" \
	"port_lmc: 0x00" "link_layer: Ethernet" "pkey_tbl_len: 64" \
	"GID[ 0]: ::ffff:127.0.0.1, RoCE v2"; do
	expect_norm lo "$line"
done
node=$(sed -n 's/^node_guid: //p' "$WORK/lo.norm")
sys=$(sed -n 's/^sys_image_guid: //p' "$WORK/lo.norm")
if [[ $node =~ ^[0-9a-f]{4}(:[0-9a-f]{4}){3}$ ]] && [ "$node" != 0000:0000:0000:0000 ] &&
	[ "$node" = "$sys" ]; then
	pass "node_guid $node = sys_image_guid"
else
	fail "node_guid '$node', sys_image_guid '$sys'"
fi
gids=$(grep -c '^GID\[' "$WORK/lo.norm")
want=$(ip -o addr show dev lo | wc -l)
if [ "$gids" -eq "$want" ]; then
	pass "lo: $gids GIDs, one per address of lo"
else
	fail "lo: $gids GIDs for $want addresses"
	show lo
fi

echo "# 3. ibv_devinfo's own errors"
devinfo_run badport -d umc_lo -i 2
expect_rc badport nonzero
grep -q 'Invalid port requested for device' "$WORK/badport.err" &&
	pass "badport: 'Invalid port requested for device'" || { fail "badport message"; show badport; }
devinfo_run nodev -d umc_nosuch
expect_rc nodev nonzero
grep -q "IB device 'umc_nosuch' wasn't found" "$WORK/nodev.err" &&
	pass "nodev: not found" || { fail "nodev message"; show nodev; }

summary
