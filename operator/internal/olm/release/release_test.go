package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `package: etcd-operator
defaultChannel: stable
operatorImage: quay.io/quorumkit/etcd-operator
bundleImage: quay.io/quorumkit/etcd-operator-bundle
catalogImage: quay.io/quorumkit/etcd-operator-catalog
releases:
- version: 0.1.0
  bundleImage: quay.io/quorumkit/etcd-operator-bundle:v0.1.0
  channels: [stable, candidate]
- version: 0.2.0
  bundleImage: quay.io/quorumkit/etcd-operator-bundle:v0.2.0
  channels: [candidate]
`

func load(t *testing.T, text string) (*Record, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "releases.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(path)
}

func TestLoadGood(t *testing.T) {
	r, err := load(t, good)
	if err != nil {
		t.Fatal(err)
	}
	if r.Latest().Version != "0.2.0" || r.SkipRange("0.2.0") != ">=0.1.0 <0.2.0" || r.SkipRange("0.1.0") != "" {
		t.Fatalf("latest/skipRange wrong: %+v", r)
	}
	if p, ok := r.Previous("0.2.0"); !ok || p.Version != "0.1.0" {
		t.Fatalf("previous of 0.2.0 = %+v", p)
	}
	if got := strings.Join(r.Channels(), ","); got != "candidate,stable" {
		t.Fatalf("channels = %s", got)
	}
	if r.CSVName("0.2.0") != "etcd-operator.v0.2.0" || r.OperatorImageRef("0.2.0") != "quay.io/quorumkit/etcd-operator:v0.2.0" {
		t.Fatal("names")
	}
}

func TestLoadBad(t *testing.T) {
	tests := []struct{ name, edit, want string }{
		{"unknown field", "package: etcd-operator\nextra: 1\n", `unknown field "extra"`},
		{"bad version", `- version: 0.2.0`, `version must be a semver such as 1.2.3`},
		{"order", `- version: 0.2.0`, `versions must increase down the list`},
		{"untagged bundle image", `bundleImage: quay.io/quorumkit/etcd-operator-bundle:v0.2.0`, `bundleImage "quay.io/quorumkit/etcd-operator-bundle" must be a tagged image reference`},
		{"tagged repository", `operatorImage: quay.io/quorumkit/etcd-operator`, `operatorImage "quay.io/quorumkit/etcd-operator:v1" must be an image repository without tag`},
		{"no channels", `  channels: [candidate]`, `channels is empty; list at least "stable"`},
		{"default channel unused", `defaultChannel: stable`, `defaultChannel "fast" has no release`},
	}
	replacements := map[string]string{
		"bad version":            "- version: v0.2",
		"order":                  "- version: 0.0.9",
		"untagged bundle image":  "bundleImage: quay.io/quorumkit/etcd-operator-bundle",
		"tagged repository":      "operatorImage: quay.io/quorumkit/etcd-operator:v1",
		"no channels":            "  channels: []",
		"default channel unused": "defaultChannel: fast",
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var text string
			if r, ok := replacements[tt.name]; ok {
				text = strings.Replace(good, tt.edit, r, 1)
			} else {
				text = strings.Replace(good, "package: etcd-operator\n", tt.edit, 1)
			}
			_, err := load(t, text)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), "releases.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestAddRefusesOlderVersion(t *testing.T) {
	r, err := load(t, good)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Add("0.1.5", []string{"stable"}); err == nil || !strings.Contains(err.Error(), "versions must increase") {
		t.Fatalf("adding an older release: %v", err)
	}
	if len(r.Releases) != 2 {
		t.Fatal("a refused release was kept")
	}
	if err := r.Add("0.3.0", []string{"stable"}); err != nil || r.Latest().BundleImage != "quay.io/quorumkit/etcd-operator-bundle:v0.3.0" {
		t.Fatalf("add 0.3.0: %v %+v", err, r.Latest())
	}
}

func TestSaveRoundTrips(t *testing.T) {
	r, err := load(t, good)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "out.yaml")
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil || len(again.Releases) != 2 || again.Releases[1].Channels[0] != "candidate" {
		t.Fatalf("round trip: %v %+v", err, again)
	}
}

// TestCommittedRecordIsInSaveFormat keeps config/releases.yaml byte-identical to what make release
// writes, so a release shows only the lines it adds.
func TestCommittedRecordIsInSaveFormat(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "config", "releases.yaml")
	r, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "releases.yaml")
	if err := r.Save(out); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(out)
	if string(a) != string(b) {
		t.Fatalf("config/releases.yaml is not in the format Save writes:\n%s", b)
	}
}
