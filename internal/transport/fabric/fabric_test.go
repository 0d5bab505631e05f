//go:build fabric

package fabric_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// testConfig is the provider the tests run on: FI_PROVIDER's, else
// tcp;ofi_rxm, on loopback.
func testConfig() fabric.Config {
	cfg := fabric.Config{Provider: os.Getenv("FI_PROVIDER"), Node: "127.0.0.1"}
	if cfg.Provider == "" {
		cfg.Provider = "tcp;ofi_rxm"
	}
	if cfg.Provider == "shm" {
		cfg.Node = ""
	}
	return cfg
}

func group(t testing.TB, n int) []*fabric.Endpoint {
	t.Helper()
	eps, err := fabric.Group(testConfig(), n)
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func TestConformance(t *testing.T) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps := group(t, n)
		out := make([]transport.Endpoint, n)
		for i, e := range eps {
			out[i] = e
		}
		return out
	})
}

func TestDescribe(t *testing.T) {
	s, err := fabric.Describe(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s, testConfig().Provider) {
		t.Errorf("Describe = %q, does not name the provider %q", s, testConfig().Provider)
	}
	t.Log(s)
	if _, err := fabric.Describe(fabric.Config{Provider: "no-such-provider"}); err == nil {
		t.Error("Describe of an unknown provider: no error")
	}
}

// TestOneOperationPerNotifiedPut counts the libfabric operations of
// notified puts: one fi_writedata each for a tag or a counter, whatever
// the size, and nothing back from the target; a signal's notice does
// not fit the CQ data and follows as one message.
func TestOneOperationPerNotifiedPut(t *testing.T) {
	eps := group(t, 2)
	defer closeAll(eps)
	const size = 4096
	buf := mem.Alloc(size)
	defer mem.Free(buf)
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Int64
	eps[1].SetNoticeHandler(func(src int, k transport.Key, n transport.Notice) {
		if src == 0 && k == key {
			got.Add(1)
		}
	})
	r, err := eps[0].Region(1, key, size)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The target's answer to the lookup is counted once it completed.
	if err := eps[1].Flush(ctx, 0); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		n    transport.Notice
		len  int
		want fabric.Counts
	}{
		{"tag 8 B", transport.TagNotice(transport.NoticeTag, 7), 8, fabric.Counts{WritesData: 1}},
		{"tag 4 KiB", transport.TagNotice(transport.NoticeTag, -1), size, fabric.Counts{WritesData: 1}},
		{"counter 64 B", transport.TagNotice(transport.NoticeCounter, 3), 64, fabric.Counts{WritesData: 1}},
		{"signal 8 B", transport.SignalNotice(transport.SignalAdd, 0, 1), 8, fabric.Counts{Writes: 1, Sends: 1}},
		{"plain 8 B", transport.Notice{}, 8, fabric.Counts{Writes: 1}},
	}
	for _, tc := range cases {
		before, tbefore := eps[0].Counts(), eps[1].Counts()
		const rounds = 10
		want := got.Load()
		if tc.n.Kind() != transport.NoticeNone {
			want += rounds
		}
		for range rounds {
			if err := r.Put(0, make([]byte, tc.len), tc.n, nil); err != nil {
				t.Fatal(err)
			}
			if err := eps[0].Flush(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for got.Load() < want && time.Now().Before(deadline) {
			eps[1].Poll()
		}
		if got.Load() != want {
			t.Errorf("%s: %d notices, want %d", tc.name, got.Load(), want)
		}
		after, tafter := eps[0].Counts(), eps[1].Counts()
		d := fabric.Counts{
			Writes:     (after.Writes - before.Writes) / rounds,
			WritesData: (after.WritesData - before.WritesData) / rounds,
			Reads:      (after.Reads - before.Reads) / rounds,
			Sends:      (after.Sends - before.Sends) / rounds,
		}
		if d != tc.want || (after.Sends-before.Sends)%rounds != 0 {
			t.Errorf("%s: %+v operations per put (%+v in all), want %+v", tc.name, d, after, tc.want)
		}
		if tafter != tbefore {
			t.Errorf("%s: the target issued %+v operations, before %+v", tc.name, tafter, tbefore)
		}
	}
}

func TestRawPingPong(t *testing.T) {
	for _, size := range []int{8, 4096, 100000} {
		d, err := fabric.RawPingPong(testConfig(), size, 50, 5)
		if err != nil {
			t.Fatal(err)
		}
		if d <= 0 || d > time.Second {
			t.Errorf("%d bytes: half round trip %v", size, d)
		}
		t.Logf("%d bytes: %v", size, d)
	}
	if _, err := fabric.RawPingPong(testConfig(), 8, 0, 0); err == nil {
		t.Error("RawPingPong of 0 round trips: no error")
	}
}

// TestAccumulatesInIssueOrder: an accumulate with a notice may wait for
// a large get before it (a notice must follow what came before, and
// tcp;ofi_rxm does not order a message after a read); the accumulate
// issued after it must wait too, or it would apply first.
func TestAccumulatesInIssueOrder(t *testing.T) {
	eps := group(t, 2)
	defer closeAll(eps)
	const size = 8 << 20
	buf := mem.Alloc(size)
	defer mem.Free(buf)
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eps[0].Region(1, key, size)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dst := make([]byte, size)
	for round := range 5 {
		var c transport.Completion
		one, two := mem.Bytes([]int64{1}), mem.Bytes([]int64{int64(2 + round)})
		if err := r.Get(0, dst, transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := r.Accumulate(8, mem.Replace, mem.Int64, one, nil, transport.TagNotice(transport.NoticeTag, 1), &c); err != nil {
			t.Fatal(err)
		}
		if err := r.Accumulate(8, mem.Replace, mem.Int64, two, nil, transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := eps[0].Flush(ctx, 1); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 8)
		if err := r.Get(8, got, transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, two) {
			t.Fatalf("round %d: the word holds %v, want the last accumulate's %v", round, got, two)
		}
	}
}
