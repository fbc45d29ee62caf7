package node

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "$(A)", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "alpha"},
		{"x-$(A)-y", "x-alpha-y"},
		{"$(B)", "$(A)"}, // values are not expanded twice
		{"$(UNDEFINED)", "$(UNDEFINED)"},
		{"$$(A)", "$(A)"},
		{"$$$(A)", "$alpha"},
		{"$$", "$"},
		{"$A", "$A"},
		{"cost: 5$", "cost: 5$"},
		{"$(A", "$(A"},
		{"$()", "$()"},
		{"$(EMPTY)x", "x"},
		{"$(A)$(A)", "alphaalpha"},
	} {
		if got := expand(tc.in, lookup); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
