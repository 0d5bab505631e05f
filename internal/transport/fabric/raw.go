//go:build fabric

package fabric

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// RawPingPong measures libfabric itself, the floor under the transport:
// two bare endpoints of this process, each on its own goroutine, send
// size bytes back and forth with fi_writedata into the other's
// registered buffer (remote CQ data), and poll their completion queues
// through cgo, yielding after an empty poll, as the transport's waiters
// do. Without delivered, the writes complete when sent, libfabric's
// default and the fastest; with it, each write asks for delivery
// completion (FI_DELIVERY_COMPLETE, where the provider has it) and its
// writer waits for that before it awaits the answer, as a put followed by
// a Flush must (on tcp;ofi_rxm this costs an acknowledgement per write).
// It returns the mean half round trip over iters round trips, after
// warmup more.
func RawPingPong(cfg Config, size, iters, warmup int, delivered bool) (time.Duration, error) {
	if size < 0 || iters <= 0 {
		return 0, fmt.Errorf("fabric: raw ping-pong of %d bytes, %d round trips", size, iters)
	}
	var sides [2]*rawSide
	defer func() {
		for _, s := range sides {
			if s != nil {
				s.close()
			}
		}
	}()
	var names [][]byte
	for i := range sides {
		l, a, err := openLib(cfg.Provider, cfg.Node, cfg.Domain, delivered)
		if err != nil {
			return 0, fmt.Errorf("fabric: %w", err)
		}
		s := &rawSide{lib: l, attr: a, delivered: delivered && a.delivery, buf: newCbuf(max(size, 8)), src: newCbuf(max(size, 8))}
		sides[i] = s
		if s.mr, s.key, err = l.register(s.buf.b, uint64(i+1)); err != nil {
			return 0, err
		}
		if a.mrMode&mrLocal != 0 || cfg.RegisterLocal {
			if s.src.mr, s.src.desc, err = l.registerLocal(s.src.b, localKeyBase|uint64(i+1)); err != nil {
				return 0, err
			}
		}
		name, err := l.name(a.addrLen)
		if err != nil {
			return 0, err
		}
		names = append(names, name)
	}
	for _, s := range sides {
		if err := s.lib.insert(names, s.attr.addrLen); err != nil {
			return 0, err
		}
	}
	for i, s := range sides {
		peer := sides[1-i]
		s.peer = 1 - i
		s.raddr, s.rkey = 0, peer.key
		if s.attr.mrMode&mrVirtAddr != 0 {
			s.raddr = addrOf(peer.buf.b)
		}
	}
	var elapsed time.Duration
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ping := i == 0
			if err := s.run(ping, size, warmup); err != nil {
				errs[i] = err
				return
			}
			start := time.Now()
			errs[i] = s.run(ping, size, iters)
			if ping {
				elapsed = time.Since(start)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return elapsed / time.Duration(2*iters), nil
}

// rawSide is one endpoint of RawPingPong.
type rawSide struct {
	lib        *lib
	attr       attr
	delivered  bool // writes ask for delivery completion, and the writer waits for it
	buf, src   cbuf
	mr, key    uint64
	peer       int
	raddr      uint64
	rkey       uint64
	batch      [compBatch]comp
	inflight   int
	incoming   int
	deadline   time.Time
	opsStarted uint64
}

// run makes n round trips: the pinging side writes first.
func (s *rawSide) run(ping bool, size, n int) error {
	s.deadline = time.Now().Add(time.Minute)
	for range n {
		if ping {
			if err := s.write(size); err != nil {
				return err
			}
		}
		if err := s.await(); err != nil {
			return err
		}
		if !ping {
			if err := s.write(size); err != nil {
				return err
			}
		}
	}
	// Let the last write's completion come back.
	for s.inflight > 0 {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// write issues one fi_writedata of size bytes to the peer.
func (s *rawSide) write(size int) error {
	inject := size <= s.attr.injectSize
	for {
		s.opsStarted++
		ret := s.lib.write(s.src.b[:size], s.src.desc, s.peer, s.raddr, s.rkey, 1, true, inject, s.delivered, s.opsStarted)
		if ret == 0 {
			s.inflight++
			for s.delivered && s.inflight > 0 {
				if err := s.poll(); err != nil {
					return err
				}
			}
			return nil
		}
		if ret != errAgain {
			return &libError{"fi_writedata", ret}
		}
		if err := s.poll(); err != nil {
			return err
		}
	}
}

// await polls until the peer's write arrived.
func (s *rawSide) await() error {
	for s.incoming == 0 {
		if err := s.poll(); err != nil {
			return err
		}
	}
	s.incoming--
	return nil
}

// poll reads the completion queue once.
func (s *rawSide) poll() error {
	n := s.lib.poll(&s.batch)
	if n < 0 && n != errAgain {
		return &libError{"fi_cq_read", n}
	}
	for i := range max(n, 0) {
		c := &s.batch[i]
		if code, _ := compErr(c); code != 0 {
			return fmt.Errorf("fabric: raw ping-pong: %s", strerror(code))
		}
		if compCtx(c) == 0 && compFlags(c)&flagRemoteCQData != 0 {
			s.incoming++
		} else if compCtx(c) != 0 {
			s.inflight--
		}
	}
	if n <= 0 {
		if time.Now().After(s.deadline) {
			return errors.New("fabric: raw ping-pong: no progress for a minute")
		}
		// Two busy pollers and the kernel's network stack share the
		// cores: an empty poll lets the others run.
		runtime.Gosched()
	}
	return nil
}

// close releases the side.
func (s *rawSide) close() {
	s.lib.shut()
	if s.mr != 0 {
		_ = deregister(s.mr)
	}
	s.buf.free()
	s.src.free()
	s.lib.close()
}
