package main

import (
	"bufio"
	"io"
	"os"
	"sync"
)

// maxLine is the longest line --tag-output keeps whole; longer ones are
// cut into pieces of this size, each tagged.
const maxLine = 64 << 10

// sink is one of narmarun's output streams, shared by the ranks and
// narmarun's own messages. Each Write reaches the underlying writer in
// one piece. Once a write fails (a closed pipe) the sink discards
// everything, so that the ranks are never blocked on output.
type sink struct {
	mu     sync.Mutex
	w      io.Writer
	broken bool
}

// Write writes p whole, or discards it; it never fails.
func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.broken {
		if _, err := s.w.Write(p); err != nil {
			s.broken = true
		}
	}
	return len(p), nil
}

// file returns the file under s, if there is one the ranks can write to
// directly.
func (s *sink) file() *os.File {
	f, _ := s.w.(*os.File)
	return f
}

// output gives the ranks their standard output and error.
type output struct {
	tag     bool
	copiers sync.WaitGroup
	mu      sync.Mutex
	readers []*os.File // read ends of the pipes being copied
}

// stream returns the file a rank writes to for s, and whether the caller
// must close it once the rank has started. Without tagging, a rank writes
// straight to a file sink; otherwise it writes to a pipe copied into s,
// each line tagged with prefix.
func (o *output) stream(prefix string, s *sink) (f *os.File, mine bool, err error) {
	if f := s.file(); f != nil && !o.tag {
		return f, false, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	o.mu.Lock()
	o.readers = append(o.readers, r)
	o.mu.Unlock()
	o.copiers.Go(func() {
		if o.tag {
			copyTagged(s, r, prefix)
		} else {
			_, _ = io.Copy(s, r)
		}
	})
	return w, true, nil
}

// abandon closes the read ends of the pipes, which ends the copies of
// output that processes outside narmarun's reach still hold open.
func (o *output) abandon() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.readers {
		r.Close()
	}
}

// wait waits for the copies to end, for at most the time it takes
// timeout to fire, then abandons the rest.
func (o *output) wait(timeout <-chan struct{}) {
	done := make(chan struct{})
	go func() {
		o.copiers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-timeout:
		o.abandon()
		<-done
	}
	o.abandon() // close what is left: copies that ended leave their pipe open
}

// copyTagged copies src to dst line by line, each line prefixed and
// written in one piece. A last line without a newline gets one, and so
// does each piece of a line longer than maxLine.
func copyTagged(dst io.Writer, src io.Reader, prefix string) {
	br := bufio.NewReaderSize(src, maxLine)
	buf := make([]byte, 0, 256)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			buf = append(append(buf[:0], prefix...), line...)
			if line[len(line)-1] != '\n' {
				buf = append(buf, '\n')
			}
			_, _ = dst.Write(buf)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
