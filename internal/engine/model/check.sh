#!/usr/bin/env bash
# Model-checks a window's notice inbox, its direct path and its owner's
# wait on the doorbell (inbox.pml) with spin: the model of the Go code
# must verify, and every injected bug must be reported. Installs nothing;
# needs spin and gcc. See README.md.
#
# Environment: JOBS (parallel verifications, default 2), ONLY (an
# extended regular expression: run only the verifications it matches).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model=$here/inbox.pml
memlim=6000

# Verifications: name|expect|spin -D flags|kind (see scripts/spincheck.sh).
# The big ones come first, so that the small ones fill the other slot.
two="-DNPROD=2 -DK=2"   # two origins with two notices each: their order
gor="-DSYNC_HANDLERS -DNO_DIRECT"   # ranks as goroutines: concurrent handlers, no direct path
runs=(
	"safety-3x1|pass||safety"
	"safety-2x2|pass|$two|safety"
	"live-nosleep-3x1|pass|-DLIVE -DNO_SLEEP|live"
	"fenced-safety-3x1|pass|-DFENCED_WAKE|safety"
	"goroutines-safety-3x1|pass|$gor|safety"
	"goroutines-safety-2x2|pass|$gor $two|safety"
	"live-2x1|pass|-DLIVE -DNPROD=2|live"
	"fenced-live-2x1|pass|-DLIVE -DFENCED_WAKE -DNPROD=2|live"
	# the re-check of claimInOrder, and the order of an origin's two
	# looks in splitDirect, are not needed: see README.md
	"no-recheck-2x2|pass|-DNO_OVER_RECHECK -DOVER_FIRST -DNO_SLEEP $two|safety"
	"goroutines-no-recheck-2x2|pass|$gor -DNO_OVER_RECHECK -DNO_SLEEP $two|safety"
)
for bug in BUG_NO_SENT_CHECK BUG_PLACED_EARLY BUG_TAKE_DIRECT BUG_OVERFLOW_EARLY; do
	runs+=("$bug-2x2|error|-D$bug -DNO_SLEEP $two|safety")
done
runs+=(
	"BUG_OVERFLOW_EARLY-goroutines-2x2|error|-DBUG_OVERFLOW_EARLY $gor -DNO_SLEEP $two|safety"
	"BUG_NO_MEMBARRIER-3x1|error|-DBUG_NO_MEMBARRIER|safety"
	"BUG_RING_EARLY-3x1|error|-DBUG_RING_EARLY|safety"
	"BUG_RING_EARLY-fenced-3x1|error|-DBUG_RING_EARLY -DFENCED_WAKE|safety"
	"BUG_RING_EARLY-live-2x1|error|-DLIVE -DBUG_RING_EARLY -DNPROD=2|live"
)

# shellcheck source=../../../scripts/spincheck.sh
. "$here/../../../scripts/spincheck.sh"
