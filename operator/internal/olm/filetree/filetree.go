// Package filetree writes and compares generated directory trees (bundle/, catalog/): a map of relative
// paths to contents, written atomically so a failed generation never leaves half a tree behind.
package filetree

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Files maps paths relative to the tree's root to their contents.
type Files map[string][]byte

// Names lists the paths in order.
func (f Files) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Write replaces dir with exactly these files: stale files from an older generation are removed.
func (f Files) Write(dir string) (err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+"-")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); err == nil && rmErr != nil {
			err = rmErr
		}
	}()
	for _, name := range f.Names() {
		path := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f[name], 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// Same reports how dir differs from the files, both ways; nil when identical.
func (f Files) Same(dir string) error {
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		want, ok := f[rel]
		if !ok {
			return fmt.Errorf("%s is not generated", path)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if string(got) != string(want) {
			return fmt.Errorf("%s changed", path)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	if seen != len(f) {
		return fmt.Errorf("%d generated files are missing from %s", len(f)-seen, dir)
	}
	return nil
}
