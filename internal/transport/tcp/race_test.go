//go:build race

package tcp

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// The race build's registry of the connections between endpoints of this
// process (race_on.go) must not take a connection with a stranger for one
// of them when a port is reused: its reader would then wait forever for
// byte counts that nobody makes. These tests reuse, for a raw client and
// for a fake peer, the port of a connection or listener that the
// registry saw before.

// TestRaceRegistryReusedDialPort: a raw client dials rank 1 from the
// local port of a connection dialed earlier by an endpoint (closed since).
func TestRaceRegistryReusedDialPort(t *testing.T) {
	// An endpoint's connection, as peer.conn makes it, from a port of
	// our choosing; it ends with the accepting side closing first, so
	// that the port is free again at once.
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Close()
	raceListening(l1.Addr())
	c1, err := net.Dial("tcp", l1.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raceDialed(c1)
	s1, err := l1.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := raceWrap(s1, false).(*raceConn); !ok {
		t.Fatal("a connection between endpoints is not counted")
	}
	if _, ok := raceWrap(c1, true).(*raceConn); !ok {
		t.Fatal("a connection between endpoints is not counted at the dialer")
	}
	port := c1.LocalAddr()
	s1.Close()
	io.Copy(io.Discard, c1) // the FIN
	c1.Close()

	secret := NewSecret()
	eps := newGroup(t, Config{Size: 2, Secret: secret})
	w := watch(t, eps[1], 64)
	var c net.Conn
	for deadline := time.Now().Add(waitLimit); ; {
		d := net.Dialer{LocalAddr: port}
		if c, err = d.Dial("tcp", eps[1].Addr().String()); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("cannot dial from %v again: %v", port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer c.Close()
	if err := clientHandshake(c, secret, 0, 1, 2, time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	req := append(frame(header{kind: KindPut, key: keyWord(w.key), length: 4}, []byte("data")), frame(header{kind: KindFlush, id: 1}, nil)...)
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var hb [headerSize]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		// Release the reader that waits for counts, so that the
		// endpoints can close.
		raceCounter(c.LocalAddr(), c.RemoteAddr()).Add(1 << 40)
		t.Fatalf("no answer from rank 1 to a stranger dialing from a reused port: %v", err)
	}
}

// TestRaceRegistryReusedListenPort: a fake peer listens on the address of
// a closed endpoint's listener.
func TestRaceRegistryReusedListenPort(t *testing.T) {
	old, err := Group(context.Background(), Config{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	addr := old[0].Addr().String()
	old[0].Close()
	f := &fakePeer{secret: NewSecret(), handshake: true, answerLookups: true, frames: make(map[Kind]int)}
	for deadline := time.Now().Add(waitLimit); ; {
		if f.ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Skipf("cannot listen on %v again: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.wg.Add(1)
	go f.accept()
	defer func() {
		f.ln.Close()
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	}()
	e, _ := endpointWithFake(t, f, 2*time.Second)
	if _, err := e.Region(1, transport.WordKey(1), 64); err != nil {
		if o := e.peers[1].out.Load(); o != nil {
			// Release the reader that waits for counts.
			raceCounter(o.c.RemoteAddr(), o.c.LocalAddr()).Add(1 << 40)
		}
		if errors.Is(err, transport.ErrPeer) {
			t.Fatalf("the lookup answered by a stranger listening on a reused address was not read: %v", err)
		}
		t.Fatal(err)
	}
}
