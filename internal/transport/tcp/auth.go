package tcp

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// The handshake that opens every connection, before any frame:
//
//	origin → target  hello: preamble, origin rank, target rank, job size
//	                 (uint32 each), a random 32-byte nonce
//	target → origin  preamble; then, if the versions agree, a random
//	                 32-byte nonce and
//	                 HMAC-SHA256(secret, "narma-tcp target" || hello || nonce)
//	origin → target  HMAC-SHA256(secret, "narma-tcp origin" || hello || nonce)
//	target → origin  one byte 1: accepted
//
// where the preamble is "NRMT", the protocol version (uint16) and 0
// (uint16). Each side proves that it holds the job secret without
// sending it, over nonces that the other side chose, so a recorded
// handshake cannot be replayed. The target checks the hello (its own
// rank, the job size, an origin rank in range that is not connected yet)
// and the origin's proof before it reads any frame; anything else closes
// the connection.
//
// Both ends name their protocol version before anything else, so that
// ranks of different versions (started from different builds) refuse
// each other with an error that names both versions: the target
// answers an origin of another version with its preamble alone and
// closes the connection, and an origin gives up on a target of another
// version. (A target of version 1 closed the connection without a word,
// and its origins did not read a preamble.)

const (
	preambleSize = 8
	helloSize    = preambleSize + 44
	nonceSize    = 32
	macSize      = sha256.Size
)

// protoVersion is the version of the protocol this build speaks, the
// handshake's and the frames'. Version 2: the target names its version
// in the handshake; puts, gets and accumulates of more than chunkPayload
// bytes travel as frames of that size (a larger get or accumulate frame
// is refused), and progress through a large payload counts as a sign of
// life of the peer.
const protoVersion = 2

var helloMagic = [4]byte{'N', 'R', 'M', 'T'}

// MinSecret is the shortest job secret accepted, in bytes.
const MinSecret = 16

// ErrAuth is returned when a handshake fails: a peer without the job
// secret, or one that is not a rank of this job.
var ErrAuth = errors.New("tcp: connection refused: authentication failed")

// ErrVersion is returned when a handshake fails because the two ends
// speak different versions of the protocol (ranks started from different
// builds): its message names both.
var ErrVersion = errors.New("tcp: connection refused: protocol version mismatch")

// preamble returns the preamble of protocol version v, with which both
// ends open their side of a connection (with room behind it for the
// rest of a hello).
func preamble(v uint16) []byte {
	b := make([]byte, preambleSize, helloSize)
	copy(b, helloMagic[:])
	binary.LittleEndian.PutUint16(b[4:], v)
	return b
}

// decodePreamble returns the protocol version that the preamble b names;
// it reports false if b is not a preamble of narma.
func decodePreamble(b []byte) (uint16, bool) {
	if !bytes.Equal(b[:4], helloMagic[:]) {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[4:]), true
}

// hello is the opening message of a connection.
type hello struct {
	origin, target, size uint32
	nonce                [nonceSize]byte
}

// encode returns the hello as this endpoint sends it.
func (h *hello) encode() []byte {
	b := preamble(protoVersion)[:helloSize]
	binary.LittleEndian.PutUint32(b[8:], h.origin)
	binary.LittleEndian.PutUint32(b[12:], h.target)
	binary.LittleEndian.PutUint32(b[16:], h.size)
	copy(b[20:], h.nonce[:])
	return b
}

// decodeHello parses a hello of this protocol version; the caller has
// checked the version (decodePreamble).
func decodeHello(b []byte) (hello, error) {
	var h hello
	if b[6] != 0 || b[7] != 0 {
		return h, fmt.Errorf("%w: malformed hello", ErrAuth)
	}
	h.origin = binary.LittleEndian.Uint32(b[8:])
	h.target = binary.LittleEndian.Uint32(b[12:])
	h.size = binary.LittleEndian.Uint32(b[16:])
	copy(h.nonce[:], b[20:])
	return h, nil
}

// proof is the HMAC by which side role proves it holds secret.
func proof(secret []byte, role string, hello []byte, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("narma-tcp " + role))
	m.Write(hello)
	m.Write(nonce)
	return m.Sum(nil)
}

// handshakeTimeout bounds a handshake at the target. At the origin, the
// caller gives the deadline (peer.conn: the dial's, within the peer
// timeout).
const handshakeTimeout = 10 * time.Second

// clientHandshake opens conn as rank origin's connection to target; it
// fails if the handshake is not over by deadline.
func clientHandshake(conn net.Conn, secret []byte, origin, target, size int, deadline time.Time) error {
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	h := hello{origin: uint32(origin), target: uint32(target), size: uint32(size)}
	_, _ = rand.Read(h.nonce[:])
	hb := h.encode()
	if _, err := conn.Write(hb); err != nil {
		return err
	}
	var pre [preambleSize]byte
	if _, err := io.ReadFull(conn, pre[:]); err != nil {
		hint := ""
		if errors.Is(err, io.EOF) {
			hint = "; it may speak protocol version 1, which refuses other versions without a word"
		}
		return fmt.Errorf("%w: rank %d did not complete the handshake: %v%s", ErrAuth, target, err, hint)
	}
	switch v, ok := decodePreamble(pre[:]); {
	case !ok:
		return fmt.Errorf("%w: rank %d does not answer as narma does", ErrAuth, target)
	case v != protoVersion:
		return fmt.Errorf("%w: rank %d speaks protocol version %d, this endpoint version %d", ErrVersion, target, v, protoVersion)
	}
	var reply [nonceSize + macSize]byte
	if _, err := io.ReadFull(conn, reply[:]); err != nil {
		return fmt.Errorf("%w: rank %d did not complete the handshake: %v", ErrAuth, target, err)
	}
	nonce := reply[:nonceSize]
	if !hmac.Equal(reply[nonceSize:], proof(secret, "target", hb, nonce)) {
		return fmt.Errorf("%w: rank %d does not hold the job secret", ErrAuth, target)
	}
	if _, err := conn.Write(proof(secret, "origin", hb, nonce)); err != nil {
		return err
	}
	var ok [1]byte
	if _, err := io.ReadFull(conn, ok[:]); err != nil || ok[0] != 1 {
		return fmt.Errorf("%w: rank %d refused the connection", ErrAuth, target)
	}
	return conn.SetDeadline(time.Time{})
}

// serverHandshake checks an incoming connection at rank self of a job of
// size ranks and returns the origin's rank. accept is asked, once the
// origin is authenticated, whether it may connect now; its error refuses
// the connection.
func serverHandshake(conn net.Conn, secret []byte, self, size int, accept func(origin int) error) (int, error) {
	if err := conn.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return 0, err
	}
	hb := make([]byte, helloSize)
	if _, err := io.ReadFull(conn, hb); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	switch v, ok := decodePreamble(hb); {
	case !ok:
		return 0, fmt.Errorf("%w: not a narma connection", ErrAuth)
	case v != protoVersion:
		// Say which version this is, so that the origin can tell its
		// user (best effort: the connection closes either way).
		conn.Write(preamble(protoVersion))
		return 0, fmt.Errorf("%w: a peer speaks protocol version %d, this endpoint version %d", ErrVersion, v, protoVersion)
	}
	h, err := decodeHello(hb)
	if err != nil {
		return 0, err
	}
	if int64(h.target) != int64(self) || int64(h.size) != int64(size) || int64(h.origin) >= int64(size) || int64(h.origin) == int64(self) {
		return 0, fmt.Errorf("%w: hello for rank %d of %d from rank %d, this is rank %d of %d",
			ErrAuth, h.target, h.size, h.origin, self, size)
	}
	var nonce [nonceSize]byte
	_, _ = rand.Read(nonce[:])
	answer := append(append(preamble(protoVersion), nonce[:]...), proof(secret, "target", hb, nonce[:])...)
	if _, err := conn.Write(answer); err != nil {
		return 0, err
	}
	mac := make([]byte, macSize)
	if _, err := io.ReadFull(conn, mac); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrAuth, err)
	}
	if !hmac.Equal(mac, proof(secret, "origin", hb, nonce[:])) {
		return 0, fmt.Errorf("%w: a peer claiming rank %d does not hold the job secret", ErrAuth, h.origin)
	}
	origin := int(h.origin)
	if err := accept(origin); err != nil {
		return 0, err
	}
	if _, err := conn.Write([]byte{1}); err != nil {
		return 0, err
	}
	return origin, conn.SetDeadline(time.Time{})
}

// NewSecret returns a fresh random job secret.
func NewSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return b
}
