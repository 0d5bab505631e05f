package narma_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/narma-rma/narma"
)

// TestProcNull: two-sided calls and RMA operations aimed at ProcNull
// complete at once and do nothing: receives and probes report
// Status{Source: ProcNull, Tag: AnyTag, Count: 0} and leave the buffer
// alone, gets and fetches leave their destinations alone, no window
// changes, and RMA on ProcNull needs no epoch; a bad tag is still an
// error.
func TestProcNull(t *testing.T) {
	run(t, 2, func(c *narma.Comm) error {
		ctx := c.Context()
		null := narma.Status{Source: narma.ProcNull, Tag: narma.AnyTag}
		if err := c.Send(ctx, []byte{1}, narma.ProcNull, 3); err != nil {
			return fmt.Errorf("Send to ProcNull: %v", err)
		}
		if err := narma.Send(ctx, c, []int64{1}, narma.ProcNull, 3); err != nil {
			return fmt.Errorf("typed Send to ProcNull: %v", err)
		}
		if err := c.Send(ctx, nil, narma.ProcNull, -4); !errors.Is(err, narma.ErrTag) {
			return fmt.Errorf("Send to ProcNull with tag -4: %v, want ErrTag", err)
		}
		buf := []byte{7, 7}
		st, err := c.Recv(ctx, buf, narma.ProcNull, narma.AnyTag)
		if err != nil || st != null || !slices.Equal(buf, []byte{7, 7}) {
			return fmt.Errorf("Recv from ProcNull: %+v, %v, buffer %v", st, err, buf)
		}
		if st, err := c.Probe(ctx, narma.ProcNull, 5); err != nil || st != null {
			return fmt.Errorf("Probe of ProcNull: %+v, %v", st, err)
		}
		if st, ok, err := c.Iprobe(narma.ProcNull, 5); err != nil || !ok || st != null {
			return fmt.Errorf("Iprobe of ProcNull: %+v, %v, %v", st, ok, err)
		}
		r, err := c.Irecv(buf, narma.ProcNull, 1)
		if err != nil {
			return err
		}
		if st, err := r.Wait(ctx); err != nil || st != null {
			return fmt.Errorf("Irecv from ProcNull: %+v, %v", st, err)
		}
		if r, err = c.Isend(ctx, buf, narma.ProcNull, 1); err != nil {
			return err
		}
		if _, err := r.Wait(ctx); err != nil {
			return fmt.Errorf("Isend to ProcNull: %v", err)
		}

		w, err := narma.Allocate[int64](ctx, c, 4)
		if err != nil {
			return err
		}
		copy(w.Local(), []int64{1, 2, 3, 4})
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		// No epoch is open.
		dst := []int64{-1, -1}
		var old int64 = -1
		for what, err := range map[string]error{
			"Put":            w.Put([]int64{9, 9}, narma.ProcNull, 0),
			"Get":            w.Get(dst, narma.ProcNull, 0),
			"Accumulate":     w.Accumulate([]int64{9}, narma.ProcNull, 0, narma.Sum),
			"FetchAndOp":     w.FetchAndOp(9, &old, narma.ProcNull, 0, narma.Sum),
			"CompareAndSwap": w.CompareAndSwap(1, 9, &old, narma.ProcNull, 0),
			"PutNotify":      w.PutNotify([]int64{9}, narma.ProcNull, 0, narma.Tag(1)),
		} {
			if err != nil {
				return fmt.Errorf("%s on ProcNull: %v", what, err)
			}
		}
		if err := w.LockAll(ctx, 0); err != nil {
			return err
		}
		req, err := w.Rput([]int64{9}, narma.ProcNull, 0)
		if err != nil {
			return fmt.Errorf("Rput to ProcNull: %v", err)
		}
		if _, err := req.Wait(ctx); err != nil {
			return fmt.Errorf("Rput to ProcNull: %v", err)
		}
		if err := w.Flush(ctx, narma.ProcNull); err != nil {
			return fmt.Errorf("Flush of ProcNull: %v", err)
		}
		if err := w.FlushLocal(ctx, narma.ProcNull); err != nil {
			return fmt.Errorf("FlushLocal of ProcNull: %v", err)
		}
		if err := w.UnlockAll(ctx); err != nil {
			return err
		}
		if !slices.Equal(dst, []int64{-1, -1}) || old != -1 {
			return fmt.Errorf("Get and fetches from ProcNull wrote %v and %d", dst, old)
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		if got := w.Local(); !slices.Equal(got, []int64{1, 2, 3, 4}) {
			return fmt.Errorf("operations on ProcNull changed a window: %v", got)
		}
		return w.Free(ctx)
	})
}
