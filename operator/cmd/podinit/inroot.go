package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// rootDir is the container's root tree, open as a directory. Every path given to its methods is
// resolved inside it by the kernel (openat2 with RESOLVE_IN_ROOT): a symbolic link in a volume that
// points at /etc leads to the root's /etc, never the machine's, so no mount point or file is ever created
// outside the root.
type rootDir struct {
	fd   int
	path string // host path, for messages
}

func openRoot(path string) (*rootDir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open root: %w", err)
	}
	return &rootDir{fd: fd, path: path}, nil
}

func (r *rootDir) close() { _ = unix.Close(r.fd) }

// open resolves path inside the root. Magic links (/proc/self/fd/...) are refused: they could point
// anywhere.
func (r *rootDir) open(path string, flags int, mode uint32) (int, error) {
	fd, err := unix.Openat2(r.fd, path, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return -1, fmt.Errorf("open %s in root: %w", path, err)
	}
	return fd, nil
}

// mkdirAll creates path and its missing parents inside the root. Existing components are kept
// whatever their mode.
func (r *rootDir) mkdirAll(path string, mode uint32) error {
	cur := "/"
	for part := range strings.SplitSeq(filepath.Clean("/"+path), "/") {
		if part == "" {
			continue
		}
		dir, err := r.open(cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(dir, part, mode)
		_ = unix.Close(dir)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("mkdir %s in root: %w", filepath.Join(cur, part), err)
		}
		cur = filepath.Join(cur, part)
	}
	fd, err := r.open(path, unix.O_PATH|unix.O_DIRECTORY, 0) // an existing non-directory fails here
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// writeFile creates (or truncates) a file inside the root, creating its directory.
func (r *rootDir) writeFile(path string, data []byte, mode uint32) error {
	if err := r.mkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fd, err := r.open(path, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, mode)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err != nil {
			return fmt.Errorf("write %s in root: %w", path, err)
		}
		data = data[n:]
	}
	return nil
}

// mountPoint creates path inside the root as a directory or an empty file, to mount on.
func (r *rootDir) mountPoint(path string, dir bool) error {
	if dir {
		return r.mkdirAll(path, 0o755)
	}
	if err := r.mkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fd, err := r.open(path, unix.O_CREAT|unix.O_RDONLY, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// mount mounts source (a file system type's source, or a host path for a bind mount) on path inside
// the root. The target is named through its descriptor, so the kernel mounts exactly what open
// resolved.
func (r *rootDir) mount(source, path, fstype string, flags uintptr, data string) error {
	fd, err := r.open(path, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Mount(source, procFD(fd), fstype, flags, data); err != nil {
		return fmt.Errorf("mount %s on %s (%s): %w", source, path, fstype, err)
	}
	return nil
}

// bind bind-mounts a host path at path inside the root, creating the mount point, read-only if asked.
func (r *rootDir) bind(hostPath, path string, readOnly bool) error {
	var st unix.Stat_t
	if err := unix.Stat(hostPath, &st); err != nil {
		return fmt.Errorf("bind source %s: %w", hostPath, err)
	}
	if err := r.mountPoint(path, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return err
	}
	if err := r.mount(hostPath, path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	if readOnly {
		return r.remountReadOnly(path)
	}
	return nil
}

// remountReadOnly makes the mount at path read-only, keeping its other flags (a bind mount of a nosuid
// file system stays nosuid). Only that mount changes; mounts below it keep their own mode.
func (r *rootDir) remountReadOnly(path string) error {
	// Opened anew: a descriptor taken before the mount would name the directory underneath it.
	fd, err := r.open(path, unix.O_PATH, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return fmt.Errorf("statfs %s in root: %w", path, err)
	}
	flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY)
	for st, ms := range map[int64]uintptr{
		unix.ST_NOSUID: unix.MS_NOSUID, unix.ST_NODEV: unix.MS_NODEV, unix.ST_NOEXEC: unix.MS_NOEXEC,
		unix.ST_NOATIME: unix.MS_NOATIME, unix.ST_NODIRATIME: unix.MS_NODIRATIME, unix.ST_RELATIME: unix.MS_RELATIME,
	} {
		if fs.Flags&st != 0 {
			flags |= ms
		}
	}
	if err := unix.Mount("", procFD(fd), "", flags, ""); err != nil {
		return fmt.Errorf("remount %s read-only: %w", path, err)
	}
	return nil
}

// symlink creates a symbolic link at path inside the root.
func (r *rootDir) symlink(target, path string) error {
	dir, err := r.open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(dir) }()
	if err := unix.Symlinkat(target, dir, filepath.Base(path)); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("symlink %s in root: %w", path, err)
	}
	return nil
}

func procFD(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }
