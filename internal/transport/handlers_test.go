package transport

import "testing"

func TestHandlers(t *testing.T) {
	var h Handlers
	if h.AM(0) != nil || h.Notice() != nil || h.Failure() != nil || h.AM(MaxAMID) != nil {
		t.Fatal("zero Handlers holds a handler")
	}
	var got []string
	h.SetAMHandler(3, func(int, []byte, []byte) { got = append(got, "am") })
	h.SetNoticeHandler(func(int, Key, Notice) { got = append(got, "notice") })
	h.SetFailureHandler(func(int, error) { got = append(got, "failure") })
	if h.AM(2) != nil {
		t.Fatal("AMID 2 has a handler; only 3 was set")
	}
	h.AM(3)(0, nil, nil)
	h.Notice()(0, Key{}, Notice{})
	h.Failure()(0, nil)
	if len(got) != 3 || got[0] != "am" || got[1] != "notice" || got[2] != "failure" {
		t.Fatalf("handlers ran %v", got)
	}
	h.SetAMHandler(3, nil)
	h.SetNoticeHandler(nil)
	h.SetFailureHandler(nil)
	if h.AM(3) != nil || h.Notice() != nil || h.Failure() != nil {
		t.Fatal("a nil handler did not remove the one installed")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("SetAMHandler(MaxAMID) did not panic")
		}
	}()
	h.SetAMHandler(MaxAMID, func(int, []byte, []byte) {})
}
