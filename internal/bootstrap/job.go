package bootstrap

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// SecretLen is the length of the secrets NewJob makes, in bytes.
const SecretLen = 32

// NewJob returns the identity of a new job that this process launches:
// its identifier, "<pid>-<16 hex digits>" (this process's id and random
// bits), which names what the job leaves on its hosts (the shared-memory
// transport's segments) so that the launcher removes it when the job
// ends and anyone can tell when the launcher is gone; and its secret,
// which authenticates the job's TCP connections, bootstrap and
// transport. Every job gets both, whatever its transport.
func NewJob() (id string, secret []byte) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (Go 1.24+)
	secret = make([]byte, SecretLen)
	_, _ = rand.Read(secret)
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b[:])), secret
}
