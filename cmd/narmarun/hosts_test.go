package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseHost(t *testing.T) {
	for _, tt := range []struct {
		in    string
		name  string
		slots int
	}{
		{"h1", "h1", 1},
		{"h1:4", "h1", 4},
		{"node-7.cluster.example", "node-7.cluster.example", 1},
		{"me@h1:2", "me@h1", 2},
		{"10.231.7.2:8", "10.231.7.2", 8},
		{"fe80::1", "fe80::1", 1},
		{"[fe80::1%eth0]:3", "fe80::1%eth0", 3},
		{"[2001:db8::7]", "2001:db8::7", 1},
	} {
		h, err := parseHost(tt.in)
		if err != nil || h.name != tt.name || h.slots != tt.slots {
			t.Errorf("parseHost(%q) = %+v, %v; want %s with %d slots", tt.in, h, err, tt.name, tt.slots)
		}
	}
	for _, in := range []string{"", "h1:", "h1:0", "h1:-2", "h1:x", "-oProxyCommand=x", "h 1", "h;rm", "h$x", "[fe80::1", "[fe80::1]4", ":4"} {
		if h, err := parseHost(in); err == nil {
			t.Errorf("parseHost(%q) = %+v, want an error", in, h)
		}
	}
	name, _ := os.Hostname()
	for _, local := range []string{"localhost", "127.0.0.1", "LocalHost", name} {
		if h, err := parseHost(local + ":2"); err != nil || !h.local {
			t.Errorf("parseHost(%q) = %+v, %v; want this host", local+":2", h, err)
		}
	}
	if h, _ := parseHost("10.231.7.2"); h.local {
		t.Errorf("10.231.7.2 taken for this host")
	}
}

func TestParseHosts(t *testing.T) {
	hosts, err := parseHosts("localhost:2, h1:4,h2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hosts {
		got = append(got, strings.Join([]string{h.name, string(rune('0' + h.slots))}, ":"))
	}
	if want := []string{"localhost:2", "h1:4", "h2:1"}; !slices.Equal(got, want) || !hosts[0].local || hosts[1].local {
		t.Errorf("parseHosts = %+v, want %v, localhost local", hosts, want)
	}
	for _, in := range []string{"", "h1,", "h1,h1:2", "H1,h1", "localhost,127.0.0.1"} {
		if _, err := parseHosts(in); err == nil {
			t.Errorf("parseHosts(%q) succeeded", in)
		}
	}
}

func TestReadHostfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hosts")
	if err := os.WriteFile(path, []byte("# the cluster\n\nh1:4   # the first\n  h2:2\nh3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts, err := readHostfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 3 || hosts[0].name != "h1" || hosts[0].slots != 4 || hosts[1].name != "h2" || hosts[1].slots != 2 || hosts[2].slots != 1 {
		t.Errorf("readHostfile = %+v", hosts)
	}
	for name, text := range map[string]string{
		"empty":     "# nobody\n\n",
		"bad slots": "h1:4\nh2:many\n",
		"twice":     "h1\nh1:2\n",
		"two words": "h1 slots=4\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		os.WriteFile(p, []byte(text), 0o644)
		if _, err := readHostfile(p); err == nil {
			t.Errorf("%s: readHostfile succeeded", name)
		} else if name == "bad slots" && !strings.Contains(err.Error(), ":2:") {
			t.Errorf("%s: error %q does not give the line", name, err)
		}
	}
	if _, err := readHostfile(filepath.Join(dir, "missing")); err == nil {
		t.Error("readHostfile of a missing file succeeded")
	}
}

func TestPlace(t *testing.T) {
	hosts := []host{{name: "a", slots: 2}, {name: "b", slots: 3}, {name: "c", slots: 1}}
	for n, want := range map[int][]int{
		1: {0},
		4: {0, 0, 1, 1},
		6: {0, 0, 1, 1, 1, 2},
	} {
		got, err := place(hosts, n)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("place(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
	if _, err := place(hosts, 7); err == nil || !strings.Contains(err.Error(), "only 6 slots") {
		t.Errorf("place(7) on 6 slots: %v, want an error", err)
	}
}

// TestShellQuote: words quoted for the remote shell reach the program
// unchanged, once the shell has split the command line ssh sends it.
func TestShellQuote(t *testing.T) {
	words := []string{"plain", "a b", "it's", `"double"`, "$HOME", "*", "", "back\\slash", "new\nline", "semi;colon", "~", "-n", "NARMA_RANK=3", "é", "'"}
	line := "printf '%s\\n'"
	for _, w := range words {
		line += " " + shellQuote(w)
	}
	out, err := exec.Command("/bin/sh", "-c", line).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(got) < len(words) {
		t.Fatalf("%q gave %q", line, out)
	}
	if got, want := string(out), strings.Join(words, "\n")+"\n"; got != want {
		t.Errorf("the shell gave\n%q\nwant\n%q", got, want)
	}
	for _, w := range []string{"plain", "NARMA_RANK=3", "/a/b-c.d", "tcp:10.0.0.1:5"} {
		if q := shellQuote(w); q != w {
			t.Errorf("shellQuote(%q) = %q, want it bare", w, q)
		}
	}
}

// TestHostsCommandLine: -n defaults to the slots, the ranks are placed in
// blocks, and the transport defaults to tcp when ranks run on another
// host (shm otherwise, hosts left without ranks being unused).
func TestHostsCommandLine(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		n         int
		hostOf    []int
		transport string
		remote    bool
		launcher  []string
	}{
		{[]string{"--hosts", "localhost:2,h1:3"}, 5, []int{0, 0, 1, 1, 1}, "hybrid", true, []string{"ssh"}},
		{[]string{"--hosts", "localhost:4"}, 4, []int{0, 0, 0, 0}, "shm", false, []string{"ssh"}},
		{[]string{"--hosts", "localhost:2,h1:3", "-n", "2"}, 2, []int{0, 0}, "shm", false, []string{"ssh"}},
		{[]string{"--hosts", "h1:2,h2:2", "-n", "3", "--launcher", "ssh -p 2222  -x"}, 3, []int{0, 0, 1}, "hybrid", true, []string{"ssh", "-p", "2222", "-x"}},
		{[]string{"-n", "3"}, 3, nil, "shm", false, []string{"ssh"}},
	} {
		var stderr strings.Builder
		cfg, status, ok := parseArgs(append(tt.args, "prog", "arg"), &stderr)
		if !ok {
			t.Errorf("%q: status %d, %s", tt.args, status, stderr.String())
			continue
		}
		if cfg.n != tt.n || !slices.Equal(cfg.hostOf, tt.hostOf) || cfg.transport != tt.transport ||
			cfg.remote() != tt.remote || !slices.Equal(cfg.launcher, tt.launcher) || cfg.program != "prog" {
			t.Errorf("%q: n %d, hosts %v, transport %s, remote %v, launcher %q; want %d, %v, %s, %v, %q",
				tt.args, cfg.n, cfg.hostOf, cfg.transport, cfg.remote(), cfg.launcher, tt.n, tt.hostOf, tt.transport, tt.remote, tt.launcher)
		}
	}
}
