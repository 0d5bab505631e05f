package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of this file run ranks on "other hosts" that are this one:
// the launcher agent they give narmarun ignores the host and runs the
// command as ssh would have the remote side run it, a line for the shell,
// in a session of its own, so that killing the agent does not kill the
// rank (as killing ssh does not kill the remote command). The bootstrap
// listens on loopback TCP.

// agentScript is that agent: it logs its host and command line to LOG,
// then runs the command under setsid -w, which waits for it and exits
// with its status.
const agentScript = `#!/bin/sh
host=$1; shift
printf '%s\n' "$host $*" >> LOG
exec setsid -w sh -c "$*"
`

// fakeAgent writes a launcher agent made from body (LOG replaced by a log
// file next to it) and returns its path and the log's.
func fakeAgent(t *testing.T, body string) (agent, log string) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid (util-linux)")
	}
	dir := t.TempDir()
	agent, log = filepath.Join(dir, "agent.sh"), filepath.Join(dir, "agent.log")
	if err := os.WriteFile(agent, []byte(strings.ReplaceAll(body, "LOG", log)), 0o755); err != nil {
		t.Fatal(err)
	}
	return agent, log
}

// remoteFlags returns the flags of a job on hosts through agent, the
// bootstrap on loopback.
func remoteFlags(hosts, agent string) []string {
	return []string{"--hosts", hosts, "--launcher", agent, "--bootstrap-addr", "127.0.0.1:0"}
}

// survivors returns the pids of the processes running prog.
func survivors(prog string) []int {
	var pids []int
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range exes {
		if target, err := os.Readlink(exe); err == nil && (target == prog || target == prog+" (deleted)") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(exe)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// checkNoSurvivors checks that no process runs prog a few seconds after
// a job ended (ranks on other hosts exit on their own once their
// bootstrap connection closes), and kills those that do.
func checkNoSurvivors(t *testing.T, prog string) {
	t.Helper()
	var left []int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left = survivors(prog); len(left) == 0 {
			return
		}
	}
	t.Errorf("ranks of %s still run after the job: pids %v", prog, left)
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// TestRemoteEnvironment: ranks on other hosts get the job's variables
// (NARMA_HOST the index of their host), the job secret through their
// standard input and on no command line, narmarun's working directory,
// and their arguments unchanged through the remote shell.
func TestRemoteEnvironment(t *testing.T) {
	agent, log := fakeAgent(t, agentScript)
	path, dir := script(t, `d=$1; shift
{ printf '%s\n' "$NARMA_RANK" "$NARMA_SIZE" "$NARMA_HOST" "$NARMA_TRANSPORT" "$NARMA_BOOTSTRAP" "${NARMA_TCP_LISTEN-unset}" "${NARMA_SECRET-unset}" "$(pwd)" "$#"; printf '%s\n' "$@"; } > "$d/rank.$NARMA_RANK.tmp"
mv "$d/rank.$NARMA_RANK.tmp" "$d/rank.$NARMA_RANK"
echo "hello from $NARMA_RANK"
`)
	args := []string{"a b", "it's", "$HOME", "*", "", `"x"`}
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	res := runNarmarun(t, ctx, append(append(remoteFlags("localhost:1,fake-a:2,fake-b", agent), "--tag-output", "-v", "/bin/sh", path, dir), args...)...)
	if res.status != 0 {
		t.Fatalf("status %d, want 0", res.status)
	}
	cwd, _ := os.Getwd()
	hostOf := []string{"0", "1", "1", "2"}
	names := []string{"localhost", "fake-a", "fake-a", "fake-b"}
	var secret string
	for r := range 4 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank.%d", r)))
		if err != nil {
			t.Fatalf("rank %d did not run: %v", r, err)
		}
		f := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(f) != 9+len(args) {
			t.Fatalf("rank %d saw %q", r, f)
		}
		if want := []string{fmt.Sprint(r), "4", hostOf[r], "hybrid"}; !slices.Equal(f[:4], want) {
			t.Errorf("rank %d: NARMA_RANK, SIZE, HOST, TRANSPORT = %q, want %q", r, f[:4], want)
		}
		if !strings.HasPrefix(f[4], "tcp:127.0.0.1:") || f[5] != "auto" {
			t.Errorf("rank %d: NARMA_BOOTSTRAP %q, NARMA_TCP_LISTEN %q; want tcp:127.0.0.1:port and auto", r, f[4], f[5])
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(f[6]) || (secret != "" && f[6] != secret) {
			t.Errorf("rank %d: NARMA_SECRET %q, want the job's", r, f[6])
		}
		secret = f[6]
		if f[7] != cwd {
			t.Errorf("rank %d runs in %s, want %s", r, f[7], cwd)
		}
		if got := f[9:]; f[8] != fmt.Sprint(len(args)) || !slices.Equal(got, args) {
			t.Errorf("rank %d got %s arguments %q, want %q", r, f[8], got, args)
		}
		if want := fmt.Sprintf("[%d@%s] hello from %d\n", r, names[r], r); !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(calls)
	if len(calls) != 3 || !strings.HasPrefix(calls[0], "fake-a env ") || !strings.HasPrefix(calls[1], "fake-a env ") || !strings.HasPrefix(calls[2], "fake-b env ") {
		t.Errorf("the agent was called as %q; want twice for fake-a, once for fake-b", calls)
	}
	if strings.Contains(string(b), secret) || strings.Contains(res.stderr, secret) || strings.Contains(res.stdout, secret) {
		t.Errorf("the job secret is on a command line or in narmarun's output")
	}
	if !regexp.MustCompile(`narmarun: rank 1: launcher agent pid \d+: \S+agent.sh fake-a env NARMA_RANK=1 `).MatchString(res.stderr) {
		t.Errorf("-v does not show the agent's command line")
	}
}

// TestRemoteNarmaProgram runs narmaprog on "three hosts" over tcp: each
// rank listens on the address it reaches the bootstrap from (loopback
// here); when rank 2 kills itself, narmarun names it and exits with its
// agent's status, and no rank survives the job.
func TestRemoteNarmaProgram(t *testing.T) {
	agent, _ := fakeAgent(t, agentScript)
	prog := narmaProgram(t)
	flags := remoteFlags("localhost:1,fake-a:2,fake-b:1", agent)
	t.Run("ok", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, append(flags, prog, "-print-listen")...)
		if res.status != 0 {
			t.Fatalf("status %d, want 0", res.status)
		}
		for r := range 4 {
			if !strings.Contains(res.stdout, fmt.Sprintf("rank %d of 4: ok", r)) {
				t.Errorf("rank %d did not finish", r)
			}
			if !regexp.MustCompile(fmt.Sprintf(`(?m)^rank %d listens on 127\.0\.0\.1:\d+$`, r)).MatchString(res.stdout) {
				t.Errorf("rank %d did not listen on 127.0.0.1", r)
			}
		}
		if res.stderr != "" {
			t.Errorf("stderr %q on a good run", res.stderr)
		}
		checkNoSurvivors(t, prog)
	})
	t.Run("killed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, append(flags, prog, "-rounds", "1000000", "-kill-rank", "2", "-kill-round", "50")...)
		checkRankBlamed(t, res, `rank 2 on fake-a \(pid \d+ there, agent pid \d+\)`)
		if ctx.Err() != nil {
			t.Errorf("the job was not stopped (after %v)", res.elapsed)
		}
		checkNoSurvivors(t, prog)
	})
}

// checkRankBlamed checks that narmarun reported the failure of the rank
// that who (a regular expression) describes and exited with its status.
func checkRankBlamed(t *testing.T, res result, who string) {
	t.Helper()
	m := regexp.MustCompile(`narmarun: ` + who + ` exited with status (\d+)`).FindStringSubmatch(res.stderr)
	if m == nil {
		t.Fatalf("stderr %q does not report the failure of %s", res.stderr, who)
	}
	if res.status == 0 || fmt.Sprint(res.status) != m[1] {
		t.Errorf("status %d, want %s's, %s", res.status, who, m[1])
	}
}

// TestRemoteStopped: when narmarun stops a job (timeout, interrupt), the
// ranks on other hosts exit on their own as their bootstrap connections
// close (killing their launcher agents would leave them running).
func TestRemoteStopped(t *testing.T) {
	agent, _ := fakeAgent(t, agentScript)
	prog := narmaProgram(t)
	flags := remoteFlags("fake-a:2,fake-b:2", agent)
	t.Run("timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, append(flags, "--timeout", "1s", prog, "-rounds", "1000000000", "-joined")...)
		if res.status != exitTimeout {
			t.Errorf("status %d, want %d", res.status, exitTimeout)
		}
		// Every rank that joined says why it exits: that its launcher
		// stopped the job. It says so as soon as the launcher's reason
		// reaches it, and the launcher waits for that before it closes
		// any connection: before any peer can end because of the stop,
		// which the rank's program may then report too (package join).
		// A rank that had not joined by then (on a loaded machine)
		// cannot be told.
		for r := range 4 {
			if !strings.Contains(res.stdout, fmt.Sprintf("rank %d joined\n", r)) {
				t.Logf("rank %d had not joined when the time was up", r)
				continue
			}
			want := fmt.Sprintf("narma: rank %d of 4: exiting: the launcher stopped the job: the job ran for 1s (--timeout)\n", r)
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr %q: rank %d does not say that the launcher stopped the job", res.stderr, r)
			}
		}
		checkNoSurvivors(t, prog)
	})
	t.Run("interrupt", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		time.AfterFunc(time.Second, func() { cancel(interrupted{os.Interrupt}) })
		res := runNarmarun(t, ctx, append(flags, prog, "-rounds", "1000000000")...)
		if res.status != 130 {
			t.Errorf("status %d, want 130", res.status)
		}
		checkNoSurvivors(t, prog)
	})
}

// TestRemoteFirstFailure: rank 1, on another host, fails first, but its
// agent takes long to report it, and rank 0, which lost it, is reaped
// first: the bootstrap saw rank 1 end first, and narmarun takes it for
// the first failure.
func TestRemoteFirstFailure(t *testing.T) {
	agent, _ := fakeAgent(t, `#!/bin/sh
trap '' TERM
host=$1; shift
setsid -w sh -c "$*"
s=$?
sleep 0.7
exit $s
`)
	_, testprog := binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	res := runNarmarun(t, ctx, append(remoteFlags("localhost:1,fake-a:1", agent), testprog, "-fail-rank", "1", "-fail-at", "end")...)
	if res.status != 3 {
		t.Errorf("status %d, want 3 (rank 1's)", res.status)
	}
	if !regexp.MustCompile(`narmarun: rank 0 on localhost \(pid \d+\) exited with status 1\n`).MatchString(res.stderr) ||
		!regexp.MustCompile(`narmarun: rank 1 on fake-a \(pid \d+ there, agent pid \d+\) exited with status 3, and left the job before rank 0: taking it for the first failure\n`).MatchString(res.stderr) {
		t.Errorf("stderr %q does not blame rank 1", res.stderr)
	}
}

// TestRemoteStartFailures: a missing agent, an agent that does not pass
// the secret on, and a program missing on the other host.
func TestRemoteStartFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	res := runNarmarun(t, ctx, append(remoteFlags("fake-a:1", "narmarun-no-such-agent -x"), "/bin/true")...)
	if res.status != exitNotFound || !strings.Contains(res.stderr, "narmarun-no-such-agent") {
		t.Errorf("a missing agent: status %d, stderr %q; want %d and its name", res.status, res.stderr, exitNotFound)
	}

	agent, _ := fakeAgent(t, `#!/bin/sh
host=$1; shift
exec sh -c "$*" </dev/null
`)
	res = runNarmarun(t, ctx, append(remoteFlags("fake-a:1", agent), "/bin/true")...)
	if res.status != 1 || !strings.Contains(res.stderr, "no job secret on standard input") {
		t.Errorf("an agent that drops stdin: status %d, stderr %q; want 1 and why", res.status, res.stderr)
	}

	agent, _ = fakeAgent(t, agentScript)
	missing := filepath.Join(t.TempDir(), "not-here")
	res = runNarmarun(t, ctx, append(remoteFlags("fake-a:1", agent), missing)...)
	if res.status != exitNotFound || !strings.Contains(res.stderr, missing) {
		t.Errorf("a program missing there: status %d, stderr %q; want %d", res.status, res.stderr, exitNotFound)
	}
}
