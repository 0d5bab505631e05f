//go:build !linux

package tcp

import (
	"net"
	"time"
)

// spinSet is the polling state of an endpoint; readers poll only on
// Linux, so there is none here.
type spinSet struct{}

func newSpinSet() *spinSet               { return nil }
func (s *spinSet) setSpin(time.Duration) {}
func (s *spinSet) close()                {}

// spinning returns c: off Linux, reads wait in the network poller at once.
func spinning(c net.Conn, set *spinSet) net.Conn { return c }
