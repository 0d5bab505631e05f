package builtin

import (
	"net"
	"testing"

	"github.com/narma-rma/narma/internal/transport/registry"
)

// TestAutoListen: a rank left to choose listens on the address its
// bootstrap connection comes from, port 0, and on loopback when that is
// a Unix socket.
func TestAutoListen(t *testing.T) {
	for _, tt := range []struct {
		local net.Addr
		want  string
	}{
		{&net.TCPAddr{IP: net.IPv4(10, 231, 7, 3), Port: 41234}, "10.231.7.3:0"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 41234, Zone: "eth0"}, "[fe80::1%eth0]:0"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1}, "[2001:db8::7]:0"},
		{&net.UnixAddr{Name: "", Net: "unix"}, "127.0.0.1:0"},
		{&net.TCPAddr{IP: net.IPv4zero}, "127.0.0.1:0"},
	} {
		if got := autoListen(tt.local); got != tt.want {
			t.Errorf("autoListen(%v) = %q, want %q", tt.local, got, tt.want)
		}
	}
}

// TestLaunchFacts: what a launcher learns from the registry about the
// built-in transports: shm keeps a job on one host, tcp and hybrid talk
// over TCP, and every one of them can be joined.
func TestLaunchFacts(t *testing.T) {
	for _, c := range []struct {
		name             string
		oneHost, network bool
	}{{"shm", true, false}, {"tcp", false, true}, {"hybrid", false, true}} {
		tr, ok := registry.Lookup(c.name)
		if !ok || tr.Join == nil {
			t.Errorf("%s: not registered, or not joinable", c.name)
			continue
		}
		if tr.OneHost != c.oneHost || tr.Network != c.network {
			t.Errorf("%s: OneHost %v, Network %v; want %v, %v", c.name, tr.OneHost, tr.Network, c.oneHost, c.network)
		}
	}
}
