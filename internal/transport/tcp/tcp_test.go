package tcp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// newGroup makes a group of cfg.Size endpoints on loopback, closed when
// the test ends.
func newGroup(t testing.TB, cfg Config) []*Endpoint {
	t.Helper()
	eps, err := Group(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range eps {
			e.Close()
		}
	})
	return eps
}

// TestConformance runs the transport suite with readers that wait in the
// network poller at once and with readers that poll their sockets first
// (Config.Spin), however many ranks the group has.
func TestConformance(t *testing.T) {
	for _, mode := range []struct {
		name string
		spin time.Duration
	}{{"wait", -1}, {"poll", DefaultSpin}} {
		t.Run(mode.name, func(t *testing.T) {
			transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
				eps := newGroup(t, Config{Size: n, PeerTimeout: 5 * time.Second, Spin: mode.spin})
				out := make([]transport.Endpoint, n)
				for i, e := range eps {
					out[i] = e
				}
				return out
			})
		})
	}
}

// TestIPv6: the transport works over IPv6 (loopback ::1), where the host
// has it.
func TestIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	ln.Close()
	eps := newGroup(t, Config{Size: 2, Listen: "[::1]:0", PeerTimeout: 5 * time.Second})
	if host, _, _ := net.SplitHostPort(eps[1].Addr().String()); host != "::1" {
		t.Fatalf("rank 1 listens on %s, want [::1]", eps[1].Addr())
	}
	buf := make([]byte, 64)
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan transport.Notice, 1)
	eps[1].SetNoticeHandler(func(_ int, _ transport.Key, n transport.Notice) { got <- n })
	r, err := eps[0].Region(1, key, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Put(8, []byte("over ipv6"), transport.TagNotice(transport.NoticeTag, 6), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n.Tag() != 6 || string(buf[8:17]) != "over ipv6" {
			t.Fatalf("notice %+v, memory %q", n, buf[8:17])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notice over IPv6")
	}
}
