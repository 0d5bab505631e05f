package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// testNet is a network of hosts made of Linux network namespaces for a
// test: each host a namespace with one interface, eth0, on a bridge that
// lives in a namespace of its own, which the root namespace (where
// narmarun runs) reaches through one more interface.
type testNet struct {
	prefix string   // of the namespaces' names: prefix + "h0", ...
	subnet string   // "10.231.X."
	hosts  []string // the hosts' namespaces
	ips    []string // their addresses
	rootIP string   // the root namespace's address on the bridge
}

// needNetns skips the test unless it can make network namespaces.
func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the multi-host test makes network namespaces: it needs root and iproute2 (ip)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the multi-host test makes network namespaces: it needs root and iproute2 (ip), which is missing")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("the multi-host test needs setsid (util-linux)")
	}
}

// freeSubnet returns a 10.231.X. prefix of a /24 that no interface of
// this namespace has an address in.
func freeSubnet(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		x := 1 + (os.Getpid()+i)%250
		_, subnet, _ := net.ParseCIDR(fmt.Sprintf("10.231.%d.0/24", x))
		used := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && (subnet.Contains(ipn.IP) || ipn.Contains(subnet.IP)) {
				used = true
			}
		}
		if !used {
			return fmt.Sprintf("10.231.%d.", x)
		}
	}
	t.Skip("no free /24 in 10.231.0.0/16 for the test's network")
	return ""
}

// makeNet makes a network of n hosts, and removes it, with whatever
// still runs in it, when the test ends (failed or not).
func makeNet(t *testing.T, n int) *testNet {
	t.Helper()
	pid := os.Getpid()
	tn := &testNet{prefix: fmt.Sprintf("narma-%d-", pid), subnet: freeSubnet(t)}
	bridge := tn.prefix + "br"
	rootIf := fmt.Sprintf("nrm%d", pid) // at most 15 characters
	tn.rootIP = tn.subnet + "1"
	for i := range n {
		tn.hosts = append(tn.hosts, fmt.Sprintf("%sh%d", tn.prefix, i))
		tn.ips = append(tn.ips, fmt.Sprintf("%s%d", tn.subnet, 2+i))
	}
	// Remove everything this test may have made, whatever exists.
	t.Cleanup(func() {
		for _, ns := range append([]string{bridge}, tn.hosts...) {
			if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
				for _, f := range strings.Fields(string(out)) {
					var p int
					if _, err := fmt.Sscan(f, &p); err == nil {
						syscall.Kill(p, syscall.SIGKILL)
					}
				}
			}
			exec.Command("ip", "netns", "del", ns).Run()
		}
		exec.Command("ip", "link", "del", rootIf).Run()
	})
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", bridge).CombinedOutput(); err != nil {
		t.Skipf("cannot make network namespaces here (ip netns add: %v: %s): the multi-host test needs root with CAP_SYS_ADMIN and CAP_NET_ADMIN",
			err, strings.TrimSpace(string(out)))
	}
	ip("-n", bridge, "link", "set", "lo", "up")
	ip("-n", bridge, "link", "add", "br0", "type", "bridge")
	ip("-n", bridge, "link", "set", "br0", "up")
	// The root namespace's leg.
	ip("link", "add", rootIf, "type", "veth", "peer", "name", "p0", "netns", bridge)
	ip("-n", bridge, "link", "set", "p0", "master", "br0", "up")
	ip("addr", "add", tn.rootIP+"/24", "dev", rootIf)
	ip("link", "set", rootIf, "up")
	for i, ns := range tn.hosts {
		port := fmt.Sprintf("p%d", i+1)
		ip("netns", "add", ns)
		ip("-n", ns, "link", "set", "lo", "up")
		ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", bridge)
		ip("-n", bridge, "link", "set", port, "master", "br0", "up")
		ip("-n", ns, "addr", "add", tn.ips[i]+"/24", "dev", "eth0")
		ip("-n", ns, "link", "set", "eth0", "up")
	}
	return tn
}

// agent writes the launcher agent of the network: it "logs in" to a host,
// named by its namespace or its address, by running the command line in
// the host's namespace, with a shell as ssh would, in a session of its
// own so that killing the agent leaves the rank running (as killing ssh
// leaves the remote command).
func (tn *testNet) agent(t *testing.T) string {
	t.Helper()
	var cases strings.Builder
	for i, ns := range tn.hosts {
		fmt.Fprintf(&cases, "%s|%s) ns=%s ;;\n", ns, tn.ips[i], ns)
	}
	body := "#!/bin/sh\nhost=$1; shift\ncase $host in\n" + cases.String() +
		"*) echo \"agent: unknown host $host\" >&2; exit 255 ;;\nesac\n" +
		"exec ip netns exec \"$ns\" setsid -w sh -c \"$*\"\n"
	path := filepath.Join(t.TempDir(), "netns-agent")
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMultiHost runs narmaprog, a real narma program, on 4 hosts of 2
// ranks each, the hosts being network namespaces on one bridge, over
// tcp: the bootstrap listens on the root namespace's address on the
// bridge (the default: the address towards the first host), every rank
// listens on its own host's address, and all succeed. Then rank 5 kills
// itself in the middle: the job fails with rank 5 named and its status,
// and no rank survives.
func TestMultiHost(t *testing.T) {
	needNetns(t)
	prog := narmaProgram(t)
	tn := makeNet(t, 4)
	agent := tn.agent(t)

	t.Run("ok", func(t *testing.T) {
		// The hosts by address, from a host file.
		var hostfile strings.Builder
		hostfile.WriteString("# the test's namespaces\n")
		for _, a := range tn.ips {
			fmt.Fprintf(&hostfile, "%s:2\n", a)
		}
		path := filepath.Join(t.TempDir(), "hosts")
		if err := os.WriteFile(path, []byte(hostfile.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, "--hostfile", path, "--launcher", agent, "--transport", "tcp", "-v",
			prog, "-print-listen", "-rounds", "200")
		if res.status != 0 {
			t.Fatalf("status %d, want 0", res.status)
		}
		if want := fmt.Sprintf(", transport tcp, bootstrap tcp:%s:", tn.rootIP); !strings.Contains(res.stderr, want) {
			t.Errorf("the bootstrap did not listen on %s, the address towards the hosts", tn.rootIP)
		}
		for r := range 8 {
			if !strings.Contains(res.stdout, fmt.Sprintf("rank %d of 8: ok\n", r)) {
				t.Errorf("rank %d did not finish", r)
			}
			re := regexp.MustCompile(fmt.Sprintf(`(?m)^rank %d listens on (\S+)$`, r))
			m := re.FindAllStringSubmatch(res.stdout, -1)
			if len(m) != 1 {
				t.Errorf("rank %d listened on %d addresses, want 1", r, len(m))
				continue
			}
			if host, _, _ := net.SplitHostPort(m[0][1]); host != tn.ips[r/2] {
				t.Errorf("rank %d listened on %s, want its host's address %s", r, m[0][1], tn.ips[r/2])
			}
		}
		if strings.Contains(res.stderr, "exiting") || strings.Contains(res.stderr, "refused") {
			t.Errorf("stderr %q on a good run", res.stderr)
		}
		checkNoSurvivors(t, prog)
	})

	t.Run("hybrid", func(t *testing.T) {
		// The default transport of a job on several hosts: shared
		// memory between the two ranks of each host, TCP between hosts.
		var hosts []string
		for _, ns := range tn.hosts {
			hosts = append(hosts, ns+":2")
		}
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, "--hosts", strings.Join(hosts, ","), "--launcher", agent,
			"--bootstrap-addr", tn.rootIP+":0", "-v", prog, "-rounds", "200")
		if res.status != 0 {
			t.Fatalf("status %d, want 0\n%s", res.status, res.stderr)
		}
		if !strings.Contains(res.stderr, ", transport hybrid,") {
			t.Errorf("transport not hybrid:\n%s", res.stderr)
		}
		for r := range 8 {
			if !strings.Contains(res.stdout, fmt.Sprintf("rank %d of 8: ok\n", r)) {
				t.Errorf("rank %d did not finish", r)
			}
		}
		checkNoSurvivors(t, prog)
	})

	t.Run("killed", func(t *testing.T) {
		// The hosts by namespace, the bootstrap address given.
		var hosts []string
		for _, ns := range tn.hosts {
			hosts = append(hosts, ns+":2")
		}
		ctx, cancel := context.WithTimeout(t.Context(), patience)
		defer cancel()
		res := runNarmarun(t, ctx, "--hosts", strings.Join(hosts, ","), "--launcher", agent,
			"--bootstrap-addr", tn.rootIP+":0", "--tag-output",
			prog, "-rounds", "1000000", "-kill-rank", "5", "-kill-round", "50")
		checkRankBlamed(t, res, fmt.Sprintf(`rank 5 on %s \(pid \d+ there, agent pid \d+\)`, regexp.QuoteMeta(tn.hosts[2])))
		if ctx.Err() != nil || strings.Contains(res.stderr, "after SIGTERM") {
			t.Errorf("the job was not stopped in time (after %v)", res.elapsed)
		}
		if strings.Contains(res.stdout, ": ok") {
			t.Errorf("a rank finished a ring that rank 5 broke: %q", res.stdout)
		}
		checkNoSurvivors(t, prog)
	})
}
