//go:build !linux

package tcp

import (
	"net"
	"time"
)

// spinner is an endpoint's part of the polling reads, which only Linux
// has: none here.
type spinner struct{}

func newSpinner() *spinner                   { return nil }
func (sp *spinner) setSpin(time.Duration)    {}
func (sp *spinner) close()                   {}
func (sp *spinner) watch(net.Listener)       {}
func (sp *spinner) begin()                   {}
func (sp *spinner) end()                     {}
func (sp *spinner) wrap(c net.Conn) net.Conn { return c }
