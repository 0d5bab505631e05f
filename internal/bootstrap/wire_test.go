package bootstrap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// sampleMessages has one valid message of each kind, and edge cases.
var sampleMessages = []message{
	{kind: kindHello, rank: 3, size: 4, pid: 1234},
	{kind: kindHello, rank: maxSize - 1, size: maxSize, pid: 1<<31 - 1},
	{kind: kindAccept},
	{kind: kindData, round: 7, data: []byte("hello")},
	{kind: kindData, round: 1<<32 - 1, data: []byte{}},
	{kind: kindBlob, round: 2, rank: 9, data: []byte{0, 1, 2}},
	{kind: kindError, data: []byte("rank 2 (pid 99) closed its connection")},
}

func TestMessageRoundTrip(t *testing.T) {
	var stream []byte
	for _, m := range sampleMessages {
		stream = appendMessage(stream, m)
	}
	r := bytes.NewReader(stream)
	for i, want := range sampleMessages {
		got, err := readMessage(r)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got.kind != want.kind || got.rank != want.rank || got.size != want.size ||
			got.pid != want.pid || got.round != want.round || !bytes.Equal(got.data, want.data) {
			t.Fatalf("message %d: got %+v, want %+v", i, got, want)
		}
	}
	if _, err := readMessage(r); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

func TestLargestBlob(t *testing.T) {
	data := bytes.Repeat([]byte{0xab}, maxBlob)
	frame := appendMessage(nil, message{kind: kindBlob, rank: 1, data: data})
	m, err := readMessage(bytes.NewReader(frame))
	if err != nil || !bytes.Equal(m.data, data) {
		t.Fatalf("blob of %d bytes: %v", maxBlob, err)
	}
}

// frame builds a frame of payload p with the correct length.
func frame(p ...byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// le returns v in little-endian.
func le(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestMalformedMessages(t *testing.T) {
	hello := func(magic string, ver, rank, size, pid uint32) []byte {
		return frame(cat([]byte{'H'}, []byte(magic), le(ver), le(rank), le(size), le(pid))...)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"zero length", le(0)},
		{"length too large", le(maxFrame + 1)},
		{"length huge", le(1<<32 - 1)},
		{"unknown kind", frame('Z')},
		{"hello short", frame('H', 'N', 'R')},
		{"hello bad magic", hello("XXXX", version, 0, 1, 1)},
		{"hello bad version", hello(magic, version+1, 0, 1, 1)},
		{"hello size zero", hello(magic, version, 0, 0, 1)},
		{"hello size too large", hello(magic, version, 0, maxSize+1, 1)},
		{"hello rank too large", hello(magic, version, maxSize, maxSize, 1)},
		{"hello pid zero", hello(magic, version, 0, 1, 0)},
		{"hello pid too large", hello(magic, version, 0, 1, 1<<31)},
		{"accept with body", frame('A', 1)},
		{"data without round", frame('D', 1, 2)},
		{"blob without rank", frame('B', 1, 2, 3, 4)},
		{"blob rank too large", frame(cat([]byte{'B'}, le(0), le(maxSize))...)},
		{"data too large", frame(cat([]byte{'D'}, le(0), make([]byte, maxBlob+1))...)},
		{"error not utf8", frame('E', 0xff, 0xfe)},
		{"error too long", frame(cat([]byte{'E'}, bytes.Repeat([]byte("x"), maxText+1))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := readMessage(bytes.NewReader(tt.in))
			if !errors.Is(err, errMalformed) {
				t.Fatalf("readMessage = %+v, %v; want a malformed message error", m, err)
			}
		})
	}
}

func TestTruncatedMessage(t *testing.T) {
	full := appendMessage(nil, message{kind: kindData, round: 1, data: []byte("abcdef")})
	for n := 1; n < len(full); n++ {
		_, err := readMessage(bytes.NewReader(full[:n]))
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("first %d of %d bytes: %v, want io.ErrUnexpectedEOF", n, len(full), err)
		}
	}
}

func TestErrorMessageIsValid(t *testing.T) {
	long := strings.Repeat("é", maxText) // 2 bytes a rune: must be cut on a rune boundary
	for _, reason := range []string{"short", long, "bad \xff utf8"} {
		m := errorMessage(reason)
		if len(m.data) > maxText || !utf8.Valid(m.data) {
			t.Fatalf("errorMessage(%.20q...): %d bytes, valid UTF-8 %v", reason, len(m.data), utf8.Valid(m.data))
		}
		if _, err := readMessage(bytes.NewReader(appendMessage(nil, m))); err != nil {
			t.Fatalf("errorMessage(%.20q...) does not decode: %v", reason, err)
		}
	}
}

// FuzzReadMessage checks that the decoder never panics on any input, and
// that every message it accepts encodes back to exactly the bytes it was
// read from.
func FuzzReadMessage(f *testing.F) {
	var all []byte
	for _, m := range sampleMessages {
		b := appendMessage(nil, m)
		f.Add(b)
		f.Add(b[:len(b)-1])
		all = append(all, b...)
	}
	f.Add(all)
	f.Add([]byte{})
	f.Add(le(1<<32 - 1))
	f.Add(frame('Z', 1, 2))
	f.Add(frame('E', 0xff))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			start := len(in) - r.Len()
			m, err := readMessage(r)
			if err != nil {
				return
			}
			read := in[start : len(in)-r.Len()]
			if again := appendMessage(nil, m); !bytes.Equal(again, read) {
				t.Fatalf("message %+v read from %x encodes to %x", m, read, again)
			}
		}
	})
}
