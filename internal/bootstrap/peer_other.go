//go:build !linux

package bootstrap

import "net"

// checkPeer accepts every peer: outside Linux only the socket's mode
// (0600) keeps other users out.
func checkPeer(*net.UnixConn) error { return nil }
