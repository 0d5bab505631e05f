//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestAllRanksSucceed(t *testing.T) {
	const n = 4
	res, dir := runScript(t, `
echo "$NARMA_RANK $NARMA_SIZE $NARMA_JOB $NARMA_TRANSPORT $NARMA_BOOTSTRAP" > "$1/env.$NARMA_RANK"
echo "hello from rank $NARMA_RANK"
`, "-n", fmt.Sprint(n))
	if res.status != 0 {
		t.Fatalf("status %d, want 0", res.status)
	}
	job := ""
	for r := range n {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", r)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", r, err)
		}
		f := strings.Fields(string(b))
		if len(f) != 5 || f[0] != fmt.Sprint(r) || f[1] != fmt.Sprint(n) || f[3] != "shm" || !strings.HasPrefix(f[4], "unix:/") {
			t.Errorf("rank %d saw NARMA_RANK, SIZE, JOB, TRANSPORT, BOOTSTRAP = %q", r, f)
			continue
		}
		if job == "" {
			job = f[2]
		} else if f[2] != job {
			t.Errorf("rank %d is in job %s, rank 0 in %s", r, f[2], job)
		}
		if !strings.Contains(res.stdout, fmt.Sprintf("hello from rank %d\n", r)) {
			t.Errorf("output of rank %d missing", r)
		}
	}
	if strings.Contains(res.stdout, "[") {
		t.Errorf("output tagged without --tag-output")
	}
	if res.stderr != "" {
		t.Errorf("narmarun printed %q on a good run", res.stderr)
	}
}

// TestJobEnvironment: narmarun sets the job's variables itself, whatever
// its own environment holds: a fresh secret for every job, the same at
// every rank, and the tcp variables for a tcp job only. It prints the
// secret nowhere, -v included.
func TestJobEnvironment(t *testing.T) {
	const n = 3
	// What the user's environment may hold: NARMA_TRANSPORT=tcp chooses
	// the transport of goroutine ranks, not that of narmarun's job.
	t.Setenv("NARMA_TRANSPORT", "tcp")
	t.Setenv("NARMA_SECRET", "inherited")
	t.Setenv("NARMA_TCP_LISTEN", "0.0.0.0:9")
	t.Setenv("NARMA_JOB", "inherited")
	t.Setenv("NARMA_TCP_TIMEOUT", "7s")
	t.Setenv("NARMA_TCP_SPIN", "0")
	const body = `printf '%s\n' "$NARMA_TRANSPORT" "${NARMA_SECRET-unset}" "${NARMA_TCP_LISTEN-unset}" "${NARMA_TCP_TIMEOUT-unset}" "${NARMA_TCP_SPIN-unset}" "$NARMA_JOB" > "$1/env.$NARMA_RANK"
`
	hexSecret := regexp.MustCompile(`^[0-9a-f]{64}$`)
	// job runs the script with flags and returns what each rank saw.
	job := func(flags ...string) [][]string {
		t.Helper()
		res, dir := runScript(t, body, append([]string{"-n", fmt.Sprint(n), "-v"}, flags...)...)
		if res.status != 0 {
			t.Fatalf("status %d, want 0", res.status)
		}
		var seen [][]string
		for r := range n {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("env.%d", r)))
			if err != nil {
				t.Fatalf("rank %d did not run: %v", r, err)
			}
			f := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if len(f) != 6 {
				t.Fatalf("rank %d saw %q", r, f)
			}
			if !hexSecret.MatchString(f[1]) {
				t.Errorf("rank %d: NARMA_SECRET is %q, want 32 bytes in hex", r, f[1])
			}
			if strings.Contains(res.stdout+res.stderr, f[1]) {
				t.Errorf("narmarun printed the secret")
			}
			if f[5] == "inherited" {
				t.Errorf("rank %d inherited NARMA_JOB", r)
			}
			if r > 0 && !slices.Equal(f, seen[0]) {
				t.Errorf("rank %d saw %q, rank 0 %q", r, f, seen[0])
			}
			seen = append(seen, f)
		}
		return seen
	}
	shm := job()
	if want := []string{"shm", shm[0][1], "unset", "unset", "unset"}; !slices.Equal(shm[0][:5], want) {
		t.Errorf("a shm job saw %q, want %q", shm[0][:5], want)
	}
	tcpJob := job("--transport", "tcp")
	if want := []string{"tcp", tcpJob[0][1], "127.0.0.1:0", "7s", "0"}; !slices.Equal(tcpJob[0][:5], want) {
		t.Errorf("a tcp job saw %q, want %q", tcpJob[0][:5], want)
	}
	if tcpJob[0][1] == shm[0][1] {
		t.Errorf("two jobs had the same secret")
	}

	t.Setenv("NARMA_TCP_TIMEOUT", "soon")
	res := runNarmarun(t, t.Context(), "-n", "2", "--transport", "tcp", "/bin/true")
	if res.status != exitUsage || !strings.Contains(res.stderr, `NARMA_TCP_TIMEOUT="soon" is not a duration`) {
		t.Errorf("NARMA_TCP_TIMEOUT=soon: status %d, stderr %q; want %d and an explanation", res.status, res.stderr, exitUsage)
	}
	// A shm job has no use for it.
	if res := runNarmarun(t, t.Context(), "-n", "2", "/bin/true"); res.status != 0 {
		t.Errorf("NARMA_TCP_TIMEOUT=soon made a shm job fail: status %d", res.status)
	}
	t.Setenv("NARMA_TCP_TIMEOUT", "")
	t.Setenv("NARMA_TCP_SPIN", "fast")
	res = runNarmarun(t, t.Context(), "-n", "2", "--transport", "tcp", "/bin/true")
	if res.status != exitUsage || !strings.Contains(res.stderr, `NARMA_TCP_SPIN="fast" is not a duration`) {
		t.Errorf("NARMA_TCP_SPIN=fast: status %d, stderr %q; want %d and an explanation", res.status, res.stderr, exitUsage)
	}
}

func TestArgumentsGoToTheProgram(t *testing.T) {
	res, _ := runScript(t, `shift; echo "args: $*"`, "-n", "1")
	if res.status != 0 || res.stdout != "args: \n" {
		t.Fatalf("status %d, output %q", res.status, res.stdout)
	}
	path, dir := script(t, `shift; echo "args: $*"`)
	res = runNarmarun(t, t.Context(), "-n", "2", "/bin/sh", path, dir, "-n", "5", "--tag-output", "x y")
	if res.status != 0 || res.stdout != "args: -n 5 --tag-output x y\nargs: -n 5 --tag-output x y\n" {
		t.Fatalf("status %d, output %q", res.status, res.stdout)
	}
}

// sleepers is a script in which rank 1 fails by running how while the
// others record their pid and sleep far longer than any test waits.
func sleepers(how string) string {
	return writePID + `
if [ "$NARMA_RANK" = 1 ]; then
	` + how + `
fi
exec sleep 120
`
}

// checkStopped checks that the run ended long before the sleepers would
// have, and that no rank that recorded its pid is left (a rank may have
// been stopped before it could).
func checkStopped(t *testing.T, res result, dir string, n int) {
	t.Helper()
	if res.elapsed > patience {
		t.Errorf("the run took %v: the sleeping ranks were not stopped", res.elapsed)
	}
	for r, f := range pidFiles(dir, n) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("rank %d (pid %d) still exists after the run: %v", r, pid, err)
		}
	}
}

func TestRankFails(t *testing.T) {
	res, dir := runScript(t, sleepers("exit 3"), "-n", "4")
	if res.status != 3 {
		t.Fatalf("status %d, want 3", res.status)
	}
	if !regexp.MustCompile(`narmarun: rank 1 \(pid \d+\) exited with status 3\n`).MatchString(res.stderr) {
		t.Errorf("stderr %q does not report rank 1's failure", res.stderr)
	}
	checkStopped(t, res, dir, 4)
}

func TestRankKilled(t *testing.T) {
	res, dir := runScript(t, sleepers("kill -9 $$"), "-n", "3")
	if res.status != 128+9 {
		t.Fatalf("status %d, want 137", res.status)
	}
	if !regexp.MustCompile(`narmarun: rank 1 \(pid \d+\) killed by signal 9 \(killed\)\n`).MatchString(res.stderr) {
		t.Errorf("stderr %q does not report rank 1's death", res.stderr)
	}
	checkStopped(t, res, dir, 3)
}

func TestRankIgnoringSIGTERMIsKilled(t *testing.T) {
	// Rank 1 fails; rank 0 ignores SIGTERM and must be killed after the
	// grace period.
	res, dir := runScript(t, writePID+`
if [ "$NARMA_RANK" = 1 ]; then exit 5; fi
trap '' TERM
sleep 120
`, "-n", "2", "--grace", "200ms")
	if res.status != 5 {
		t.Fatalf("status %d, want 5", res.status)
	}
	checkStopped(t, res, dir, 2)
}

// TestSuddenDeathFirst: rank 1 exits with an error and, a moment later,
// rank 2 is killed by a signal narmarun did not send, as when rank 1
// noticed over its connection that rank 2 had died before narmarun reaped
// rank 2. Rank 2 is taken for the first failure; a death long after
// (beyond settle) is not.
func TestSuddenDeathFirst(t *testing.T) {
	body := func(delay string) string {
		return writePID + `
case $NARMA_RANK in
1) sleep 0.2; exit 3 ;;
2) trap '' TERM; sleep 0.2; sleep ` + delay + `; kill -9 $$ ;;
esac
exit 0
`
	}
	res, _ := runScript(t, body("0.05"), "-n", "3")
	if res.status != 128+9 {
		t.Errorf("status %d, want 137 (rank 2's)", res.status)
	}
	if !regexp.MustCompile(`narmarun: rank 2 \(pid \d+\) killed by signal 9 \(killed\) as rank 1 failed: taking it for the first failure\n`).MatchString(res.stderr) {
		t.Errorf("stderr %q does not report rank 2's death", res.stderr)
	}
	res, _ = runScript(t, body(fmt.Sprint(2*settle.Seconds())), "-n", "3", "--grace", "10s")
	if res.status != 3 || strings.Contains(res.stderr, "rank 2") {
		t.Errorf("status %d, stderr %q; want 3 and rank 1 blamed alone", res.status, res.stderr)
	}
}

func TestTimeout(t *testing.T) {
	res, dir := runScript(t, writePID+"exec sleep 120\n", "-n", "3", "--timeout", "300ms")
	if res.status != 124 {
		t.Fatalf("status %d, want 124", res.status)
	}
	if !strings.Contains(res.stderr, "narmarun: timeout") {
		t.Errorf("stderr %q does not report the timeout", res.stderr)
	}
	checkStopped(t, res, dir, 3)
}

func TestTimeoutNotReached(t *testing.T) {
	res, _ := runScript(t, "exit 0\n", "-n", "2", "--timeout", "1h")
	if res.status != 0 {
		t.Fatalf("status %d, want 0", res.status)
	}
}

func TestContextCanceled(t *testing.T) {
	for _, tt := range []struct {
		cause error
		want  int
	}{
		{interrupted{syscall.SIGTERM}, 143},
		{interrupted{os.Interrupt}, 130},
		{errors.New("some other reason"), 130},
	} {
		t.Run(fmt.Sprint(tt.want), func(t *testing.T) {
			path, dir := script(t, writePID+"exec sleep 120\n")
			ctx, cancel := context.WithCancelCause(t.Context())
			go func() {
				appear(pidFiles(dir, 2)...)
				cancel(tt.cause)
			}()
			res := runNarmarun(t, ctx, "-n", "2", "/bin/sh", path, dir)
			if res.status != tt.want {
				t.Fatalf("status %d, want %d", res.status, tt.want)
			}
			checkStopped(t, res, dir, 2)
		})
	}
}

func TestTagOutput(t *testing.T) {
	const n = 3
	// Each rank prints numbered lines on stdout and stderr, one of them
	// long, and ends stdout without a newline.
	res, _ := runScript(t, `
long=$(printf '%5000s' '' | tr ' ' "$NARMA_RANK")
i=0
while [ $i -lt 20 ]; do
	echo "out $NARMA_RANK line $i $long"
	echo "err $NARMA_RANK line $i" >&2
	i=$((i+1))
done
printf "out $NARMA_RANK last"
`, "-n", fmt.Sprint(n), "--tag-output")
	if res.status != 0 {
		t.Fatalf("status %d", res.status)
	}
	long := func(r int) string { return strings.Repeat(fmt.Sprint(r), 5000) }
	check := func(stream, text string, count int, want func(r, i int) string) {
		t.Helper()
		if !strings.HasSuffix(text, "\n") {
			t.Errorf("%s does not end with a newline", stream)
		}
		next := make([]int, n)
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			var r int
			if _, err := fmt.Sscanf(line, "[%d] ", &r); err != nil || r < 0 || r >= n {
				t.Fatalf("%s: untagged line %.60q", stream, line)
			}
			body := strings.TrimPrefix(line, fmt.Sprintf("[%d] ", r))
			if next[r] >= count || body != want(r, next[r]) {
				t.Fatalf("%s: rank %d's line %d is %.60q", stream, r, next[r], body)
			}
			next[r]++
		}
		for r, k := range next {
			if k != count {
				t.Errorf("%s: %d lines of rank %d, want %d", stream, k, r, count)
			}
		}
	}
	check("stdout", res.stdout, 21, func(r, i int) string {
		if i == 20 {
			return fmt.Sprintf("out %d last", r)
		}
		return fmt.Sprintf("out %d line %d %s", r, i, long(r))
	})
	check("stderr", res.stderr, 20, func(r, i int) string { return fmt.Sprintf("err %d line %d", r, i) })
}

func TestCleanup(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	for _, how := range []string{"exit 0", "exit 3"} {
		t.Run(how, func(t *testing.T) {
			res, dir := runScript(t, `
touch "/dev/shm/narma.$NARMA_JOB.test.$NARMA_RANK" || exit 9
echo "$NARMA_JOB $NARMA_BOOTSTRAP" > "$1/job.$NARMA_RANK.tmp" && mv "$1/job.$NARMA_RANK.tmp" "$1/job.$NARMA_RANK"
if [ "$NARMA_RANK" = 0 ]; then `+how+`; fi
`, "-n", "2")
			if want := map[string]int{"exit 0": 0, "exit 3": 3}[how]; res.status != want {
				t.Fatalf("status %d, want %d", res.status, want)
			}
			b, err := os.ReadFile(filepath.Join(dir, "job.0"))
			if err != nil {
				t.Fatal(err)
			}
			f := strings.Fields(string(b))
			for r := range 2 {
				seg := fmt.Sprintf("/dev/shm/narma.%s.test.%d", f[0], r)
				if _, err := os.Stat(seg); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left behind: %v", seg, err)
				}
			}
			sockDir := filepath.Dir(strings.TrimPrefix(f[1], "unix:"))
			if _, err := os.Stat(sockDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("temporary directory %s left behind: %v", sockDir, err)
			}
		})
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestStaleSegmentsRemoved(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	stale := fmt.Sprintf("/dev/shm/narma.%d-0123456789abcdef.x", deadPID(t))
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(stale) })
	res, _ := runScript(t, "exit 0\n", "-n", "1", "-v")
	if res.status != 0 {
		t.Fatalf("status %d", res.status)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale segment %s still there: %v", stale, err)
	}
	if !strings.Contains(res.stderr, "removed stale segment "+stale) {
		t.Errorf("-v did not report the removal of %s", stale)
	}
}

func TestVerbose(t *testing.T) {
	res, _ := runScript(t, "exit 0\n", "-n", "2", "-v")
	for _, re := range []string{
		`narmarun: job \d+-[0-9a-f]{16}: 2 ranks of /bin/sh, transport shm, bootstrap unix:/\S+\n`,
		`narmarun: rank 0: pid \d+\n`,
		`narmarun: rank 1: pid \d+\n`,
		`narmarun: rank 1 \(pid \d+\) exited with status 0\n`,
	} {
		if !regexp.MustCompile(re).MatchString(res.stderr) {
			t.Errorf("-v output lacks %s", re)
		}
	}
}

func TestProgramNotRunnable(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		program string
		want    int
	}{
		{"narmarun-no-such-program", 127},
		{filepath.Join(t.TempDir(), "missing"), 127},
		{notExec, 126},
	} {
		res := runNarmarun(t, t.Context(), "-n", "2", tt.program)
		if res.status != tt.want {
			t.Errorf("%s: status %d, want %d", tt.program, res.status, tt.want)
		}
		if !strings.Contains(res.stderr, filepath.Base(tt.program)) {
			t.Errorf("%s: stderr %q does not name the program", tt.program, res.stderr)
		}
	}
}

func TestBadCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"/bin/true"},
		{"-n", "0", "/bin/true"},
		{"-n", "-3", "/bin/true"},
		{"-n", "two", "/bin/true"},
		{"-n", "2"},
		{"-n", "2", "--no-such-flag", "/bin/true"},
		{"-n", "2", "--transport", "udp", "/bin/true"},
		{"-n", "2", "--transport", "", "/bin/true"},
		{"-n", "2", "--timeout", "-1s", "/bin/true"},
		{"-n", "2", "--timeout", "soon", "/bin/true"},
		{"--hosts", "h1:2", "-n", "3", "/bin/true"},
		{"--hosts", "h1", "--hostfile", "/dev/null", "/bin/true"},
		{"--hosts", "h1", "--transport", "shm", "/bin/true"},
		{"--hosts", "", "/bin/true"},
		{"--hosts", "h1:2,h1", "/bin/true"},
		{"--hosts", "h1", "--bootstrap-addr", "nowhere", "/bin/true"},
		{"--hosts", "h1", "--launcher", " ", "/bin/true"},
		{"--hostfile", "/nonexistent/hosts", "/bin/true"},
		{"--hosts", "localhost:2", "-n", "0", "/bin/true"},
	} {
		res := runNarmarun(t, t.Context(), args...)
		if res.status != exitUsage || !strings.Contains(res.stderr, "usage: narmarun -n N") {
			t.Errorf("narmarun %q: status %d, stderr %q; want %d and the usage", args, res.status, res.stderr, exitUsage)
		}
		if res.stdout != "" {
			t.Errorf("narmarun %q printed %q on stdout", args, res.stdout)
		}
	}
	res := runNarmarun(t, t.Context(), "-n", "2", "--transport", "udp", "/bin/true")
	if !strings.Contains(res.stderr, `unknown transport "udp" (supported: hybrid, shm, tcp)`) {
		t.Errorf("stderr %q does not explain the transport", res.stderr)
	}
	if res := runNarmarun(t, t.Context(), "--hosts", "h1:2", "-n", "3", "/bin/true"); !strings.Contains(res.stderr, "3 ranks but only 2 slots") {
		t.Errorf("stderr %q does not explain the slots", res.stderr)
	}
	if res := runNarmarun(t, t.Context(), "--hosts", "h1", "--transport", "shm", "/bin/true"); !strings.Contains(res.stderr, "shm needs every rank on this host") {
		t.Errorf("stderr %q does not explain why shm cannot be", res.stderr)
	}
	res = runNarmarun(t, t.Context(), "-h")
	for _, want := range []string{"-tag-output", "tcp", "NARMA_TCP_TIMEOUT", "NARMA_TCP_SPIN", "-hosts", "-hostfile", "-launcher", "-bootstrap-addr", "NARMA_HOST"} {
		if res.status != 0 || !strings.Contains(res.stderr, want) {
			t.Errorf("-h: status %d, stderr %q lacks %q", res.status, res.stderr, want)
		}
	}
}

func TestBootstrapFromProcesses(t *testing.T) {
	_, testprog := binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	res := runNarmarun(t, ctx, "-n", "4", testprog)
	if res.status != 0 {
		t.Fatalf("status %d, want 0", res.status)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	slices.Sort(lines)
	want := []string{"rank 0 of 4: ok", "rank 1 of 4: ok", "rank 2 of 4: ok", "rank 3 of 4: ok"}
	if !slices.Equal(lines, want) {
		t.Fatalf("output %q, want %q", lines, want)
	}
}

func TestBootstrapRankDiesMidRound(t *testing.T) {
	_, testprog := binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	start := time.Now()
	res := runNarmarun(t, ctx, "-n", "4", testprog, "-fail-rank", "2")
	if res.status != 3 {
		t.Fatalf("status %d, want 3 (rank 2's)", res.status)
	}
	if !regexp.MustCompile(`narmarun: rank 2 \(pid \d+\) exited with status 3`).MatchString(res.stderr) {
		t.Errorf("stderr does not report rank 2's exit")
	}
	if time.Since(start) > patience {
		t.Errorf("the other ranks hung")
	}
}

// TestBootstrapRankFailsBeforeDialing: rank 2 fails without ever joining,
// so the others wait in a round until narmarun stops them. Killing them
// in the middle of that round must not make the bootstrap blame them.
func TestBootstrapRankFailsBeforeDialing(t *testing.T) {
	_, testprog := binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	res := runNarmarun(t, ctx, "-n", "4", testprog, "-fail-rank", "2", "-fail-at", "dial")
	if res.status != 3 {
		t.Fatalf("status %d, want 3 (rank 2's)", res.status)
	}
	if strings.Contains(res.stderr, "narmarun: bootstrap:") {
		t.Errorf("narmarun reports a bootstrap failure it caused itself")
	}
}

// TestNarmaProgram runs a real narma program (windows in shared-memory
// segments, notified puts) under narmarun: it succeeds on every rank, and
// when one rank is killed with SIGKILL in the middle, narmarun exits with
// 128+9, names that rank, stops the others and removes the job's
// segments.
func TestNarmaProgram(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	testNarmaProgram(t)
}

// TestNarmaProgramTCP is TestNarmaProgram over the TCP transport: the
// same program, its windows in ordinary memory, its connections between
// the ranks authenticated with the job secret narmarun made.
func TestNarmaProgramTCP(t *testing.T) {
	testNarmaProgram(t, "--transport", "tcp")
}

// testNarmaProgram runs narmaprog under narmarun with flags: a good run,
// and one in which rank 2 kills itself.
func testNarmaProgram(t *testing.T, flags ...string) {
	prog := narmaProgram(t)
	jobSegments := func(out string) []string {
		t.Helper()
		var job string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "job" {
				job = f[1]
			}
		}
		if job == "" {
			t.Fatalf("no job id in the output %q", out)
		}
		left, _ := filepath.Glob("/dev/shm/narma." + job + "*")
		return left
	}
	t.Run("ok", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, append(append([]string{"-n", "4"}, flags...), prog)...)
		if res.status != 0 {
			t.Fatalf("status %d, want 0", res.status)
		}
		for r := range 4 {
			if !strings.Contains(res.stdout, fmt.Sprintf("rank %d of 4: ok", r)) {
				t.Errorf("rank %d did not finish", r)
			}
		}
		if res.stderr != "" {
			t.Errorf("stderr %q on a good run", res.stderr)
		}
		if left := jobSegments(res.stdout); len(left) > 0 {
			t.Errorf("segments left behind: %v", left)
		}
	})
	t.Run("killed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, append(append([]string{"-n", "4"}, flags...),
			prog, "-rounds", "1000000", "-kill-rank", "2", "-kill-round", "50")...)
		if res.status != 128+9 {
			t.Fatalf("status %d, want 137", res.status)
		}
		if !regexp.MustCompile(`narmarun: rank 2 \(pid \d+\) killed by signal 9`).MatchString(res.stderr) {
			t.Errorf("stderr %q does not report rank 2's death", res.stderr)
		}
		if ctx.Err() != nil || strings.Contains(res.stderr, "after SIGTERM") {
			t.Errorf("the other ranks were not stopped by SIGTERM (after %v)", res.elapsed)
		}
		if strings.Contains(res.stdout, ": ok") {
			t.Errorf("a rank finished a ring that rank 2 broke: %q", res.stdout)
		}
		if left := jobSegments(res.stdout); len(left) > 0 {
			t.Errorf("segments left behind: %v", left)
		}
	})
}

// TestRemoveStaleDirs: the next narmarun removes the temporary directory
// (and bootstrap socket) of a narmarun killed with SIGKILL, and nothing
// else: not a live narmarun's, not one holding other files, not one
// named otherwise.
func TestRemoveStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid := dead.Process.Pid // reaped: no longer runs
	mk := func(name string, files ...string) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk(fmt.Sprintf("narmarun-%d-123", deadPid), socketName)
	empty := mk(fmt.Sprintf("narmarun-%d-456", deadPid))
	live := mk(fmt.Sprintf("narmarun-%d-789", os.Getpid()), socketName)
	other := mk(fmt.Sprintf("narmarun-%d-abc", deadPid), socketName, "notes.txt")
	oldStyle := mk("narmarun-4242", socketName)
	removed, err := removeStaleDirs(tmp)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{stale, empty}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, dir := range []string{live, other, oldStyle} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestFirstFailureNamed: rank 1 of 4 panics, or exits with status 3,
// while the others wait for it in a Barrier, which then fails. Over tcp
// the others see its connections die, and may exit, before narmarun
// sees rank 1 end; over every transport narmarun must name rank 1, with
// its own status, as the failure, first, and exit with that status. The
// others tell it, through the bootstrap, that rank 1 failed before they
// exit (package join); without that, over tcp, it names one of them in
// some of the runs. Each case runs a few times: the order of the exits
// varies from run to run.
func TestFirstFailureNamed(t *testing.T) {
	prog := narmaProgram(t)
	transports := []string{"tcp", "hybrid"}
	if _, err := os.Stat("/dev/shm"); err == nil {
		transports = append(transports, "shm")
	}
	const runs = 3
	for _, tr := range transports {
		for _, c := range []struct {
			how    string
			status int
		}{{"panic", 2}, {"exit3", 3}} {
			t.Run(tr+"/"+c.how, func(t *testing.T) {
				for range runs {
					ctx, cancel := context.WithTimeout(t.Context(), patience)
					res := runNarmarun(t, ctx, "-n", "4", "--transport", tr, prog, "-fail-rank", "1", "-fail-how", c.how)
					cancel()
					if res.status != c.status {
						t.Errorf("status %d, want rank 1's, %d", res.status, c.status)
					}
					first := regexp.MustCompile(`narmarun: rank \d .*`).FindString(res.stderr)
					if !regexp.MustCompile(fmt.Sprintf(`^narmarun: rank 1 \(pid \d+\) exited with status %d$`, c.status)).MatchString(first) {
						t.Errorf("narmarun names %q first, want rank 1 and its status %d", first, c.status)
					}
				}
			})
		}
	}
}
