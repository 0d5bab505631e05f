//go:build fabric

package fabric

import (
	"strings"
	"testing"
)

// TestRegCheck checks the checker that the registration tests rely on:
// a buffer inside its registration passes, and one reaching past it, one under
// another registration's descriptor and one without a descriptor do not;
// injected data needs none.
func TestRegCheck(t *testing.T) {
	r := newRegCheck()
	// C memory, which does not move (a Go stack would, and the checker
	// keeps addresses: it sees only C buffers and pinned ones).
	ca, cb, cbig := newCbuf(64), newCbuf(64), newCbuf(128)
	defer ca.free()
	defer cb.free()
	defer cbig.free()
	a, b, big := ca.b, cb.b, cbig.b
	r.add(a[:32], 1)
	r.add(b, 2)
	r.check("in", a[8:16], 1, false)
	r.check("whole", b, 2, false)
	r.check("injected", a, 0, true)
	r.check("its end", a[24:32], 1, false)
	if n, what := r.failures(); n != 0 {
		t.Fatalf("%d failures, first %s", n, what)
	}
	r.check("other's", a[:8], 2, false)
	r.check("none", b, 0, false)
	r.check("past the end", a[24:40], 1, false)
	r.check("larger", big, 1, false)
	r.remove(1)
	r.check("after removal", a[:8], 1, false)
	n, what := r.failures()
	if n != 5 || !strings.HasPrefix(what, "other's of 8 bytes") {
		t.Fatalf("%d failures (want 5), first %q", n, what)
	}
	var nilCheck *regCheck
	nilCheck.check("unchecked", a, 0, false) // no checker: nothing happens
}
