package node

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// fileData is one file of a configMap, secret, downwardAPI or projected volume.
type fileData struct {
	data []byte
	mode os.FileMode
}

const dataLink = "..data"

// writeAtomic makes dir hold exactly files, the way the kubelet does, so a container never reads a mix
// of old and new contents: the files go into a fresh hidden directory, the ..data symlink is switched
// to it with one rename, and each top-level name is a symlink through ..data. gid >= 0 makes the files
// group-owned by gid and group-readable (fsGroup). It reports whether anything changed.
func writeAtomic(dir string, files map[string]fileData, gid int) (bool, error) {
	for rel := range files {
		if rel == "" || filepath.IsAbs(rel) || slices.Contains(strings.Split(rel, "/"), "..") ||
			strings.HasPrefix(rel, "..") {
			return false, fmt.Errorf("invalid file path %q in volume", rel)
		}
	}
	if sameContents(dir, files, gid) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	version := ".." + time.Now().Format("2006_01_02_15_04_05.000000000")
	vdir := filepath.Join(dir, version)
	for rel, f := range files {
		full := filepath.Join(vdir, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		mode := effectiveMode(f.mode, gid)
		if err := os.WriteFile(full, f.data, mode); err != nil {
			return false, err
		}
		if err := os.Chmod(full, mode); err != nil { // WriteFile's mode is subject to the umask
			return false, err
		}
		if gid >= 0 {
			if err := os.Chown(full, 0, gid); err != nil {
				return false, err
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}
	return true, tidyVolumeDir(dir, version, files)
}

func effectiveMode(mode os.FileMode, gid int) os.FileMode {
	if mode == 0 {
		mode = 0o644
	}
	if gid >= 0 {
		mode |= 0o040
	}
	return mode & fs.ModePerm
}

// tidyVolumeDir adds the top-level links for the current files and removes old versions and links to
// files that are gone.
func tidyVolumeDir(dir, version string, files map[string]fileData) error {
	top := map[string]bool{}
	for rel := range files {
		top[strings.SplitN(rel, "/", 2)[0]] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataLink || name == version || top[name]:
		case strings.HasPrefix(name, ".."):
			errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
		case e.Type()&fs.ModeSymlink != 0:
			errs = append(errs, os.Remove(filepath.Join(dir, name)))
		}
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, os.Symlink(filepath.Join(dataLink, name), link))
		}
	}
	return errors.Join(errs...)
}

// sameContents reports whether dir's current version holds exactly files, with the same modes.
func sameContents(dir string, files map[string]fileData, gid int) bool {
	data := filepath.Join(dir, dataLink)
	count := 0
	err := filepath.WalkDir(data+"/", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(data, p)
		f, ok := files[rel]
		info, ierr := d.Info()
		if !ok || ierr != nil || info.Mode().Perm() != effectiveMode(f.mode, gid) {
			return errors.New("differs")
		}
		got, rerr := os.ReadFile(p)
		if rerr != nil || !bytes.Equal(got, f.data) {
			return errors.New("differs")
		}
		count++
		return nil
	})
	return err == nil && count == len(files)
}
