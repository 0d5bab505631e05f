//go:build fabric

package fabric

// CheckRegistration returns cfg with every buffer handed to libfabric
// checked against the registration whose descriptor goes with it.
func CheckRegistration(cfg Config) Config {
	cfg.checkRegistration = true
	return cfg
}

// WithoutDelivery returns cfg declining FI_DELIVERY_COMPLETE: Flush then
// asks the target, as on providers that lack it.
func WithoutDelivery(cfg Config) Config {
	cfg.noDelivery = true
	return cfg
}

// WithoutLazyWrites returns cfg whose writes all ask for delivery
// completion, as on providers that do not keep writes in order.
func WithoutLazyWrites(cfg Config) Config {
	cfg.noLazy = true
	return cfg
}

// Lazy reports whether the endpoint's writes complete when sent, and
// confirms tell when they were delivered.
func (e *Endpoint) Lazy() bool { return e.lazy }

// Delivery reports whether operations complete once delivered.
func (e *Endpoint) Delivery() bool { return e.attr.delivery }

// RegistrationFailures returns how many buffers went to libfabric
// outside the registration named by their descriptor, and the first.
func (e *Endpoint) RegistrationFailures() (int, string) { return e.regs.failures() }

// LocalRegistrations returns how many local registrations are open.
func (e *Endpoint) LocalRegistrations() int {
	e.regs.mu.Lock()
	defer e.regs.mu.Unlock()
	return len(e.regs.spans)
}

// PauseProgress stops or resumes the background goroutine's polling:
// while paused, only the caller's polls and waits read the completion
// queue.
func (e *Endpoint) PauseProgress(on bool) { e.prog.paused.Store(on) }

// Freeze makes the endpoint fall silent without closing, as a stopped
// process or a lost link would: no heartbeat, and nobody reads its
// completion queue.
func (e *Endpoint) Freeze() {
	close(e.beatStop)
	<-e.beatDone
	e.beatStop = nil
	e.prog.stop()
}
