#!/usr/bin/env bash
# deb-install.sh - in a pristine Debian 12 (.ci/fresh-debian12.sh, with
# UMC_FRESH_OUT holding .ci/deb-build.sh's packages): install the four
# packages with apt-get, as a user would, and run from them what the README
# promises: the demo's exchange with the installed umc-mckey, every tool's
# --version, umc-sm as its systemd unit starts it (with its defaults file)
# queried by umc-sa, and Debian's mckey under umc-run.
set -eu
export DEBIAN_FRONTEND=noninteractive
cd "$(dirname "$0")/.."
start=$SECONDS
say() { echo "deb-install: $* (at $((SECONDS - start)) s)"; }

say "apt-get install" /out/*.deb
apt-get update -qq
apt-get install -y -qq --no-install-recommends /out/*.deb >/dev/null
for t in umc-mckey umc-perf umc-run umc-sa umc-ctl umc-stat umc-gapwatch umc-sm; do
	"$t" --version
done

say "the demo, from /usr/bin"
BIN=/usr/bin scripts/demo.sh

say "umc-sm's system user, which the library trusts, and its unit's"
getent passwd _umc-sm
grep -qx 'User=_umc-sm' /lib/systemd/system/umc-sm.service

say "umc-sm as its service starts it, and umc-sa"
# The unit's command line, with the options of /etc/default/umc-sm.
unit=/lib/systemd/system/umc-sm.service
cmd=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$cmd" ] || { echo "no ExecStart in $unit"; exit 1; }
# shellcheck disable=SC1091 # the package's defaults file
. /etc/default/umc-sm
eval "$cmd &"
sm=$!
ok=
for _ in 1 2 3 4 5; do	# bounded: umc-sa waits 1 s each
	umc-sa -t 1000 -c >/tmp/cpi 2>/dev/null && { ok=1; break; }
done
[ -n "$ok" ] && grep -x 'send_only_full_member yes' /tmp/cpi
kill "$sm"
wait "$sm"
[ -n "$ok" ] || { echo "umc-sm ($cmd, UMC_SM_OPTIONS=$UMC_SM_OPTIONS) did not answer"; exit 1; }

say "umc-run: Debian's mckey on umcast's drop-in libraries"
apt-get install -y -qq --no-install-recommends rdmacm-utils >/dev/null
umc-run mckey -m 239.255.42.2 -b 127.0.0.1 >/tmp/mckey.r &
r=$!
umc-run mckey -m 239.255.42.2 -b 127.0.0.1 -s -o
wait "$r"
grep 'joined' /tmp/mckey.r
say "done"
