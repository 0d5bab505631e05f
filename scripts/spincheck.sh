# spincheck.sh: the driver of the Promela models' check scripts
# (internal/transport/shm/model/check.sh, internal/engine/model/check.sh),
# sourced by them once they have set
#
#   model   the model's file
#   runs    an array of verifications, each "name|expect|spin -D flags|kind":
#             expect: pass, or error (an injected bug: it must be reported)
#             kind:   safety (assertions and invalid end states) or live
#                     (the model's LTL property under weak fairness); both
#                     exhaustive, with -DCOLLAPSE (no bitstate, no hash
#                     compaction)
#   memlim  (optional) the verifier's memory limit in MB, default 4096
#
# It needs spin and gcc and installs nothing. Environment: JOBS (parallel
# verifications, default 2), ONLY (an extended regular expression: run
# only the verifications whose name it matches). It exits 2 if spin or
# gcc is missing or ONLY matches nothing, 1 if a verification gives an
# unexpected result, else 0.

if ! command -v spin >/dev/null 2>&1; then
	echo "$0: spin is not installed (Debian/Ubuntu: apt-get install -y spin)" >&2
	exit 2
fi
if ! command -v gcc >/dev/null 2>&1; then
	echo "$0: gcc is not installed (needed to compile spin's verifier)" >&2
	exit 2
fi
spin -V

jobs_max=${JOBS:-2}
memlim=${memlim:-4096}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${ONLY:-}" ]; then
	kept=()
	for r in "${runs[@]}"; do
		if [[ ${r%%|*} =~ $ONLY ]]; then kept+=("$r"); fi
	done
	if [ ${#kept[@]} -eq 0 ]; then
		echo "$0: ONLY=$ONLY matches no verification" >&2
		exit 2
	fi
	runs=("${kept[@]}")
fi

# verify NAME FLAGS KIND: writes $work/NAME/out (pan's report) and
# $work/NAME/status (the exit status of the steps).
verify() {
	local name=$1 flags=$2 kind=$3 dir=$work/$1 file
	file=$(basename "$model")
	mkdir -p "$dir"
	cp "$model" "$dir/$file"
	if (
		cd "$dir"
		# shellcheck disable=SC2086 # $flags, $cc and $pan are lists of words
		spin -a $flags "$file" >spin.log 2>&1 || { echo "spin -a failed" >out; cat spin.log >>out; exit 1; }
		if [ "$kind" = safety ]; then
			cc=-DSAFETY pan=
		else
			cc=-DNFAIR=3 pan="-a -f"   # acceptance cycles, weak fairness
		fi
		gcc -O2 $cc -DCOLLAPSE -DMEMLIM="$memlim" -o pan pan.c >gcc.log 2>&1 || { cat gcc.log >out; exit 1; }
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
	echo "$0: FAILED" >&2
	exit 1
fi
echo "$0: all verifications gave the expected result"
