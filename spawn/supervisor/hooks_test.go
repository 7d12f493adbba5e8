package supervisor

import "testing"

// supervisor.log names the change a hook ran for; an agent's first state has none before it,
// which must not read "for  → running".
func TestTransitionString(t *testing.T) {
	for _, tc := range []struct {
		t    transition
		want string
	}{
		{transition{state: "running"}, "running"},
		{transition{prev: "running", state: "exited"}, "running → exited"},
	} {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.t, got, tc.want)
		}
	}
}
