package main

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// Building and entering a root needs namespaces and root; podruntime's tests do that end to end. These
// tests cover the parts that decide what happens, on plain directories.

func TestLookPath(t *testing.T) {
	root := t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{
		{"usr/local/bin/etcd", 0o755},
		{"bin/etcd", 0o755},
		{"bin/noexec", 0o644},
		{"work/tool", 0o755},
	} {
		p := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, wd, arg, path string
		want                string
		notFound            bool
	}{
		{name: "first in PATH wins", wd: "/", arg: "etcd", path: "/usr/local/bin:/bin", want: "/usr/local/bin/etcd"},
		{name: "PATH order", wd: "/", arg: "etcd", path: "/bin:/usr/local/bin", want: "/bin/etcd"},
		{name: "not executable is skipped", wd: "/", arg: "noexec", path: "/bin", notFound: true},
		{name: "absent", wd: "/", arg: "sh", path: "/usr/local/bin:/bin", notFound: true},
		{name: "absolute taken as is", wd: "/", arg: "/bin/etcd", path: "", want: "/bin/etcd"},
		{name: "absolute absent", wd: "/", arg: "/bin/sh", path: "/bin", notFound: true},
		{name: "relative to the working directory", wd: "/work", arg: "./tool", path: "", want: "./tool"},
		{name: "empty PATH entry is the working directory", wd: "/work", arg: "tool", path: ":/bin", want: "tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookPath(root, tc.wd, tc.arg, tc.path)
			var nf *notFoundError
			if tc.notFound {
				if !errors.As(err, &nf) {
					t.Fatalf("lookPath = %q, %v; want not found", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("lookPath = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestSortMounts(t *testing.T) {
	in := []podruntime.Mount{
		{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
		{ContainerPath: "/etc/hosts"},
		{ContainerPath: "/var"},
		{ContainerPath: "/data/"},
		{ContainerPath: "/etc/resolv.conf"},
	}
	var got []string
	for _, m := range sortMounts(in) {
		got = append(got, m.ContainerPath)
	}
	want := []string{"/var", "/data/", "/etc/hosts", "/etc/resolv.conf", "/var/run/secrets/kubernetes.io/serviceaccount"}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestRootStaysInside: symbolic links in the tree (a volume can hold any) never lead podinit to create
// or write anything outside the root.
func TestRootStaysInside(t *testing.T) {
	base := t.TempDir()
	rootPath, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	victim := filepath.Join(outside, "victim")
	for _, err := range []error{
		os.MkdirAll(filepath.Join(rootPath, "etc"), 0o755), os.MkdirAll(outside, 0o755),
		os.WriteFile(victim, []byte("untouched"), 0o644),
		os.Symlink("../../../../../../"+outside, filepath.Join(rootPath, "dotdot")),
		os.Symlink(outside, filepath.Join(rootPath, "absolute")),
		os.Symlink(victim, filepath.Join(rootPath, "etc", "passwd")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	r, err := openRoot(rootPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()

	_ = r.mkdirAll("/dotdot/made", 0o755)
	_ = r.mkdirAll("/absolute/made", 0o755)
	_ = r.mountPoint("/absolute/file", false)
	_ = r.writeFile("/etc/passwd", []byte("overwritten"), 0o644)
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("created outside the root: %v", entries)
	}
	if data, _ := os.ReadFile(victim); string(data) != "untouched" {
		t.Errorf("wrote through a symbolic link out of the root: %q", data)
	}

	// Inside the root the same calls work, links resolved against the root.
	if err := r.mkdirAll("/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/a/b", filepath.Join(rootPath, "link")); err != nil {
		t.Fatal(err)
	}
	if err := r.writeFile("/link/c/file", []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(rootPath, "a/b/c/file")); err != nil || string(data) != "ok" {
		t.Fatalf("file through an in-root link: %q, %v", data, err)
	}
}

func TestWriteEtc(t *testing.T) {
	rootPath := t.TempDir()
	r, err := openRoot(rootPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	spec := &podruntime.InitSpec{
		Hostname:  "etcd-0",
		IP:        netip.MustParseAddr("10.244.1.5"),
		Container: podruntime.ContainerSpec{UID: 1000, GID: 2000, Groups: []uint32{3000, 2000, 0}},
	}
	if err := r.writeEtc(spec); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(rootPath, "etc", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for file, want := range map[string][]string{
		"passwd": {"root:x:0:0:", "user1000:x:1000:2000:"},
		"group":  {"root:x:0:\n", "group2000:x:2000:\n", "group3000:x:3000:\n"},
		"hosts":  {"127.0.0.1\tlocalhost\n", "10.244.1.5\tetcd-0\n"},
	} {
		got := read(file)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("/etc/%s lacks %q:\n%s", file, w, got)
			}
		}
	}
	if n := strings.Count(read("group"), "group2000"); n != 1 {
		t.Errorf("group 2000 listed %d times", n)
	}
}
