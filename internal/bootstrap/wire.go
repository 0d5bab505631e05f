package bootstrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// Limits of the protocol.
const (
	maxBlob    = 1 << 20 // largest blob a rank may contribute to a round
	maxSize    = 1 << 16 // most ranks in a job
	maxText    = 4 << 10 // longest failure reason
	version    = 1       // protocol version in the hello
	magic      = "NRMB"  // starts every hello
	lenBytes   = 4       // frame length prefix
	helloBody  = 4 + 4*4 // magic, version, rank, size, pid
	blobHeader = 4 + 4   // round, rank
	maxFrame   = 1 + blobHeader + maxBlob
)

// kind is the first byte of a frame.
type kind byte

// Message kinds; see the package documentation.
const (
	kindHello  kind = 'H'
	kindAccept kind = 'A'
	kindData   kind = 'D'
	kindBlob   kind = 'B'
	kindError  kind = 'E'
	kindFailed kind = 'F'
	kindWatch  kind = 'W'
	kindTold   kind = 'T'
)

// message is one decoded frame. Which fields count depends on kind:
// hello uses rank, size and pid; data uses round and data; blob uses
// round, rank and data; error uses data as the reason; failed uses rank
// as the peer that failed.
type message struct {
	kind            kind
	rank, size, pid int
	round           uint32
	data            []byte
}

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("malformed message")

// malformed returns a decoding error.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// appendMessage appends the frame of m to b. m must be valid: encoding a
// message that decodeMessage would reject is a bug of the caller.
func appendMessage(b []byte, m message) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint32(b, 0) // patched below
	b = append(b, byte(m.kind))
	switch m.kind {
	case kindHello:
		b = append(b, magic...)
		b = binary.LittleEndian.AppendUint32(b, version)
		b = binary.LittleEndian.AppendUint32(b, uint32(m.rank))
		b = binary.LittleEndian.AppendUint32(b, uint32(m.size))
		b = binary.LittleEndian.AppendUint32(b, uint32(m.pid))
	case kindAccept, kindWatch, kindTold:
	case kindData:
		b = binary.LittleEndian.AppendUint32(b, m.round)
		b = append(b, m.data...)
	case kindBlob:
		b = binary.LittleEndian.AppendUint32(b, m.round)
		b = binary.LittleEndian.AppendUint32(b, uint32(m.rank))
		b = append(b, m.data...)
	case kindError:
		b = append(b, m.data...)
	case kindFailed:
		b = binary.LittleEndian.AppendUint32(b, uint32(m.rank))
	default:
		panic(fmt.Sprintf("bootstrap: encoding message of unknown kind %q", m.kind))
	}
	binary.LittleEndian.PutUint32(b[start:], uint32(len(b)-start-lenBytes))
	return b
}

// readMessage reads and decodes one frame from r. It returns io.EOF when
// r ends exactly before a frame, and a wrapped io.ErrUnexpectedEOF when it
// ends inside one. It allocates at most maxFrame bytes.
func readMessage(r io.Reader) (message, error) {
	var hdr [lenBytes]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return message{}, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n < 1 || n > maxFrame {
		return message{}, malformed("frame length %d not in [1, %d]", n, maxFrame)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return message{}, fmt.Errorf("reading a frame of %d bytes: %w", n, err)
	}
	return decodeMessage(buf)
}

// decodeMessage decodes the payload of a frame (kind and body). The data
// of the message aliases buf.
func decodeMessage(buf []byte) (message, error) {
	if len(buf) < 1 {
		return message{}, malformed("empty frame")
	}
	m := message{kind: kind(buf[0])}
	body := buf[1:]
	u32 := func(i int) uint32 { return binary.LittleEndian.Uint32(body[4*i:]) }
	switch m.kind {
	case kindHello:
		if len(body) != helloBody {
			return message{}, malformed("hello of %d bytes, want %d", len(body), helloBody)
		}
		if string(body[:4]) != magic {
			return message{}, malformed("hello without the magic %q", magic)
		}
		if v := u32(1); v != version {
			return message{}, malformed("protocol version %d, want %d", v, version)
		}
		rank, size, pid := u32(2), u32(3), u32(4)
		if size < 1 || size > maxSize {
			return message{}, malformed("job size %d not in [1, %d]", size, maxSize)
		}
		if rank >= maxSize {
			return message{}, malformed("rank %d not below %d", rank, maxSize)
		}
		if pid < 1 || pid > math.MaxInt32 {
			return message{}, malformed("pid %d not in [1, %d]", pid, math.MaxInt32)
		}
		m.rank, m.size, m.pid = int(rank), int(size), int(pid)
	case kindAccept, kindWatch, kindTold:
		if len(body) != 0 {
			return message{}, malformed("message of kind %q with a body of %d bytes", m.kind, len(body))
		}
	case kindData:
		if len(body) < 4 || len(body)-4 > maxBlob {
			return message{}, malformed("data of %d bytes", len(body))
		}
		m.round, m.data = u32(0), body[4:]
	case kindBlob:
		if len(body) < blobHeader || len(body)-blobHeader > maxBlob {
			return message{}, malformed("blob of %d bytes", len(body))
		}
		rank := u32(1)
		if rank >= maxSize {
			return message{}, malformed("blob of rank %d, not below %d", rank, maxSize)
		}
		m.round, m.rank, m.data = u32(0), int(rank), body[blobHeader:]
	case kindError:
		if len(body) > maxText || !utf8.Valid(body) {
			return message{}, malformed("failure reason of %d bytes, not UTF-8 text of at most %d", len(body), maxText)
		}
		m.data = body
	case kindFailed:
		if len(body) != 4 {
			return message{}, malformed("peer failure of %d bytes, want 4", len(body))
		}
		rank := u32(0)
		if rank >= maxSize {
			return message{}, malformed("failure of rank %d, not below %d", rank, maxSize)
		}
		m.rank = int(rank)
	default:
		return message{}, malformed("unknown kind 0x%02x", buf[0])
	}
	return m, nil
}

// errorMessage returns the error frame carrying reason, made valid UTF-8
// and cut to maxText bytes on a rune boundary.
func errorMessage(reason string) message {
	reason = strings.ToValidUTF8(reason, "\uFFFD")
	if len(reason) > maxText {
		cut := maxText
		for !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	return message{kind: kindError, data: []byte(reason)}
}
