package registry

import (
	"strings"
	"testing"

	"github.com/narma-rma/narma/internal/transport"
)

// reset empties the registry for a test and restores it after.
func reset(t *testing.T) {
	mu.Lock()
	saved := byName
	byName = map[string]Transport{}
	mu.Unlock()
	t.Cleanup(func() {
		mu.Lock()
		byName = saved
		mu.Unlock()
	})
}

func TestRegister(t *testing.T) {
	reset(t)
	made := 0
	Register(Transport{Name: "b", Group: func(n int) ([]transport.Endpoint, error) {
		made = n
		return nil, nil
	}})
	Register(Transport{Name: "a"})
	if got := strings.Join(Names(nil), ","); got != "a,b" {
		t.Errorf("Names = %s, want a,b", got)
	}
	if got := strings.Join(Names(func(t Transport) bool { return t.Group != nil }), ","); got != "b" {
		t.Errorf("Names of those with Group = %s, want b", got)
	}
	if all := All(); len(all) != 2 || all[0].Name != "a" || all[1].Name != "b" {
		t.Errorf("All = %+v", all)
	}
	if _, err := Group("b", 3); err != nil || made != 3 {
		t.Errorf("Group(b, 3): %v, made %d", err, made)
	}
	for _, name := range []string{"a", "carrier-pigeon"} {
		_, err := Group(name, 2)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "want b") {
			t.Errorf("Group(%s): %v, want an error naming it and b", name, err)
		}
	}
	if _, ok := Lookup("a"); !ok {
		t.Error("Lookup(a) found nothing")
	}
	if _, ok := Lookup("c"); ok {
		t.Error("Lookup(c) found something")
	}
}

func TestRegisterTwice(t *testing.T) {
	reset(t)
	Register(Transport{Name: "x"})
	for _, bad := range []Transport{{Name: "x"}, {}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%+v) did not panic", bad)
				}
			}()
			Register(bad)
		}()
	}
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, "none registered"},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a or b"},
		{[]string{"a", "b", "c"}, "a, b or c"},
	} {
		if got := list(tc.names); got != tc.want {
			t.Errorf("list(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
}
