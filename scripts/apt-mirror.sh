#!/usr/bin/env bash
# apt-mirror.sh [SUITE] - print the Debian mirror this machine's apt already
# uses for SUITE (default bookworm): the first URI of an enabled "deb"
# source for it in /etc/apt/sources.list.d/*.sources (deb822) or
# /etc/apt/sources.list, security sources excepted.  Prints nothing when
# there is none, so that a caller can leave the choice to debootstrap(8),
# which then uses its own default mirror.
set -u
suite=${1:-bookworm}
{
	# deb822: one stanza per source, separated by blank lines.
	awk -v suite="$suite" '
		function flush() {
			if (types ~ /(^| )deb( |$)/ && suites ~ ("(^| )" suite "( |$)") &&
			    enabled != "no" && uris != "" && uris !~ /security/) {
				split(uris, u, " "); print u[1]; found = 1; exit
			}
			types = suites = uris = enabled = ""
		}
		FNR == 1 && NR > 1 { flush() }
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		tolower($1) == "types:" { $1 = ""; types = $0 }
		tolower($1) == "suites:" { $1 = ""; suites = $0 }
		tolower($1) == "uris:" { $1 = ""; uris = $0 }
		tolower($1) == "enabled:" { enabled = tolower($2) }
		END { if (!found) flush() }' /etc/apt/sources.list.d/*.sources 2>/dev/null
	# one-line style: deb [options] URI SUITE COMPONENTS...
	awk -v suite="$suite" '
		$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) while ($i !~ /\]$/ && i < NF) i++
			if ($i ~ /^\[/ || $i ~ /\]$/) i++
			if ($(i + 1) == suite && $i !~ /security/) { print $i; exit }
		}' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null
} | head -n 1
