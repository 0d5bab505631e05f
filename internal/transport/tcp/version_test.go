package tcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/narma-rma/narma/internal/transport"
)

// otherVersion is a protocol version that this build does not speak.
const otherVersion = protoVersion + 1

// helloOfVersion returns the hello of rank origin to rank target of a job
// of size ranks, as an endpoint speaking protocol version v would send it
// (the hello's layout has not changed since version 1).
func helloOfVersion(v uint16, origin, target, size int) []byte {
	h := hello{origin: uint32(origin), target: uint32(target), size: uint32(size)}
	_, _ = rand.Read(h.nonce[:])
	b := h.encode()
	binary.LittleEndian.PutUint16(b[4:], v)
	return b
}

// namesVersions fails the test unless err names both protocol versions.
func namesVersions(t *testing.T, what string, err error, a, b int) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	for _, v := range []int{a, b} {
		if !strings.Contains(err.Error(), fmt.Sprintf("version %d", v)) {
			t.Errorf("%s: %q does not name protocol version %d", what, err, v)
		}
	}
}

// TestProtocolVersion checks that ranks speaking different versions of the
// protocol refuse each other in the handshake, with an error naming both
// versions, whichever end is the newer: the target says its version
// first, before anything else it answers, and closes the connection if
// the origin's differs; the origin gives up when the target's differs.
func TestProtocolVersion(t *testing.T) {
	if protoVersion < 2 {
		t.Errorf("protocol version %d: the framing changed since version 1 (frames of at most 4 MiB)", protoVersion)
	}

	t.Run("origin of another version", func(t *testing.T) {
		// At the target: the refusal names both versions.
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		answer := make(chan []byte, 1)
		go func() {
			a.Write(helloOfVersion(otherVersion, 0, 1, 2))
			got, _ := io.ReadAll(a)
			answer <- got
		}()
		accepted := false
		_, err := serverHandshake(b, NewSecret(), 1, 2, func(int) error { accepted = true; return nil })
		b.Close()
		if !errors.Is(err, ErrVersion) {
			t.Errorf("serverHandshake: %v, want an error wrapping ErrVersion", err)
		}
		namesVersions(t, "serverHandshake", err, otherVersion, protoVersion)
		if accepted {
			t.Error("the target accepted an origin of another version")
		}
		// The origin hears the target's version, and nothing more.
		if got, want := <-answer, preamble(protoVersion); !bytes.Equal(got, want) {
			t.Errorf("the target answered %x, want its version alone, %x", got, want)
		}
	})

	t.Run("origin of another version, endpoint", func(t *testing.T) {
		secret := NewSecret()
		eps := newGroup(t, Config{Size: 2, Secret: secret})
		w := watch(t, eps[1], 64)
		c := dial(t, eps[1])
		if _, err := c.Write(helloOfVersion(otherVersion, 0, 1, 2)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("reading the target's answer: %v", err)
		}
		if want := preamble(protoVersion); !bytes.Equal(got, want) {
			t.Errorf("the target answered %x, want its version alone, %x", got, want)
		}
		// Rank 0 itself still connects.
		controlPut(t, eps[0], w)
		w.noFailure(t)
	})

	t.Run("target of another version", func(t *testing.T) {
		secret := NewSecret()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		heard := make(chan []byte, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			hb := make([]byte, helloSize)
			io.ReadFull(c, hb)
			heard <- hb
			// What a target of the other version answers.
			pre := preamble(otherVersion)
			c.Write(pre)
		}()
		e, err := New(context.Background(), Config{Rank: 0, Size: 2, Secret: secret, PeerTimeout: 5 * time.Second,
			Exchange: func(_ context.Context, data []byte) ([][]byte, error) {
				return [][]byte{data, []byte(ln.Addr().String())}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		failed := make(chan error, 1)
		e.SetFailureHandler(func(_ int, err error) { failed <- err })
		_, err = e.Region(1, transport.WordKey(1), 64)
		if !errors.Is(err, transport.ErrPeer) || !errors.Is(err, ErrVersion) {
			t.Errorf("Region: %v, want an error matching ErrPeer and ErrVersion", err)
		}
		namesVersions(t, "Region", err, otherVersion, protoVersion)
		t.Logf("Region: %v", err)
		select {
		case ferr := <-failed:
			namesVersions(t, "failure handler", ferr, otherVersion, protoVersion)
		case <-time.After(waitLimit):
			t.Error("the failure handler was not called")
		}
		if hb := <-heard; binary.LittleEndian.Uint16(hb[4:]) != protoVersion {
			t.Errorf("the origin's hello says version %d, want %d", binary.LittleEndian.Uint16(hb[4:]), protoVersion)
		}
	})

	t.Run("target of version 1", func(t *testing.T) {
		// A target of version 1 closes the connection on a hello of
		// another version without a word: the origin's error says it
		// may be that.
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go func() {
			io.ReadFull(a, make([]byte, helloSize))
			a.Close()
		}()
		err := clientHandshake(b, NewSecret(), 0, 1, 2, time.Now().Add(waitLimit))
		if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "protocol version 1") {
			t.Errorf("clientHandshake: %v, want an error wrapping ErrAuth that mentions protocol version 1", err)
		}
	})

	t.Run("target of another version, clientHandshake", func(t *testing.T) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go func() {
			io.ReadFull(a, make([]byte, helloSize))
			// Had the versions agreed, a nonce and a proof would follow.
			a.Write(append(preamble(otherVersion), make([]byte, nonceSize+macSize)...))
			io.Copy(io.Discard, a)
		}()
		err := clientHandshake(b, NewSecret(), 0, 1, 2, time.Now().Add(waitLimit))
		if !errors.Is(err, ErrVersion) {
			t.Errorf("clientHandshake: %v, want an error wrapping ErrVersion", err)
		}
		namesVersions(t, "clientHandshake", err, otherVersion, protoVersion)
	})
}
