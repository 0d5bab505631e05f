package tcp

import (
	"context"
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

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps := newGroup(t, Config{Size: n, PeerTimeout: 5 * time.Second})
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	})
}
