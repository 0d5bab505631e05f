package tcp

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// TestSpinFor: readers poll for Config.Spin if set, not at all if it is
// negative, and by default for DefaultSpin only while the ranks of the
// host do not outnumber the processors they run on.
func TestSpinFor(t *testing.T) {
	cores := runtime.NumCPU()
	procs := min(cores, runtime.GOMAXPROCS(0))
	for _, c := range []struct {
		name string
		spin time.Duration
		host transport.Host
		want time.Duration
	}{
		{"set", 7 * time.Microsecond, transport.Host{Ranks: 1000}, 7 * time.Microsecond},
		{"off", -1, transport.Host{Ranks: 1}, 0},
		{"one per core", 0, transport.Host{Ranks: cores}, DefaultSpin},
		{"more than cores", 0, transport.Host{Ranks: cores + 1}, 0},
		{"goroutines within GOMAXPROCS", 0, transport.Host{Ranks: procs, OneProcess: true}, DefaultSpin},
		{"goroutines beyond GOMAXPROCS", 0, transport.Host{Ranks: procs + 1, OneProcess: true}, 0},
	} {
		if got := spinFor(c.spin, c.host); got != c.want {
			t.Errorf("%s: spinFor(%v, %+v) = %v, want %v", c.name, c.spin, c.host, got, c.want)
		}
	}
}

// TestHostRanks: the endpoint counts the ranks whose address names its
// host, and a group says its ranks are goroutines of one process.
func TestHostRanks(t *testing.T) {
	eps := newGroup(t, Config{Size: 3})
	if h := eps[1].Host(); h.Ranks != 3 || !h.OneProcess {
		t.Errorf("group of 3 on loopback: host %+v, want 3 ranks and OneProcess", h)
	}
	// Peers on other hosts (documentation addresses, never dialed).
	ep, err := New(context.Background(), Config{
		Rank: 0, Size: 3, Secret: NewSecret(),
		Exchange: func(_ context.Context, own []byte) ([][]byte, error) {
			return [][]byte{own, []byte("192.0.2.1:9"), []byte("127.0.0.1:9")}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	if h := ep.Host(); h.Ranks != 2 || h.OneProcess {
		t.Errorf("one peer on another host: host %+v, want 2 ranks, not OneProcess", h)
	}
}
