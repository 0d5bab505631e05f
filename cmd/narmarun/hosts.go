package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// host is one entry of --hosts or --hostfile.
type host struct {
	name  string // as given, brackets of an IPv6 address removed
	slots int    // ranks it takes at most
	local bool   // this machine: its ranks start directly
}

// localNames are the names of this machine besides its hostname.
var localNames = []string{"localhost", "127.0.0.1", "::1"}

// isLocal reports whether name designates this machine: "localhost",
// "127.0.0.1", "::1" or its hostname (case aside). Other names of it
// are started through the launcher agent, which works, only slower.
func isLocal(name string) bool {
	for _, l := range localNames {
		if strings.EqualFold(name, l) {
			return true
		}
	}
	h, err := os.Hostname()
	return err == nil && h != "" && strings.EqualFold(name, h)
}

// parseHosts parses the value of --hosts: comma-separated host[:slots].
func parseHosts(list string) ([]host, error) {
	var hosts []host
	for _, f := range strings.Split(list, ",") {
		h, err := parseHost(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--hosts: %w", err)
		}
		hosts = append(hosts, h)
	}
	return hosts, checkHosts(hosts)
}

// readHostfile reads a host file: one host[:slots] per line; blank lines
// and what follows a # are ignored.
func readHostfile(path string) ([]host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--hostfile: %w", err)
	}
	defer f.Close()
	var hosts []host
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		h, err := parseHost(text)
		if err != nil {
			return nil, fmt.Errorf("--hostfile: %s:%d: %w", path, line, err)
		}
		hosts = append(hosts, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--hostfile: %s: %w", path, err)
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("--hostfile: %s lists no host", path)
	}
	if err := checkHosts(hosts); err != nil {
		return nil, fmt.Errorf("--hostfile: %s: %w", path, err)
	}
	return hosts, nil
}

// parseHost parses host[:slots]; slots default to 1. An IPv6 address
// with slots is written in brackets ([fe80::1%eth0]:4); one without
// may be bare.
func parseHost(s string) (host, error) {
	h := host{name: s, slots: 1}
	slots, given := "", false
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.Index(s, "]")
		if end < 0 {
			return host{}, fmt.Errorf("%q: no closing bracket", s)
		}
		h.name = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			if slots, given = strings.CutPrefix(rest, ":"); !given {
				return host{}, fmt.Errorf("%q: %q after the bracket, want :slots", s, rest)
			}
		}
	case strings.Count(s, ":") == 1:
		h.name, slots, given = strings.Cut(s, ":")
	}
	if given {
		n, err := strconv.Atoi(slots)
		if err != nil || n < 1 {
			return host{}, fmt.Errorf("%q: slots must be a number of at least 1", s)
		}
		h.slots = n
	}
	if err := checkHostName(h.name); err != nil {
		return host{}, fmt.Errorf("%q: %w", s, err)
	}
	h.local = isLocal(h.name)
	return h, nil
}

// checkHostName rejects names that could not be a host (or user@host) or
// that a launcher agent would take for an option.
func checkHostName(name string) error {
	if name == "" {
		return fmt.Errorf("no host name")
	}
	if name[0] == '-' {
		return fmt.Errorf("a host name must not start with '-'")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-@:%", c)) {
			return fmt.Errorf("%q is not allowed in a host name", c)
		}
	}
	return nil
}

// checkHosts rejects a host listed twice, this machine included under
// two of its names: each host has one index, NARMA_HOST.
func checkHosts(hosts []host) error {
	local := -1
	for i, h := range hosts {
		for _, g := range hosts[:i] {
			if strings.EqualFold(g.name, h.name) {
				return fmt.Errorf("host %s is listed twice", h.name)
			}
		}
		if h.local {
			if local >= 0 {
				return fmt.Errorf("this host is listed twice, as %s and %s", hosts[local].name, h.name)
			}
			local = i
		}
	}
	return nil
}

// place returns the host of each of n ranks: block placement, hosts
// filled in order, each up to its slots.
func place(hosts []host, n int) ([]int, error) {
	total := 0
	for _, h := range hosts {
		total += h.slots
	}
	if total < n {
		return nil, fmt.Errorf("%d ranks but only %d slots on the hosts", n, total)
	}
	hostOf := make([]int, 0, n)
	for i, h := range hosts {
		for range h.slots {
			if len(hostOf) == n {
				return hostOf, nil
			}
			hostOf = append(hostOf, i)
		}
	}
	return hostOf, nil
}

// sshTarget returns the host part of a launcher target user@host.
func sshTarget(name string) string {
	if i := strings.LastIndex(name, "@"); i >= 0 {
		return name[i+1:]
	}
	return name
}

// outgoingAddr returns the address of this host's interface towards
// host, port 0: where the bootstrap server listens by default. Connecting
// a UDP socket sends nothing; it only asks the kernel for the route.
func outgoingAddr(host string) (string, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.Dial("udp", net.JoinHostPort(sshTarget(host), "9"))
	if err != nil {
		return "", err
	}
	defer c.Close()
	a := c.LocalAddr().(*net.UDPAddr)
	return (&net.TCPAddr{IP: a.IP, Zone: a.Zone}).String(), nil
}

// shellQuote returns s as one word for a POSIX shell: as it is if it
// holds only characters no shell treats specially, in single quotes
// otherwise.
func shellQuote(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_-./:=@,+", c))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// remoteScript starts a rank on another host, run by sh -c with the
// working directory and the command as arguments: it reads the job
// secret from its standard input, which the launcher agent forwards
// (ssh does), so that the secret appears in no command line, changes to
// narmarun's working directory if the host has it, and runs the command.
const remoteScript = `IFS= read -r NARMA_SECRET || { echo "narmarun: rank $NARMA_RANK: no job secret on standard input (does the launcher agent forward it?)" >&2; exit 1; }; ` +
	`export NARMA_SECRET; cd "$1" 2>/dev/null; shift; exec "$@"`
