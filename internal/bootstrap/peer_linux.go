package bootstrap

import (
	"fmt"
	"net"
	"os"

	"github.com/narma-rma/narma/internal/sys"
)

// checkPeer returns an error unless the process at the other end of conn
// runs as the same user as this one.
func checkPeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	pid, uid, err := sys.PeerUID(raw)
	if err != nil {
		return err
	}
	if uid != os.Getuid() {
		return fmt.Errorf("bootstrap: peer pid %d runs as uid %d, not %d", pid, uid, os.Getuid())
	}
	return nil
}
