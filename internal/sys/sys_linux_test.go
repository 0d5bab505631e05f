package sys

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestSegment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	a, err := CreateSegment(path, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateSegment(path, 8192); err == nil {
		t.Fatal("CreateSegment of an existing file succeeded")
	}
	b, err := OpenSegment(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 8192 {
		t.Fatalf("opened %d bytes, want 8192", len(b))
	}
	a[4097] = 42
	if b[4097] != 42 {
		t.Fatal("a store through one mapping is not seen through the other")
	}
	if err := Retire(b); err != nil {
		t.Fatal(err)
	}
	if b[4097] != 0 {
		t.Fatalf("a retired mapping reads %d, want 0", b[4097])
	}
	b[4097] = 7 // writes into private pages, not the segment
	if a[4097] != 42 {
		t.Fatalf("a write through a retired mapping reached the segment: %d", a[4097])
	}
	if _, err := OpenSegment(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("OpenSegment of a missing file succeeded")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSegment(empty); err == nil {
		t.Fatal("OpenSegment of an empty file succeeded")
	}
}

func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	// Above the kernel's pid_max (at most 2^22).
	if Alive(1 << 30) {
		t.Fatal("pid 2^30 is alive")
	}
}

func TestFutex(t *testing.T) {
	var w atomic.Uint32
	start := time.Now()
	FutexWait(&w, 1, time.Second) // *w != 1: returns at once
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("FutexWait on a changed word slept %v", d)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for w.Load() == 0 {
			FutexWait(&w, 0, time.Minute)
		}
	}()
	time.Sleep(10 * time.Millisecond)
	w.Store(1)
	FutexWake(&w)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("FutexWake did not wake the sleeper")
	}
}

func TestEpoll(t *testing.T) {
	ep, err := NewEpoll()
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	if err := ep.Add(p[0]); err != nil {
		t.Fatal(err)
	}
	var evs Events
	if n, _, err := ep.Ready(&evs); n != 0 || err != nil {
		t.Fatalf("empty pipe: Ready = %d, %v", n, err)
	}
	if _, err := syscall.Write(p[1], []byte{1}); err != nil {
		t.Fatal(err)
	}
	if n, fd, err := ep.Ready(&evs); n != 1 || fd != p[0] || err != nil {
		t.Fatalf("pipe with a byte: Ready = %d, %d, %v; want 1, %d", n, fd, err, p[0])
	}
	if err := ep.Remove(p[0]); err != nil {
		t.Fatal(err)
	}
	if n, _, err := ep.Ready(&evs); n != 0 || err != nil {
		t.Fatalf("after Remove: Ready = %d, %v", n, err)
	}
}

func TestReadProcess(t *testing.T) {
	AllowPeers()
	src := []byte("single copy")
	dst := make([]byte, len(src))
	if err := ReadProcess(os.Getpid(), uintptrOf(src), dst); err != nil {
		t.Skip("process_vm_readv refused here:", err)
	}
	if string(dst) != string(src) {
		t.Fatalf("read %q, want %q", dst, src)
	}
}
