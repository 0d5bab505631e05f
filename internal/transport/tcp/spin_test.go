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
		caps transport.Caps
		want time.Duration
	}{
		{"set", 7 * time.Microsecond, transport.Caps{HostRanks: 1000}, 7 * time.Microsecond},
		{"off", -1, transport.Caps{HostRanks: 1}, 0},
		{"one per core", 0, transport.Caps{HostRanks: cores}, DefaultSpin},
		{"more than cores", 0, transport.Caps{HostRanks: cores + 1}, 0},
		{"goroutines within GOMAXPROCS", 0, transport.Caps{HostRanks: procs, OneProcess: true}, DefaultSpin},
		{"goroutines beyond GOMAXPROCS", 0, transport.Caps{HostRanks: procs + 1, OneProcess: true}, 0},
	} {
		if got := spinFor(c.spin, c.caps); got != c.want {
			t.Errorf("%s: spinFor(%v, %+v) = %v, want %v", c.name, c.spin, c.caps, got, c.want)
		}
	}
}

// TestHostRanks: the endpoint counts the ranks whose address names its
// host, and a group says its ranks are goroutines of one process.
func TestHostRanks(t *testing.T) {
	eps := newGroup(t, Config{Size: 3})
	if c := eps[1].Caps(); c.HostRanks != 3 || !c.OneProcess {
		t.Errorf("group of 3 on loopback: caps %+v, want HostRanks 3 and OneProcess", c)
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
	if c := ep.Caps(); c.HostRanks != 2 || c.OneProcess {
		t.Errorf("one peer on another host: caps %+v, want HostRanks 2, not OneProcess", c)
	}
}
