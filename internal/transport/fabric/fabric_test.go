//go:build fabric

package fabric_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/mem"
	"github.com/narma-rma/narma/internal/transport"
	"github.com/narma-rma/narma/internal/transport/fabric"
	"github.com/narma-rma/narma/internal/transport/transporttest"
)

// testConfig is the provider the tests run on: FI_PROVIDER's, else
// tcp;ofi_rxm, on loopback; a dead peer is found within a few seconds.
func testConfig() fabric.Config {
	cfg := fabric.Config{Provider: os.Getenv("FI_PROVIDER"), Node: "127.0.0.1", Timeout: 5 * time.Second}
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

// exposeAt1 has rank 1 expose size bytes and rank 0 look them up; the
// caller frees the buffer.
func exposeAt1(t testing.TB, eps []*fabric.Endpoint, size int) ([]byte, transport.Region) {
	t.Helper()
	buf := mem.Alloc(size)
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	r, err := eps[0].Region(1, key, size)
	if err != nil {
		t.Fatal(err)
	}
	return buf, r
}

func TestConformance(t *testing.T) { conformance(t, testConfig(), nil) }

// conformance runs the suite on groups opened with cfg; check, if not
// nil, vets each group first.
func conformance(t *testing.T, cfg fabric.Config, check func(t *testing.T, eps []*fabric.Endpoint)) {
	transporttest.Run(t, func(t *testing.T, n int) []transport.Endpoint {
		eps, err := fabric.Group(cfg, n)
		if err != nil {
			t.Fatal(err)
		}
		if check != nil {
			check(t, eps)
		}
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
			Confirms:   (after.Confirms - before.Confirms) / rounds,
		}
		if d != tc.want || (after.Sends-before.Sends)%rounds != 0 {
			t.Errorf("%s: %+v operations per put (%+v in all), want %+v", tc.name, d, after, tc.want)
		}
		if tafter != tbefore {
			t.Errorf("%s: the target issued %+v operations, before %+v", tc.name, tafter, tbefore)
		}
	}
}

// TestLazyWrites checks the writes that complete when sent: after a
// Flush the first write to a peer asks for delivery and the rest of a
// stream do not; one confirm then covers them, issued by the Flush or by
// a notice that must come after them (a signal's message), which arrives
// after their data and their notices; and after the Flush every write is
// in place.
func TestLazyWrites(t *testing.T) {
	eps := group(t, 2)
	defer closeAll(eps)
	if !eps[0].Lazy() {
		t.Skipf("provider %s: writes ask for delivery", testConfig().Provider)
	}
	const size, k = 4096, 16
	buf := mem.Alloc(k * size)
	defer mem.Free(buf)
	key, err := eps[1].Expose(buf)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		n     transport.Notice
		first byte // of the block the notice names (tag i: block i)
		last  byte // of the last block
	}
	var mu sync.Mutex
	var got []seen
	eps[1].SetNoticeHandler(func(src int, _ transport.Key, n transport.Notice) {
		i := 0
		if n.Kind() == transport.NoticeTag {
			i = int(n.Tag())
		}
		mu.Lock()
		got = append(got, seen{n, buf[i*size], buf[(k-1)*size]})
		mu.Unlock()
	})
	r, err := eps[0].Region(1, key, k*size)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	src := make([]byte, size)
	put := func(i int, n transport.Notice, v byte) {
		t.Helper()
		for j := range src {
			src[j] = v
		}
		if err := r.Put(i*size, src, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	for round := 1; round <= 2; round++ {
		before := eps[0].Counts()
		for i := range k {
			put(i, transport.TagNotice(transport.NoticeTag, int32(i)), byte(round))
		}
		if round == 2 {
			// A signal's notice is a message, which must come after the
			// writes before it: a confirm goes first.
			put(k-1, transport.SignalNotice(transport.SignalAdd, 0, 1), 10+byte(round))
		}
		if err := eps[0].Flush(ctx, 1); err != nil {
			t.Fatal(err)
		}
		for i := range k {
			want := byte(round)
			if round == 2 && i == k-1 {
				want = 12
			}
			if buf[i*size] != want || buf[i*size+size-1] != want {
				t.Fatalf("round %d: block %d holds %d after the Flush, want %d", round, i, buf[i*size], want)
			}
		}
		d := eps[0].Counts()
		wantConfirms := uint64(1)
		if round == 2 {
			wantConfirms = 1 // the signal's; the Flush finds nothing unconfirmed
		}
		if d.WritesData-before.WritesData != k || d.Confirms-before.Confirms != wantConfirms {
			t.Errorf("round %d: %d writes with data and %d confirms, want %d and %d",
				round, d.WritesData-before.WritesData, d.Confirms-before.Confirms, k, wantConfirms)
		}
	}
	want := 2*k + 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		eps[1].Poll()
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= want || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != want {
		t.Fatalf("%d notices, want %d", len(got), want)
	}
	for i, s := range got {
		round, tag := 1+i/k, i%k
		switch {
		case i == 2*k:
			if s.n.Kind() != transport.NoticeSignal || s.last != 12 {
				t.Errorf("notice %d: %v with the last block at %d, want the signal after the block's write (12)", i, s.n, s.last)
			}
		case s.n.Kind() != transport.NoticeTag || int(s.n.Tag()) != tag:
			t.Errorf("notice %d: %v, want tag %d", i, s.n, tag)
		case s.first < byte(round):
			t.Errorf("notice %d (round %d, tag %d) came before its data: block holds %d", i, round, tag, s.first)
		}
	}
}

// TestConformanceWithoutLazyWrites runs the suite with every write
// asking for delivery completion, as on providers that do not keep
// writes in order.
func TestConformanceWithoutLazyWrites(t *testing.T) {
	conformance(t, fabric.WithoutLazyWrites(testConfig()), func(t *testing.T, eps []*fabric.Endpoint) {
		if eps[0].Lazy() {
			t.Fatal("WithoutLazyWrites: writes are lazy")
		}
	})
}

func TestRawPingPong(t *testing.T) {
	for _, delivered := range []bool{false, true} {
		for _, size := range []int{8, 4096, 100000} {
			d, err := fabric.RawPingPong(testConfig(), size, 50, 5, delivered)
			if err != nil {
				t.Fatal(err)
			}
			if d <= 0 || d > time.Second {
				t.Errorf("%d bytes, delivered %v: half round trip %v", size, delivered, d)
			}
			t.Logf("%d bytes, delivered %v: %v", size, delivered, d)
		}
	}
	if _, err := fabric.RawPingPong(testConfig(), 8, 0, 0, false); err == nil {
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
	buf, r := exposeAt1(t, eps, size)
	defer mem.Free(buf)
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

// TestConformanceSoftwareAtomics runs the suite again with the atomics
// applied in software at the target, the path of providers without
// native ones.
func TestConformanceSoftwareAtomics(t *testing.T) {
	cfg := testConfig()
	cfg.SoftwareAtomics = true
	conformance(t, cfg, func(t *testing.T, eps []*fabric.Endpoint) {
		if eps[0].Native() {
			t.Fatal("SoftwareAtomics: the endpoint applies atomics natively")
		}
	})
}

// TestAtomicOperations counts the libfabric operations of atomics: with
// native atomics one fi_*atomic per accumulate or compare-and-swap (more
// only past the provider's count), none of them a message, the notice
// following as one; in software one message each.
func TestAtomicOperations(t *testing.T) {
	for _, software := range []bool{false, true} {
		cfg := testConfig()
		cfg.SoftwareAtomics = software
		eps, err := fabric.Group(cfg, 2)
		if err != nil {
			t.Fatal(err)
		}
		native := eps[0].Native()
		if !software && !native {
			closeAll(eps)
			t.Logf("provider %s has no native atomics for everything", cfg.Provider)
			continue
		}
		const size = 1 << 20
		buf, r := exposeAt1(t, eps, size)
		ctx := context.Background()
		if err := eps[1].Flush(ctx, 0); err != nil {
			t.Fatal(err)
		}
		one := mem.Bytes([]int64{1})
		res := make([]byte, 8)
		big := mem.Bytes(make([]int64, size/8))
		for i := range size / 8 {
			big[8*i] = 1
		}
		bigRes := make([]byte, size)
		tag := transport.TagNotice(transport.NoticeTag, 5)
		cases := []struct {
			name string
			run  func(c *transport.Completion) error
			ops  uint64 // native atomics, or software messages
		}{
			{"accumulate", func(c *transport.Completion) error {
				return r.Accumulate(0, mem.Sum, mem.Int64, one, nil, transport.Notice{}, c)
			}, 1},
			{"fetching accumulate", func(c *transport.Completion) error {
				return r.Accumulate(0, mem.Sum, mem.Int64, one, res, transport.Notice{}, c)
			}, 1},
			{"fetch (NoOp)", func(c *transport.Completion) error {
				return r.Accumulate(0, mem.NoOp, mem.Int64, nil, res, transport.Notice{}, c)
			}, 1},
			{"compare-and-swap", func(c *transport.Completion) error {
				return r.CompareSwap(0, mem.Int64, one, one, res, transport.Notice{}, c)
			}, 1},
			{"accumulate of 1 MiB, fetching", func(c *transport.Completion) error {
				return r.Accumulate(0, mem.Sum, mem.Int64, big, bigRes, transport.Notice{}, c)
			}, 0},
		}
		for _, tc := range cases {
			before := eps[0].Counts()
			var c transport.Completion
			if err := tc.run(&c); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if err := c.Wait(ctx); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			after := eps[0].Counts()
			atomics, sends := after.Atomics-before.Atomics, after.Sends-before.Sends
			switch {
			case software && atomics != 0:
				t.Errorf("software, %s: %d native atomics", tc.name, atomics)
			case software && tc.ops > 0 && sends != tc.ops:
				t.Errorf("software, %s: %d messages, want %d", tc.name, sends, tc.ops)
			case !software && sends != 0:
				t.Errorf("native, %s: %d messages, want none", tc.name, sends)
			case !software && tc.ops > 0 && atomics != tc.ops:
				t.Errorf("native, %s: %d atomics, want %d", tc.name, atomics, tc.ops)
			case !software && tc.ops == 0 && atomics < 2:
				t.Errorf("native, %s: %d atomics, want it split in several", tc.name, atomics)
			}
		}
		// A notice follows the atomic as one message.
		before := eps[0].Counts()
		var c transport.Completion
		if err := r.Accumulate(0, mem.Sum, mem.Int64, one, nil, tag, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if d := eps[0].Counts(); !software && (d.Atomics-before.Atomics != 1 || d.Sends-before.Sends != 1) {
			t.Errorf("native, accumulate with a tag: %+v after %+v, want one atomic and one message", d, before)
		}
		// Word 0: 1, 2 (fetching), 2 (NoOp; the compare-and-swap of 1
		// misses), 3 (the 1 MiB of ones, which fetched 2), 4 (with the
		// tag); the other words: 1.
		var got [2]int64
		var g transport.Completion
		if err := r.Get(0, mem.Bytes(got[:]), transport.Notice{}, &g); err != nil {
			t.Fatal(err)
		}
		if err := g.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if got != [2]int64{4, 1} {
			t.Errorf("software %v: words 0 and 1 hold %v, want [4 1]", software, got)
		}
		if v := int64(bigRes[0]); v != 2 {
			t.Errorf("software %v: the 1 MiB accumulate fetched %d at word 0, want 2", software, v)
		}
		closeAll(eps)
		mem.Free(buf)
	}
}

// TestMixedAtomicsRefused: ranks that chose differently between native
// and software atomics cannot form a job; both are told why.
func TestMixedAtomicsRefused(t *testing.T) {
	if eps := group(t, 1); !eps[0].Native() {
		closeAll(eps)
		t.Skip("the provider has no native atomics")
	} else {
		closeAll(eps)
	}
	in := make(chan []byte, 2)
	out := make(chan [][]byte)
	exchange := func(ctx context.Context, data []byte) ([][]byte, error) {
		in <- data
		return <-out, nil
	}
	go func() {
		a, b := <-in, <-in
		// The order of arrival is not the ranks': sort by what the
		// rank sent last (its mode byte: 'n' native is rank 0).
		if a[len(a)-1] != 'n' {
			a, b = b, a
		}
		all := [][]byte{a, b}
		out <- all
		out <- all
	}()
	errs := make(chan error, 2)
	for r := range 2 {
		go func() {
			cfg := testConfig()
			cfg.Rank, cfg.Size, cfg.Exchange = r, 2, exchange
			cfg.SoftwareAtomics = r == 1
			e, err := fabric.New(context.Background(), cfg)
			if err == nil {
				e.Close()
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), "NARMA_FABRIC_ATOMICS") {
			t.Errorf("a job mixing native and software atomics: %v", err)
		}
	}
}

// TestConformanceRegisterLocal runs the suite with every local buffer
// registered and its descriptor passed, the path of providers that set
// FI_MR_LOCAL (verbs, EFA), and checks each buffer handed to libfabric
// against the registration its descriptor names.
func TestConformanceRegisterLocal(t *testing.T) {
	cfg := fabric.CheckRegistration(testConfig())
	cfg.RegisterLocal = true
	conformance(t, cfg, func(t *testing.T, eps []*fabric.Endpoint) {
		for i, e := range eps {
			t.Cleanup(func() {
				if bad, first := e.RegistrationFailures(); bad > 0 {
					t.Errorf("rank %d: %d buffers outside their registration, first %s", i, bad, first)
				}
			})
		}
	})
}

// TestRegisterLocalLarge puts and gets buffers past the bounce size,
// which go to libfabric pinned and registered for the operation: the
// data arrives, every buffer lies in its registration, and the
// operation's registration is closed once it completed.
func TestRegisterLocalLarge(t *testing.T) {
	cfg := fabric.CheckRegistration(testConfig())
	cfg.RegisterLocal = true
	eps, err := fabric.Group(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(eps)
	const size = 1 << 20
	buf, r := exposeAt1(t, eps, size)
	defer mem.Free(buf)
	ctx := context.Background()
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	base := eps[0].LocalRegistrations()
	if base == 0 {
		t.Fatal("RegisterLocal: no local registration (receive buffers, bounce buffers)")
	}
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	for _, n := range []int{size, 64<<10 + 1, 200 << 10} {
		clear(dst)
		var c transport.Completion
		if err := r.Put(0, src[:n], transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := eps[0].Flush(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:n], src[:n]) {
			t.Fatalf("put of %d bytes: the target holds other bytes", n)
		}
		c.Reset()
		if err := r.Get(0, dst[:n], transport.Notice{}, &c); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dst[:n], src[:n]) {
			t.Fatalf("get of %d bytes: other bytes", n)
		}
		if got := eps[0].LocalRegistrations(); got != base {
			t.Errorf("after %d bytes: %d local registrations open, want %d", n, got, base)
		}
	}
	for i, e := range eps {
		if bad, first := e.RegistrationFailures(); bad > 0 {
			t.Errorf("rank %d: %d buffers outside their registration, first %s", i, bad, first)
		}
	}
}

// TestHeartbeat checks that idle peers that answer stay alive through
// several timeouts, and that a peer that falls silent without closing
// (a stopped process, a lost link) fails with ErrPeer once the timeout
// passed: its failure handler is told, and operations to it fail.
func TestHeartbeat(t *testing.T) {
	cfg := testConfig()
	cfg.Timeout = time.Second
	eps, err := fabric.Group(cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(eps)
	type failure struct {
		peer int
		err  error
	}
	fails := make(chan failure, 4)
	eps[0].SetFailureHandler(func(peer int, err error) { fails <- failure{peer, err} })
	buf, r := exposeAt1(t, eps, 64)
	defer mem.Free(buf)
	select {
	case f := <-fails:
		t.Fatalf("an idle peer that answers failed: rank %d: %v", f.peer, f.err)
	case <-time.After(4 * cfg.Timeout):
	}
	if err := r.Put(0, []byte{1}, transport.Notice{}, nil); err != nil {
		t.Fatalf("Put to a live peer: %v", err)
	}
	eps[1].Freeze()
	start := time.Now()
	select {
	case f := <-fails:
		if f.peer != 1 || !errors.Is(f.err, transport.ErrPeer) {
			t.Fatalf("failure of rank %d with %v, want rank 1 with ErrPeer", f.peer, f.err)
		}
		// Silence counts from the last answer, which may have come just
		// before the freeze, and the heartbeat looks every Timeout/5.
		if d := time.Since(start); d < cfg.Timeout*3/5 {
			t.Errorf("rank 1 failed %v after falling silent, well before the timeout of %v", d, cfg.Timeout)
		}
	case <-time.After(20 * cfg.Timeout):
		t.Fatal("a silent peer did not fail")
	}
	var c transport.Completion
	err = r.Put(0, []byte{2}, transport.Notice{}, &c)
	if err == nil {
		err = c.Wait(context.Background())
	}
	if !errors.Is(err, transport.ErrPeer) {
		t.Errorf("Put to a silent peer: %v, want ErrPeer", err)
	}
}

// TestConformanceWithoutDelivery runs the suite on an endpoint whose
// operations complete when sent, not when delivered, as on providers
// without FI_DELIVERY_COMPLETE: each Flush then asks the target, whose
// answer follows everything sent before it. tcp;ofi_rxm keeps messages
// in order with writes only with delivery completion, so this runs on
// sockets unless FI_PROVIDER says otherwise.
func TestConformanceWithoutDelivery(t *testing.T) {
	cfg := fabric.WithoutDelivery(testConfig())
	if os.Getenv("FI_PROVIDER") == "" {
		cfg.Provider = "sockets"
	}
	conformance(t, cfg, func(t *testing.T, eps []*fabric.Endpoint) {
		if eps[0].Delivery() {
			t.Fatal("WithoutDelivery: operations complete on delivery")
		}
	})
}

// TestSharedMemoryGroupRefused checks that a group of goroutine ranks
// on libfabric's shm provider, which crashes with several endpoints in
// one process, is refused with an error that says what to do instead.
func TestSharedMemoryGroupRefused(t *testing.T) {
	cfg := fabric.Config{Provider: "shm"}
	if _, err := fabric.Describe(cfg); err != nil {
		t.Skipf("no shm provider here: %v", err)
	}
	eps, err := fabric.Group(cfg, 2)
	if err == nil {
		closeAll(eps)
		t.Fatal("a group of 2 goroutine ranks on shm opened")
	}
	if !strings.Contains(err.Error(), "as processes") {
		t.Errorf("error %q does not say to run the ranks as processes", err)
	}
}

// TestFlushLocal tells FlushLocal from Flush: with nobody reading the
// origin's completion queue (its background progress paused), FlushLocal
// returns at once after puts whose data the transport copied, whose
// completions it has not seen yet, and Flush then waits for them; after
// a get, a put larger than a bounce buffer (which libfabric reads in
// place) and a fetching atomic, FlushLocal waits until the caller's
// buffers are its own and the results are in place.
func TestFlushLocal(t *testing.T) {
	eps := group(t, 2)
	defer closeAll(eps)
	const size = 1 << 20
	buf, r := exposeAt1(t, eps, size)
	defer mem.Free(buf)
	ctx := context.Background()
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eps[0].PauseProgress(true)
	defer eps[0].PauseProgress(false)

	var c transport.Completion
	for _, n := range []int{8, 4096} {
		if err := r.Put(0, make([]byte, n), transport.TagNotice(transport.NoticeTag, 1), &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := eps[0].FlushLocal(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if c.Complete() {
		t.Fatal("after FlushLocal the copied puts are complete: it waited for them (or they completed without a poll)")
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if !c.Complete() {
		t.Fatal("Flush returned before the puts completed")
	}

	src := make([]byte, size)
	for i := range src {
		src[i] = byte(i * 13)
	}
	dst := make([]byte, 4096)
	old := make([]byte, 8)
	var big, get, fetch transport.Completion
	if err := r.Put(0, src, transport.Notice{}, &big); err != nil {
		t.Fatal(err)
	}
	if err := eps[0].Flush(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Apart from one another: the three are not ordered among themselves.
	if err := r.Get(size/2, dst, transport.Notice{}, &get); err != nil {
		t.Fatal(err)
	}
	if err := r.Accumulate(0, mem.Sum, mem.Int64, mem.Bytes([]int64{1}), old, transport.Notice{}, &fetch); err != nil {
		t.Fatal(err)
	}
	if err := r.Put(8, src[8:size/2], transport.Notice{}, &big); err != nil {
		t.Fatal(err)
	}
	if err := eps[0].FlushLocal(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		what string
		c    *transport.Completion
	}{{"get", &get}, {"fetch", &fetch}, {"large put", &big}} {
		if !x.c.Complete() {
			t.Errorf("FlushLocal returned before the %s completed", x.what)
		}
	}
	if !bytes.Equal(dst, src[size/2:size/2+4096]) {
		t.Error("the get's result is not in place after FlushLocal")
	}
	if got, want := binary.LittleEndian.Uint64(old), binary.LittleEndian.Uint64(src); got != want {
		t.Errorf("fetched %#x, want %#x", got, want)
	}
}
