// Command podinit turns a process that has just entered a Pod's network namespace and a fresh mount
// namespace into a container: it builds the container's root directory (the image's binary, /proc, /dev,
// /etc files, volumes), chroots into it, takes the container's user and groups and execs its command, so
// the pid podruntime tracks is the container's own. It is started by package
// operator/internal/localcluster/podruntime, never by hand:
//
//	podinit run SPEC              # via `ip netns exec`: build the root and exec the container
//	podinit exec SPEC -- ARGV...  # via `nsenter` into a running container: run ARGV there
//
// SPEC is a JSON podruntime.InitSpec.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// Exit codes when the command never ran, as shells and container runtimes use them.
const (
	exitSetup       = 128 // podinit itself failed
	exitNotRunnable = 126
	exitNotFound    = 127
)

func init() {
	// The parent-death signal is per thread and execve keeps only the calling thread's: the thread that
	// re-arms it must be the one that execs. Locking in init pins main to the main thread.
	runtime.LockOSThread()
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: podinit run SPEC | podinit exec SPEC -- ARGV...")
		os.Exit(2)
	}
	mode, specPath := os.Args[1], os.Args[2]
	var err error
	switch mode {
	case "run":
		err = runContainer(specPath)
	case "exec":
		argv := os.Args[3:]
		if len(argv) > 0 && argv[0] == "--" {
			argv = argv[1:]
		}
		err = execInContainer(specPath, argv)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	// Only failures return: on success the process is the container's command by now.
	os.Exit(report(err, mode == "run"))
}

// report tells why the command did not start on stderr (the container's log, or the exec's output) and,
// when running a container, on SyncFD for Sandbox.Start. It returns the exit code.
func report(err error, toSync bool) int {
	msg := fmt.Sprintf("podinit: %v\n", err)
	fmt.Fprint(os.Stderr, msg)
	if toSync {
		_, _ = unix.Write(podruntime.SyncFD, []byte(msg))
	}
	var nf *notFoundError
	switch {
	case errors.As(err, &nf):
		return exitNotFound
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.ENOEXEC):
		return exitNotRunnable
	}
	return exitSetup
}

func readSpec(path string) (*podruntime.InitSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var spec podruntime.InitSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if spec.RootDir == "" || spec.ParentPID <= 1 {
		return nil, fmt.Errorf("%s: RootDir and ParentPID are required", path)
	}
	return &spec, nil
}

// runContainer builds the root and execs the container's command.
func runContainer(specPath string) error {
	// The sync descriptor must not leak into the container: closing on exec is what tells the runtime
	// the exec happened. The first byte tells it podinit ran at all (ip may fail before exec'ing us).
	unix.CloseOnExec(podruntime.SyncFD)
	_, _ = unix.Write(podruntime.SyncFD, []byte{podruntime.SyncStarted})
	spec, err := readSpec(specPath)
	if err != nil {
		return err
	}
	// Nothing mounted from here on may propagate back to the machine's namespaces.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	if err := buildRoot(spec); err != nil {
		return fmt.Errorf("build root %s: %w", spec.RootDir, err)
	}
	return enterAndExec(spec, spec.Container.Argv)
}

// execInContainer runs argv in a running container, whose namespaces nsenter has already joined. The
// container's root is a chroot inside that mount namespace, still reachable at its host path.
func execInContainer(specPath string, argv []string) error {
	if len(argv) == 0 {
		return errors.New("exec: empty command")
	}
	spec, err := readSpec(specPath)
	if err != nil {
		return err
	}
	return enterAndExec(spec, argv)
}
