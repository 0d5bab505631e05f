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
//	origin → target  hello: "NRMT", version (uint16), 0 (uint16), origin
//	                 rank, target rank, job size (uint32 each), a random
//	                 32-byte nonce
//	target → origin  a random 32-byte nonce, then
//	                 HMAC-SHA256(secret, "narma-tcp target" || hello || nonce)
//	origin → target  HMAC-SHA256(secret, "narma-tcp origin" || hello || nonce)
//	target → origin  one byte 1: accepted
//
// Each side proves that it holds the job secret without sending it, over
// nonces that the other side chose, so a recorded handshake cannot be
// replayed. The target checks the hello (its own rank, the job size, an
// origin rank in range that is not connected yet) and the origin's proof
// before it reads any frame; anything else closes the connection.

const (
	helloSize    = 52
	nonceSize    = 32
	macSize      = sha256.Size
	protoVersion = 1
)

var helloMagic = [4]byte{'N', 'R', 'M', 'T'}

// MinSecret is the shortest job secret accepted, in bytes.
const MinSecret = 16

// ErrAuth is returned when a handshake fails: a peer without the job
// secret, or one that is not a rank of this job.
var ErrAuth = errors.New("tcp: connection refused: authentication failed")

// hello is the opening message of a connection.
type hello struct {
	origin, target, size uint32
	nonce                [nonceSize]byte
}

func (h *hello) encode() []byte {
	b := make([]byte, helloSize)
	copy(b, helloMagic[:])
	binary.LittleEndian.PutUint16(b[4:], protoVersion)
	binary.LittleEndian.PutUint32(b[8:], h.origin)
	binary.LittleEndian.PutUint32(b[12:], h.target)
	binary.LittleEndian.PutUint32(b[16:], h.size)
	copy(b[20:], h.nonce[:])
	return b
}

func decodeHello(b []byte) (hello, error) {
	var h hello
	if !bytes.Equal(b[:4], helloMagic[:]) {
		return h, fmt.Errorf("%w: not a narma connection", ErrAuth)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != protoVersion || b[6] != 0 || b[7] != 0 {
		return h, fmt.Errorf("%w: protocol version %d, want %d", ErrAuth, v, protoVersion)
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
	if _, err := conn.Write(append(nonce[:], proof(secret, "target", hb, nonce[:])...)); err != nil {
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
