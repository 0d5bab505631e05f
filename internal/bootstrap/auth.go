package bootstrap

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

// Over TCP, a connection to the server starts with a handshake in which
// each end proves that it holds the job secret, before any message:
//
//	rank → server  challenge: "NRBA", version (uint16), 0 (uint16), a
//	               random 32-byte nonce
//	server → rank  a random 32-byte nonce, then
//	               HMAC-SHA256(secret, "narma-bootstrap server" || challenge || nonce)
//	rank → server  HMAC-SHA256(secret, "narma-bootstrap rank" || challenge || nonce)
//	server → rank  one byte 1: accepted
//
// Each proof covers a nonce the other end chose, so a recorded handshake
// cannot be replayed, and the two proofs differ by their label, so one
// end's proof cannot be reflected as the other's. The server checks the
// rank's proof before it reads anything else, and closes a connection
// that fails it without a word: it is no rank of this job. The rank
// checks the server's proof before it introduces itself, so it tells
// nothing to a server that does not hold the secret either. Like the tcp
// transport's, the handshake authenticates; it does not encrypt.

// MinSecret is the shortest job secret a TCP server or client accepts, in
// bytes.
const MinSecret = 16

// Sizes of the handshake.
const (
	challengeSize = 4 + 2 + 2 + nonceSize
	nonceSize     = 32
	macSize       = sha256.Size
	authVersion   = 1
)

// authMagic starts a rank's challenge.
const authMagic = "NRBA"

// authTimeout bounds the handshake at either end: a connection that has
// not proved itself by then is closed.
const authTimeout = 10 * time.Second

// errAuth is wrapped by the errors of a failed handshake.
var errAuth = errors.New("authentication failed")

// authProof is the HMAC by which the end called role proves that it holds
// secret, over the rank's challenge and the server's nonce.
func authProof(secret []byte, role string, challenge, nonce []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("narma-bootstrap " + role))
	m.Write(challenge)
	m.Write(nonce)
	return m.Sum(nil)
}

// clientAuth runs the rank's side of the handshake on conn. The caller
// bounds it (deadline or context).
func clientAuth(conn net.Conn, secret []byte) error {
	challenge := make([]byte, challengeSize)
	copy(challenge, authMagic)
	binary.LittleEndian.PutUint16(challenge[4:], authVersion)
	_, _ = rand.Read(challenge[8:])
	if _, err := conn.Write(challenge); err != nil {
		return err
	}
	var reply [nonceSize + macSize]byte
	if _, err := io.ReadFull(conn, reply[:]); err != nil {
		return fmt.Errorf("%w: the server closed the connection (%v): is it this job's?", errAuth, err)
	}
	nonce := reply[:nonceSize]
	if !hmac.Equal(reply[nonceSize:], authProof(secret, "server", challenge, nonce)) {
		return fmt.Errorf("%w: the server does not hold the job secret", errAuth)
	}
	if _, err := conn.Write(authProof(secret, "rank", challenge, nonce)); err != nil {
		return err
	}
	var ok [1]byte
	if _, err := io.ReadFull(conn, ok[:]); err != nil || ok[0] != 1 {
		return fmt.Errorf("%w: the server refused this rank's proof of the job secret", errAuth)
	}
	return nil
}

// serverAuth runs the server's side of the handshake on conn, within
// authTimeout, and returns an error unless the other end proved that it
// holds secret.
func serverAuth(conn net.Conn, secret []byte) error {
	if err := conn.SetDeadline(time.Now().Add(authTimeout)); err != nil {
		return err
	}
	challenge := make([]byte, challengeSize)
	if _, err := io.ReadFull(conn, challenge); err != nil {
		return fmt.Errorf("%w: %v", errAuth, err)
	}
	if !bytes.Equal(challenge[:4], []byte(authMagic)) {
		return fmt.Errorf("%w: not a narma bootstrap connection", errAuth)
	}
	if v := binary.LittleEndian.Uint16(challenge[4:]); v != authVersion || challenge[6] != 0 || challenge[7] != 0 {
		return fmt.Errorf("%w: handshake version %d, want %d", errAuth, v, authVersion)
	}
	var nonce [nonceSize]byte
	_, _ = rand.Read(nonce[:])
	if _, err := conn.Write(append(nonce[:], authProof(secret, "server", challenge, nonce[:])...)); err != nil {
		return err
	}
	mac := make([]byte, macSize)
	if _, err := io.ReadFull(conn, mac); err != nil {
		return fmt.Errorf("%w: %v", errAuth, err)
	}
	if !hmac.Equal(mac, authProof(secret, "rank", challenge, nonce[:])) {
		return fmt.Errorf("%w: the peer does not hold the job secret", errAuth)
	}
	if _, err := conn.Write([]byte{1}); err != nil {
		return err
	}
	return conn.SetDeadline(time.Time{})
}
