package builtin

import (
	"net"
	"testing"
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
