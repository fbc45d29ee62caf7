package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Extract writes img's flattened filesystem (layers applied in order, whiteouts honoured) into dir.
// With keepOwner, files get the image's uid/gid, as a container runtime would give them; that needs root.
// Entries that would land outside dir are refused: an image is untrusted input.
func Extract(img v1.Image, dir string, keepOwner bool) (err error) {
	rc := mutate.Extract(img)
	defer func() {
		if cerr := rc.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return extractTar(rc, dir, keepOwner)
}

type dirMode struct {
	path string
	mode os.FileMode
}

func extractTar(r io.Reader, dir string, keepOwner bool) error {
	tr := tar.NewReader(r)
	// Directory modes are applied last, so a read-only directory does not stop its own files.
	var dirs []dirMode
	// Symlinks written so far: nothing may be written through one, or a hostile image could reach
	// files outside dir.
	symlinks := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read image filesystem: %w", err)
		}
		target, err := within(dir, hdr.Name)
		if err != nil {
			return err
		}
		for p := target; len(p) > len(dir); p = filepath.Dir(p) {
			if symlinks[p] {
				return fmt.Errorf("image entry %q lies beneath a symlink; refusing to follow it", hdr.Name)
			}
		}
		if hdr.Typeflag == tar.TypeSymlink {
			symlinks[target] = true
		}
		mode := hdr.FileInfo().Mode()
		if err := extractEntry(tr, hdr, dir, target); err != nil {
			return err
		}
		if keepOwner {
			if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
				return fmt.Errorf("set owner of %s: %w", target, err)
			}
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			dirs = append(dirs, dirMode{target, mode & (os.ModePerm | os.ModeSticky | os.ModeSetgid | os.ModeSetuid)})
		case tar.TypeReg:
			// chmod after write: the umask narrows the mode OpenFile creates with.
			if err := os.Chmod(target, mode&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
				return fmt.Errorf("set mode of %s: %w", target, err)
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			return fmt.Errorf("set mode of %s: %w", dirs[i].path, err)
		}
	}
	return nil
}

func extractEntry(tr *tar.Reader, hdr *tar.Header, dir, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("extract %s: %w", hdr.Name, err)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("extract %s: %w", hdr.Name, err)
		}
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("extract %s: %w", hdr.Name, err)
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("extract %s: %w", hdr.Name, err)
		}
	case tar.TypeSymlink:
		// A symlink's target is resolved inside the container's root, never on this machine, so it
		// is written as is; nothing here follows it.
		if err := os.Symlink(hdr.Linkname, target); err != nil {
			return fmt.Errorf("extract %s: %w", hdr.Name, err)
		}
	case tar.TypeLink:
		src, err := within(dir, hdr.Linkname)
		if err != nil {
			return err
		}
		if err := os.Link(src, target); err != nil {
			return fmt.Errorf("extract %s: %w", hdr.Name, err)
		}
	default:
		return fmt.Errorf("extract %s: unsupported tar entry type %q", hdr.Name, hdr.Typeflag)
	}
	return nil
}

// within maps an image path to its place under dir, refusing paths that climb out of it.
func within(dir, name string) (string, error) {
	rel := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(rel) {
		rel = strings.TrimPrefix(rel, string(filepath.Separator))
	}
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("image entry %q points outside the extraction directory", name)
	}
	return filepath.Join(dir, rel), nil
}
