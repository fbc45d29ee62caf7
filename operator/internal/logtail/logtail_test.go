package logtail_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/quorumkit/etcd-operator/operator/internal/logtail"
)

func TestLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		n, maxBytes int
		want        []string
	}{
		{2, 0, []string{"b", "c"}},
		{9, 0, []string{"a", "b", "c"}},
		{9, 4, []string{"", "c"}}, // the last 4 bytes are "\nc\n\n"
	} {
		got, err := logtail.Lines(path, tt.n, tt.maxBytes)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("Lines(%d, %d) = %q, %v; want %q", tt.n, tt.maxBytes, got, err, tt.want)
		}
	}
	if _, err := logtail.Lines(filepath.Join(t.TempDir(), "missing"), 1, 0); err == nil {
		t.Error("a missing file gave no error")
	}
}
