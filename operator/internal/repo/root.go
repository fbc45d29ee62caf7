// Package repo finds the repository's root, where bin/ and config/ live, for tests and development
// commands run from anywhere inside it.
package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// Module is this repository's module path.
const Module = "github.com/quorumkit/etcd-operator"

// Root walks up from the working directory (a test's package directory, or wherever a command was started)
// to the go.mod of Module.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module "+Module+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of module " + Module + " above the working directory")
		}
		dir = parent
	}
}
