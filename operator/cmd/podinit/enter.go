package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// enterAndExec chroots into the container's root, takes its identity and execs argv with its
// environment. It returns only on failure.
func enterAndExec(spec *podruntime.InitSpec, argv []string) error {
	c := spec.Container
	if len(argv) == 0 {
		argv = []string{c.ImagePath} // no command and no entrypoint: the image's binary
	}
	if err := unix.Chroot(spec.RootDir); err != nil {
		return fmt.Errorf("chroot %s: %w", spec.RootDir, err)
	}
	wd := c.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	if err := setIdentity(c.UID, c.GID, c.Groups); err != nil {
		return err
	}
	if err := armDeathSignal(spec.ParentPID); err != nil {
		return err
	}
	path, err := lookPath("/", wd, argv[0], envValue(c.Env, "PATH"))
	if err != nil {
		return err
	}
	unix.Umask(0o022) // buildRoot cleared it; this is what runtimes give containers
	if err := unix.Exec(path, argv, c.Env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil // not reached
}

// setIdentity switches to the container's user and groups, all threads at once (syscall's setters do
// that), groups first while we may still change them.
func setIdentity(uid, gid uint32, groups []uint32) error {
	gids := make([]int, len(groups))
	for i, g := range groups {
		gids[i] = int(g)
	}
	if err := syscall.Setgroups(gids); err != nil {
		return fmt.Errorf("setgroups %v: %w", groups, err)
	}
	if err := syscall.Setgid(int(gid)); err != nil {
		return fmt.Errorf("setgid %d: %w", gid, err)
	}
	if err := syscall.Setuid(int(uid)); err != nil {
		return fmt.Errorf("setuid %d: %w", uid, err)
	}
	return nil
}

// armDeathSignal asks for SIGKILL when the runtime dies. The kernel clears this setting when credentials
// change, so the runtime's own Pdeathsig no longer holds after setIdentity. If the runtime died before we
// re-armed it, we have been re-parented and must not start the container at all.
func armDeathSignal(parent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("set parent-death signal: %w", err)
	}
	if ppid := os.Getppid(); ppid != parent {
		return fmt.Errorf("runtime (pid %d) is gone, parent is now %d", parent, ppid)
	}
	return nil
}

// notFoundError is a command that is not in the root: exit code 127, as a shell would.
type notFoundError struct{ name, why string }

func (e *notFoundError) Error() string { return fmt.Sprintf("%q: %s", e.name, e.why) }

// lookPath resolves a command as container runtimes do: a name with a slash is taken as is (relative
// to the working directory wd), a bare name is searched in the container's PATH. root is "/" once
// chrooted; tests pass a directory. The result is valid inside the root, with wd as working directory.
func lookPath(root, wd, name, pathEnv string) (string, error) {
	inRoot := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		return filepath.Join(root, p)
	}
	if strings.Contains(name, "/") {
		if err := checkExecutable(inRoot(name)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", &notFoundError{name, "no such file in the container"}
			}
			return "", fmt.Errorf("%q: %w", name, err)
		}
		return name, nil
	}
	for _, dir := range filepath.SplitList(pathEnv) {
		if dir == "" {
			dir = "."
		}
		candidate := filepath.Join(dir, name)
		if checkExecutable(inRoot(candidate)) == nil {
			return candidate, nil
		}
	}
	return "", &notFoundError{name, "executable file not found in $PATH (" + pathEnv + ")"}
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable: %w", path, unix.EACCES)
	}
	return nil
}

// envValue returns KEY's value from a KEY=value list; the last one wins, as in execve.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
