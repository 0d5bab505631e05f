//go:build fabric

package fabric

// CheckRegistration returns cfg with every buffer handed to libfabric
// checked against the registration whose descriptor goes with it.
func CheckRegistration(cfg Config) Config {
	cfg.checkRegistration = true
	return cfg
}

// RegistrationFailures returns how many buffers went to libfabric
// outside the registration named by their descriptor, and the first.
func (e *Endpoint) RegistrationFailures() (int, string) { return e.regs.failures() }

// LocalRegistrations returns how many local registrations are open.
func (e *Endpoint) LocalRegistrations() int {
	e.regs.mu.Lock()
	defer e.regs.mu.Unlock()
	return len(e.regs.spans)
}
