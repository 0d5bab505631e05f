//go:build !unix

package bootstrap

import "net"

// peek cannot look at a connection's pending data here: it reports
// nothing.
func peek(net.Conn, []byte) (n int, eof bool) { return 0, false }

// waitPeek cannot wait for pending data here.
func waitPeek(net.Conn, []byte, func(n int, eof bool) bool) error { return errNoPeek }
