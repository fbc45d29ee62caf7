package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(data)
	}
	changed, err := writeAtomic(dir, map[string]fileData{"token": {data: []byte("t1"), mode: 0o600}, "sub/ca.crt": {data: []byte("ca")}}, -1)
	if err != nil || !changed {
		t.Fatalf("first write: %v %v", changed, err)
	}
	if read("token") != "t1" || read("sub/ca.crt") != "ca" {
		t.Fatalf("contents: %q %q", read("token"), read("sub/ca.crt"))
	}
	if info, err := os.Stat(filepath.Join(dir, "token")); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token mode: %v %v", info.Mode(), err)
	}
	if changed, err := writeAtomic(dir, map[string]fileData{"token": {data: []byte("t1"), mode: 0o600}, "sub/ca.crt": {data: []byte("ca")}}, -1); err != nil || changed {
		t.Fatalf("rewrite of the same contents: changed=%v err=%v", changed, err)
	}
	if changed, err := writeAtomic(dir, map[string]fileData{"token": {data: []byte("t2"), mode: 0o600}}, -1); err != nil || !changed {
		t.Fatalf("update: %v %v", changed, err)
	}
	if read("token") != "t2" || !strings.HasPrefix(read("sub/ca.crt"), "<") {
		t.Fatalf("after update: token %q, sub/ca.crt %q (should be gone)", read("token"), read("sub/ca.crt"))
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 { // ..<version>, ..data, token
		t.Fatalf("directory holds %q, want one version, ..data and token", names)
	}
	if _, err := writeAtomic(dir, map[string]fileData{"../escape": {data: []byte("x")}}, -1); err == nil {
		t.Fatal("a path leaving the volume was accepted")
	}
}
