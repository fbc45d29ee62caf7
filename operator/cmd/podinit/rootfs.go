package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// hostCerts is shared read-only with every container so TLS clients find the machine's CA bundle where
// Go and most images look for it (ca-certificates.crt is a plain file there).
const hostCerts = "/etc/ssl/certs"

// buildRoot turns spec.RootDir, an empty directory, into the container's root, like a distroless image:
// no shell, no libraries, only the image's binary and what every container gets. Everything is mounted in
// this process's private mount namespace and disappears with it.
func buildRoot(spec *podruntime.InitSpec) error {
	c := spec.Container
	unix.Umask(0) // modes below are meant exactly
	// A mount of its own, so it can be made read-only as a whole (ReadOnlyRoot) without touching the
	// directory in other namespaces.
	if err := unix.Mount(spec.RootDir, spec.RootDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind root onto itself: %w", err)
	}
	r, err := openRoot(spec.RootDir) // after the bind: the descriptor must name the new mount
	if err != nil {
		return err
	}
	defer r.close()
	steps := []func() error{
		func() error { return r.mountKernelFS() },
		func() error { return r.mountDev() },
		func() error { return r.mkdirAll("/tmp", 0o1777) },
		func() error { return r.writeEtc(spec) },
		func() error { return r.mountHostCerts() },
		// The image's binary is part of the image: read-only like an image layer.
		func() error { return r.bind(c.Binary, c.ImagePath, true) },
		func() error { return r.mountVolumes(c.Mounts) },
	}
	if c.WorkingDir != "" { // runtimes create a missing working directory
		steps = append(steps, func() error { return r.mkdirAll(c.WorkingDir, 0o755) })
	}
	if c.ReadOnlyRoot { // last: everything above writes mount points into the root
		steps = append(steps, func() error { return r.remountReadOnly("/") })
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// mountKernelFS mounts /proc and a read-only /sys. Without a PID namespace /proc shows every process of
// the machine, as with hostPID; /sys shows the Pod's own network devices.
func (r *rootDir) mountKernelFS() error {
	if err := r.mkdirAll("/proc", 0o555); err != nil {
		return err
	}
	if err := r.mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return err
	}
	if err := r.mkdirAll("/sys", 0o555); err != nil {
		return err
	}
	return r.mount("sysfs", "/sys", "sysfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// mountDev gives the container a /dev of its own with only the harmless devices, bound from the host's,
// instead of the host's whole /dev (its disks among them).
func (r *rootDir) mountDev() error {
	if err := r.mkdirAll("/dev", 0o755); err != nil {
		return err
	}
	if err := r.mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=1m"); err != nil {
		return err
	}
	for _, dev := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if _, err := os.Stat("/dev/" + dev); errors.Is(err, os.ErrNotExist) {
			continue // a minimal host without it; programs cope
		}
		if err := r.bind("/dev/"+dev, "/dev/"+dev, false); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := r.symlink(target, "/dev/"+name); err != nil {
			return err
		}
	}
	if err := r.mkdirAll("/dev/shm", 0o1777); err != nil {
		return err
	}
	return r.mount("shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m")
}

// writeEtc writes the files every image has: users and groups, so programs that look up their user
// find it, and a default /etc/hosts. The Pod's own /etc/hosts and /etc/resolv.conf, when given, are
// mounts over these.
func (r *rootDir) writeEtc(spec *podruntime.InitSpec) error {
	c := spec.Container
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
	if c.UID != 0 && c.UID != 65534 {
		passwd += fmt.Sprintf("user%d:x:%d:%d:user%d:/:/sbin/nologin\n", c.UID, c.UID, c.GID, c.UID)
	}
	group := "root:x:0:\nnobody:x:65534:\n"
	for _, gid := range slices.Compact(slices.Sorted(slices.Values(append([]uint32{c.GID}, c.Groups...)))) {
		if gid != 0 && gid != 65534 {
			group += fmt.Sprintf("group%d:x:%d:\n", gid, gid)
		}
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if spec.IP.IsValid() {
		hosts += fmt.Sprintf("%s\t%s\n", spec.IP, spec.Hostname)
	}
	for path, data := range map[string]string{"/etc/passwd": passwd, "/etc/group": group, "/etc/hosts": hosts} {
		if err := r.writeFile(path, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (r *rootDir) mountHostCerts() error {
	if info, err := os.Stat(hostCerts); err != nil || !info.IsDir() {
		return nil // nothing to share; TLS clients then need their own CA
	}
	return r.bind(hostCerts, hostCerts, true)
}

// mountVolumes binds the Pod's mounts, parents before children (a volume at /var/run/secrets/x must go
// on top of one at /var, not under it).
func (r *rootDir) mountVolumes(mounts []podruntime.Mount) error {
	for _, m := range sortMounts(mounts) {
		if err := r.bind(m.HostPath, m.ContainerPath, m.ReadOnly); err != nil {
			return err
		}
	}
	return nil
}

// sortMounts orders mounts by the depth of their container path, keeping the given order among equals.
func sortMounts(mounts []podruntime.Mount) []podruntime.Mount {
	out := slices.Clone(mounts)
	depth := func(m podruntime.Mount) int { return strings.Count(filepath.Clean(m.ContainerPath), "/") }
	slices.SortStableFunc(out, func(a, b podruntime.Mount) int { return depth(a) - depth(b) })
	return out
}
