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

if ! command -v spin >/dev/null 2>&1; then
	echo "check.sh: spin is not installed (Debian/Ubuntu: apt-get install -y spin)" >&2
	exit 2
fi
if ! command -v gcc >/dev/null 2>&1; then
	echo "check.sh: gcc is not installed (needed to compile spin's verifier)" >&2
	exit 2
fi
spin -V

jobs_max=${JOBS:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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

if [ -n "${ONLY:-}" ]; then
	kept=()
	for r in "${runs[@]}"; do
		if [[ ${r%%|*} =~ $ONLY ]]; then kept+=("$r"); fi
	done
	if [ ${#kept[@]} -eq 0 ]; then
		echo "check.sh: ONLY=$ONLY matches no verification" >&2
		exit 2
	fi
	runs=("${kept[@]}")
fi

# verify NAME FLAGS KIND: writes $work/NAME/out (pan's report) and
# $work/NAME/status (the exit status of the steps).
verify() {
	local name=$1 flags=$2 kind=$3 dir=$work/$1
	mkdir -p "$dir"
	cp "$model" "$dir/ring.pml"
	if (
		cd "$dir"
		# shellcheck disable=SC2086 # $flags, $cc and $pan are lists of words
		spin -a $flags ring.pml >spin.log 2>&1 || { echo "spin -a failed" >out; cat spin.log >>out; exit 1; }
		if [ "$kind" = safety ]; then
			cc=-DSAFETY pan=
		else
			cc=-DNFAIR=3 pan="-a -f"   # acceptance cycles, weak fairness
		fi
		gcc -O2 $cc -DCOLLAPSE -DMEMLIM=4096 -o pan pan.c >gcc.log 2>&1 || { cat gcc.log >out; exit 1; }
		# pan's exit status is not its verdict: out is judged below
		timeout 900 ./pan -m1000000 -w24 $pan >out 2>&1 || true
	); then
		echo 0 >"$dir/status"
	else
		echo 1 >"$dir/status"
	fi
}

# Start the verifications, JOBS at a time.
running=0
for r in "${runs[@]}"; do
	IFS='|' read -r name expect flags kind <<<"$r"
	if [ "$running" -ge "$jobs_max" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	verify "$name" "$flags" "$kind" &
	running=$((running + 1))
done
wait

# Judge them.
failed=0
printf '%-44s %-6s %-8s %s\n' RUN EXPECT RESULT DETAIL
for r in "${runs[@]}"; do
	IFS='|' read -r name expect flags kind <<<"$r"
	out=$work/$name/out
	status=$(cat "$work/$name/status" 2>/dev/null || echo 1)
	errors=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$out" 2>/dev/null | head -n1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out" 2>/dev/null | head -n1)
	secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' "$out" 2>/dev/null | head -n1)
	first=$(grep -m1 -E '^pan:[0-9]+:' "$out" 2>/dev/null | sed 's/^pan:[0-9]*: *//' || true)
	incomplete=$(grep -m1 -E 'max search depth too small|Search not completed|out of memory|reached -DMEMLIM' "$out" 2>/dev/null || true)
	result=
	detail="states=${states:-?} time=${secs:-?}s"
	if [ "$status" != 0 ] || [ -z "$errors" ]; then
		result=BROKEN
		detail="the verifier did not run to the end: $(head -c 300 "$out" 2>/dev/null | tr '\n' ' ')"
		failed=1
	elif [ "$expect" = pass ]; then
		if [ "$errors" = 0 ] && [ -z "$incomplete" ]; then
			result=ok
		else
			result=FAIL
			detail="$detail ${first:-$incomplete}"
			failed=1
		fi
	elif [ "$errors" != 0 ]; then
		result=reported
		detail="$detail: $first"
	else
		result=FAIL
		detail="$detail: the injected bug was NOT reported"
		failed=1
	fi
	printf '%-44s %-6s %-8s %s\n' "$name" "$expect" "$result" "$detail"
	if [ "$result" = FAIL ] || [ "$result" = BROKEN ]; then
		grep -v '^Depth=' "$out" | sed 's/^/    | /' | head -n 40
	fi
done

if [ "$failed" != 0 ]; then
	echo "check.sh: FAILED" >&2
	exit 1
fi
echo "check.sh: all verifications gave the expected result"
