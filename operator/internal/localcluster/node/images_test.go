package node

import (
	"strings"
	"testing"
)

func TestDefaultImageTable(t *testing.T) {
	table, err := DefaultImageTable("/opt/bin")
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]Image{
		"quay.io/coreos/etcd:v3.6.7":             {Binary: "/opt/bin/etcd", Path: "/usr/local/bin/etcd", User: 0},
		"quay.io/coreos/etcd:v3.5.21":            {Binary: "/opt/bin/etcd-v3.5.21", Path: "/usr/local/bin/etcd", User: 0},
		"quay.io/quorumkit/etcd-operator:v0.1.0": {Binary: "/opt/bin/etcd-operator", Path: "/etcd-operator", User: 65532},
	} {
		got, ok := table.Lookup(ref)
		if !ok || got.Binary != want.Binary || got.Path != want.Path || got.User != want.User {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", ref, got, ok, want)
		}
	}
	if _, ok := table.Lookup("quay.io/coreos/etcd:v9.9.9"); ok {
		t.Error("an unlisted tag was found")
	}
	if !strings.Contains(notInTableMessage("x:1"), ImageTableFile) {
		t.Error("the not-in-table message does not name the table file")
	}
}

func TestImageTableDigests(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	table, err := ParseImageTable([]byte(`images:
- {image: "reg.example:5000/a/b@`+digest+`", binary: b, path: /b, user: 1}
- {image: "reg.example:5000/a/c:v1", binary: c, path: /c, user: 2}
`), "/bin")
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"reg.example:5000/a/b@" + digest:    "/bin/b",
		"reg.example:5000/a/b:v7@" + digest: "/bin/b", // tag and digest: the digest decides
		"reg.example:5000/a/c:v1@" + digest: "/bin/c", // listed by tag
	} {
		if img, ok := table.Lookup(ref); !ok || img.Binary != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", ref, img.Binary, ok, want)
		}
	}
	for _, ref := range []string{"reg.example:5000/a/b", "reg.example:5000/a/b:v7", "reg.example:5000/a/c@" + digest} {
		if _, ok := table.Lookup(ref); ok {
			t.Errorf("Lookup(%q) found an entry", ref)
		}
	}
}

func TestImageTableRejectsBadEntries(t *testing.T) {
	// The same shape with nothing wrong parses: the failures below are about what each case breaks.
	if _, err := ParseImageTable([]byte("images:\n- {image: a:1, binary: a, path: /a, user: 0}\n"), "/bin"); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for name, doc := range map[string]string{
		"unknown field":     "images:\n- {image: a:1, binary: a, path: /a, user: 0, usr: 1}\n",
		"binary with slash": "images:\n- {image: a:1, binary: ../a, path: /a, user: 0}\n",
		"relative path":     "images:\n- {image: a:1, binary: a, path: a, user: 0}\n",
		"missing user":      "images:\n- {image: a:1, binary: a, path: /a}\n",
		"negative user":     "images:\n- {image: a:1, binary: a, path: /a, user: -1}\n",
		"empty image":       "images:\n- {binary: a, path: /a, user: 0}\n",
		"duplicate":         "images:\n- {image: a:1, binary: a, path: /a, user: 0}\n- {image: a:1, binary: b, path: /b, user: 0}\n",
		"not yaml":          "images: [",
	} {
		if _, err := ParseImageTable([]byte(doc), "/bin"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
