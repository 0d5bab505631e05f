package bench

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPoll checks that poll looks until look reports done, past the
// yielding looks into the sleeping ones, and returns look's error, or
// ctx's when ctx ends while look never reports done.
func TestPoll(t *testing.T) {
	ctx := context.Background()
	looks := 0
	start := time.Now()
	// Past the yields, and past pollYieldTime on any machine.
	err := poll(ctx, func() (bool, error) {
		looks++
		return looks >= pollYields+10 && time.Since(start) > 2*pollYieldTime, nil
	})
	if err != nil || looks < pollYields+10 {
		t.Errorf("poll until done: %d looks, %v; want at least %d looks, nil", looks, err, pollYields+10)
	}

	boom := errors.New("boom")
	looks = 0
	err = poll(ctx, func() (bool, error) {
		looks++
		if looks == 3 {
			return false, boom
		}
		return false, nil
	})
	if err != boom || looks != 3 {
		t.Errorf("poll of a failing look: %d looks, %v; want 3 looks, %v", looks, err, boom)
	}

	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- poll(cctx, func() (bool, error) { return false, nil }) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("poll with an ending context: %v, want %v", err, context.DeadlineExceeded)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("poll went on after its context ended")
	}
}
