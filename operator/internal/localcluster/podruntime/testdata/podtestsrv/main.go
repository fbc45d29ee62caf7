// Command podtestsrv is the "image" of podruntime's tests: one static binary that serves, connects,
// reads, writes and reports who it is, so tests can observe a container from the inside. Commands may be
// chained with ";" as a separate argument; the first failure ends the program with exit code 1.
//
//	serve ADDR        answer every TCP connection with "hello from HOSTNAME uid=U" (runs until killed)
//	get ADDR|URL      print what a TCP server or an HTTP URL answers (2 s timeout)
//	write FILE TEXT   write TEXT to FILE
//	cat FILE          print FILE
//	id                print uid, gid, supplementary groups, hostname and working directory
//	sleep             block until killed
//	exit N            exit with code N
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	for len(args) > 0 {
		end := len(args)
		for i, a := range args {
			if a == ";" {
				end = i
				break
			}
		}
		if err := run(args[:end]); err != nil {
			fmt.Fprintln(os.Stderr, "podtestsrv:", err)
			os.Exit(1)
		}
		args = args[min(end+1, len(args)):]
	}
}

func run(cmd []string) error {
	if len(cmd) == 0 {
		return nil
	}
	arg := func(i int) string {
		if i < len(cmd) {
			return cmd[i]
		}
		return ""
	}
	switch cmd[0] {
	case "serve":
		return serve(arg(1))
	case "get":
		return get(arg(1))
	case "write":
		return os.WriteFile(arg(1), []byte(arg(2)), 0o644)
	case "cat":
		data, err := os.ReadFile(arg(1))
		_, _ = os.Stdout.Write(data)
		return err
	case "id":
		groups, _ := syscall.Getgroups()
		host, _ := os.Hostname()
		wd, _ := os.Getwd()
		fmt.Printf("uid=%d gid=%d groups=%v hostname=%s wd=%s\n", os.Getuid(), os.Getgid(), groups, host, wd)
		return nil
	case "sleep":
		for {
			time.Sleep(time.Hour) // a bare select{} would be reported as a deadlock
		}
	case "exit":
		n, err := strconv.Atoi(arg(1))
		if err != nil {
			return err
		}
		os.Exit(n)
	}
	return fmt.Errorf("unknown command %q", cmd[0])
}

func serve(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	fmt.Printf("serving on %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(c, "hello from %s uid=%d\n", host, os.Getuid())
		_ = c.Close()
	}
}

func get(target string) error {
	if strings.HasPrefix(target, "http://") {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(target)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		_, err = io.Copy(os.Stdout, resp.Body)
		return err
	}
	c, err := net.DialTimeout("tcp", target, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = io.Copy(os.Stdout, c)
	return err
}
