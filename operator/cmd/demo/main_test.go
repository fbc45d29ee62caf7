package main

import (
	"os"
	"testing"
)

// make demo waits for Ctrl-C only on a terminal: /dev/null and pipes (CI, scripts) are not terminals,
// though /dev/null is a character device.
func TestIsTerminalRejectsDevNullAndPipes(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = null.Close() }()
	if isTerminal(null) {
		t.Error("/dev/null taken for a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close(); _ = w.Close() }()
	if isTerminal(r) {
		t.Error("a pipe taken for a terminal")
	}
}
