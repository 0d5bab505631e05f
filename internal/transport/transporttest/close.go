package transporttest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// failureLog records the calls of every endpoint's FailureHandler.
type failureLog struct {
	mu    sync.Mutex
	calls [][]failureCall // by rank told
}

type failureCall struct {
	peer int
	err  error
}

func (l *failureLog) install(eps []transport.Endpoint) {
	l.calls = make([][]failureCall, len(eps))
	for i, ep := range eps {
		ep.SetFailureHandler(func(peer int, err error) {
			l.mu.Lock()
			l.calls[i] = append(l.calls[i], failureCall{peer, err})
			l.mu.Unlock()
		})
	}
}

func (l *failureLog) of(rank int) []failureCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]failureCall(nil), l.calls[rank]...)
}

// closeWorld is three ranks, each exposing a 64-byte region of 0xa5, with
// a handle from every rank to every region.
type closeWorld struct {
	*env
	bufs    [][]byte
	keys    []transport.Key
	h       [][]transport.Region // h[origin][target]
	fails   failureLog
	notices [3]int
	mu      sync.Mutex
}

func newCloseWorld(t *testing.T, f factory) *closeWorld {
	const n = 3
	w := &closeWorld{env: newEnv(t, f, n)}
	w.fails.install(w.eps)
	for i := 0; i < n; i++ {
		b, k := w.expose(i, 64)
		memset(b, 0xa5)
		w.bufs = append(w.bufs, b)
		w.keys = append(w.keys, k)
		w.eps[i].SetNoticeHandler(func(int, transport.Key, transport.Notice) {
			w.mu.Lock()
			w.notices[i]++
			w.mu.Unlock()
		})
		w.eps[i].SetAMHandler(0, func(int, []byte, []byte) {})
	}
	w.h = make([][]transport.Region, n)
	for o := 0; o < n; o++ {
		for tg := 0; tg < n; tg++ {
			w.h[o] = append(w.h[o], w.region(o, tg, w.keys[tg], 64))
		}
	}
	return w
}

// checkSurvivors checks that ranks 0 and 1 still work with each other.
func (w *closeWorld) checkSurvivors() {
	w.t.Helper()
	for o := 0; o < 2; o++ {
		tg := 1 - o
		data := pattern(uint64(o), 8)
		w.must(w.put(w.h[o][tg], 32, data, noNotice), "Put from survivor %d to %d", o, tg)
		w.flush(o, tg)
		checkBytes(w.t, "survivor's region", w.bufs[tg][32:40], data)
		w.must(w.eps[o].SendAM(tg, 0, []byte{1}, nil), "SendAM from survivor %d to %d", o, tg)
	}
}

// testClose checks an orderly Close: the closed endpoint refuses
// everything with ErrClosed, operations aimed at it fail with ErrPeer, no
// FailureHandler is called, and the other ranks carry on.
func testClose(t *testing.T, f factory) {
	w := newCloseWorld(t, f)
	ctx := context.Background()
	w.must(w.eps[2].Close(), "Close")

	// The closed endpoint refuses everything.
	for tg := 0; tg < 2; tg++ {
		w.expectAll("by a closed endpoint", w.h[2][tg], transport.ErrClosed)
	}
	if _, err := w.eps[2].Expose(make([]byte, 8)); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Expose on a closed endpoint: got %v, want ErrClosed", err)
	}
	if _, err := w.eps[2].Region(0, w.keys[0], 64); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Region on a closed endpoint: got %v, want ErrClosed", err)
	}
	if err := w.eps[2].SendAM(0, 0, []byte{1}, nil); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("SendAM from a closed endpoint: got %v, want ErrClosed", err)
	}
	if err := w.eps[2].Flush(ctx, 0); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Flush on a closed endpoint: got %v, want ErrClosed", err)
	}
	if err := w.eps[2].FlushAll(ctx); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("FlushAll on a closed endpoint: got %v, want ErrClosed", err)
	}

	// Operations aimed at it fail with ErrPeer.
	for o := 0; o < 2; o++ {
		w.expectAll("to a closed peer", w.h[o][2], transport.ErrPeer)
		if err := w.eps[o].SendAM(2, 0, []byte{1}, nil); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("SendAM to a closed peer: got %v, want ErrPeer", err)
		}
		if _, err := w.eps[o].Region(2, w.keys[2], 64); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("Region of a closed peer: got %v, want ErrPeer", err)
		}
	}
	w.checkSurvivors()
	for i := 0; i < 2; i++ {
		checkFilled(t, "region where a closed endpoint tried to write", w.bufs[i][:32], 0xa5)
	}
	checkFilled(t, "region of a closed endpoint", w.bufs[2], 0xa5)
	if !w.caps.Synchronous {
		time.Sleep(50 * time.Millisecond) // let a wrong notification arrive
	}
	w.mu.Lock()
	if w.notices != [3]int{} {
		t.Errorf("notices delivered by refused operations: %v", w.notices)
	}
	w.mu.Unlock()
	for i := 0; i < 3; i++ {
		if calls := w.fails.of(i); len(calls) != 0 {
			t.Errorf("rank %d: FailureHandler called on an orderly Close: %v", i, calls)
		}
	}
}

// testPeerFailure kills a rank through Killer and checks that every other
// rank is told once, that operations aimed at the dead rank fail with
// ErrPeer, and that the others carry on.
func testPeerFailure(t *testing.T, f factory) {
	w := newCloseWorld(t, f)
	k, ok := w.eps[2].(Killer)
	if !ok {
		t.Skip("endpoints do not implement transporttest.Killer")
	}
	w.must(k.Kill(), "Kill")
	for i := 0; i < 2; i++ {
		eventually(t, "the FailureHandler of the survivors", func() bool { return len(w.fails.of(i)) > 0 })
	}
	for o := 0; o < 2; o++ {
		w.expectAll("to a failed peer", w.h[o][2], transport.ErrPeer)
		if err := w.eps[o].SendAM(2, 0, []byte{1}, nil); !errors.Is(err, transport.ErrPeer) {
			t.Errorf("SendAM to a failed peer: got %v, want ErrPeer", err)
		}
		if _, err := w.eps[o].Region(2, w.keys[2], 64); err == nil {
			t.Error("Region of a failed peer: no error")
		}
	}
	for tg := 0; tg < 2; tg++ {
		whats, errs, _ := w.tryAll(w.h[2][tg], 0)
		for i, err := range errs {
			if err == nil {
				t.Errorf("%s by a killed endpoint: no error", whats[i])
			}
		}
	}
	w.checkSurvivors()
	for i := 0; i < 2; i++ {
		checkFilled(t, "region where a killed endpoint tried to write", w.bufs[i][:32], 0xa5)
		calls := w.fails.of(i)
		if len(calls) != 1 || calls[0].peer != 2 || !errors.Is(calls[0].err, transport.ErrPeer) {
			t.Errorf("rank %d: FailureHandler calls %v, want one for peer 2 with ErrPeer", i, calls)
		}
	}
}
