package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// interrupted is the cause of run's context when narmarun receives a
// signal asking it to stop.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "received " + i.sig.String() }

// notifyContext returns a context canceled, with an interrupted cause,
// by the first SIGINT, SIGTERM or SIGHUP. It also catches SIGPIPE, so
// that a closed standard output makes writes fail instead of killing
// narmarun before it cleans up. stop undoes this.
func notifyContext() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s != syscall.SIGPIPE {
					cancel(interrupted{s})
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruptStatus returns the exit status for a job stopped because ctx
// ended: 128 plus the number of the signal received, as a shell reports
// it, and 130 (SIGINT) when the context ended for another reason.
func interruptStatus(ctx context.Context) int {
	if i, ok := errors.AsType[interrupted](context.Cause(ctx)); ok {
		if s, ok := i.sig.(syscall.Signal); ok {
			return exitSignal + int(s)
		}
	}
	return exitSignal + int(syscall.SIGINT)
}
