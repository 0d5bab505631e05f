#!/usr/bin/env bash
# Model-checks the shm transport's notice ring and doorbell (ring.pml)
# with spin: the model of the Go code must verify, and every injected bug
# must be reported. Installs nothing; needs spin and gcc. See README.md.
#
# Environment: JOBS (parallel verifications, default 2), ONLY (an
# extended regular expression: run only the verifications it matches).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
model=$here/ring.pml

# Verifications: name|expect|spin -D flags|kind
#   expect: pass, or error (an injected bug: it must be reported)
#   kind:   safety (assertions and invalid end states) or live (the LTL
#           property all_taken under weak fairness); both exhaustive,
#           with -DCOLLAPSE (no bitstate, no hash compaction)
# The big ones come first, so that the small ones fill the other slot.
both="-DNPROD=2 -DK=1 -DK0=2"   # two consumers: 2 producers, 2 + 1 notices
runs=(
	"live-both-2x1|pass|-DLIVE -DNPROD=2 -DK=1|live"
	"safety-both-2+1|pass|$both|safety"
	"safety-waiter-3x2|pass|-DNO_PROGRESS|safety"
	"safety-progress-3x2|pass|-DNO_WAITER|safety"
	"live-waiter-3x1|pass|-DLIVE -DNO_PROGRESS -DK=1|live"
	"live-progress-3x1|pass|-DLIVE -DNO_WAITER -DK=1|live"
	"live-waiter-3x1-no-fail-ring|pass|-DLIVE -DNO_PROGRESS -DK=1 -DNO_FAIL_RING|live"
	"live-progress-3x1-no-fail-ring|pass|-DLIVE -DNO_WAITER -DK=1 -DNO_FAIL_RING|live"
	"safety-both-2x1-headseen|pass|-DHEADSEEN -DNPROD=2 -DK=1|safety"
	"safety-progress-3x1-headseen|pass|-DHEADSEEN -DNO_WAITER -DK=1|safety"
	# the fallback without membarrier: fenced publishes, no barrier
	"fenced-safety-both-2+1|pass|-DFENCED_PUBLISH $both|safety"
	"fenced-live-both-2x1|pass|-DFENCED_PUBLISH -DLIVE -DNPROD=2 -DK=1|live"
)
for bug in BUG_SLEEPERS_EARLY BUG_NO_LOOK BUG_DEQ_EARLY BUG_NO_RECHECK BUG_NO_MEMBARRIER; do
	runs+=(
		"$bug-progress-3x2|error|-D$bug -DNO_WAITER|safety"
		"$bug-waiter-3x2|error|-D$bug -DNO_PROGRESS|safety"
		"$bug-both-2+1|error|-D$bug $both|safety"
	)
done
runs+=(
	# the progress goroutine before commit 1e7df8e
	"BUG_PROGRESS_SLEEP-both-2+1|error|-DBUG_PROGRESS_SLEEP $both|safety"
	"BUG_PROGRESS_SLEEP-live-both-2x1|error|-DBUG_PROGRESS_SLEEP -DLIVE -DNPROD=2 -DK=1|live"
	# a registration by release store: shows that the store buffers are modelled
	"BUG_RELEASE_PREPARE-waiter-3x2|error|-DBUG_RELEASE_PREPARE -DFENCED_PUBLISH -DNO_PROGRESS|safety"
	# a poller's takeover of the progress goroutine's registration
	"BUG_TAKEOVER_NO_WAKE-both-2+1|error|-DBUG_TAKEOVER_NO_WAKE $both|safety"
	"BUG_TAKEOVER_TWICE-both-2+1|error|-DBUG_TAKEOVER_TWICE $both|safety"
	# lost wake-ups break the liveness property too
	"BUG_SLEEPERS_EARLY-live-progress-3x1|error|-DBUG_SLEEPERS_EARLY -DLIVE -DNO_WAITER -DK=1|live"
	"BUG_NO_LOOK-live-waiter-3x1|error|-DBUG_NO_LOOK -DLIVE -DNO_PROGRESS -DK=1|live"
)

# shellcheck source=../../../../scripts/spincheck.sh
. "$here/../../../../scripts/spincheck.sh"
