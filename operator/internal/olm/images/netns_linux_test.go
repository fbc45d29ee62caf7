//go:build linux

package images

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// inNetns runs fn on an OS thread that has joined the network namespace of process pid. The thread
// is never unlocked: it ends with its goroutine instead of going back to the scheduler in the wrong
// namespace, so nothing else ever runs there.
func inNetns(pid int, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			errc <- err
			return
		}
		defer func() { _ = f.Close() }()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("join network namespace of %d: %w", pid, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// loopbackUp sets the loopback interface up in the calling thread's network namespace: a new
// namespace starts with it down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("get lo flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

// netnsDialer connects to 127.0.0.1:port inside the network namespace of pid. The socket is made and
// connected on a thread in that namespace, and a socket stays in the namespace it was made in, so
// the connection can then be used from any goroutine.
func netnsDialer(pid, port int) func(context.Context, string) (net.Conn, error) {
	return func(context.Context, string) (net.Conn, error) {
		var conn net.Conn
		err := inNetns(pid, func() error {
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("socket: %w", err)
			}
			f := os.NewFile(uintptr(fd), "netns-conn")
			defer func() { _ = f.Close() }() // net.FileConn holds its own duplicate
			if err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
				return fmt.Errorf("connect 127.0.0.1:%d in the namespace of %d: %w", port, pid, err)
			}
			conn, err = net.FileConn(f)
			return err
		})
		return conn, err
	}
}
