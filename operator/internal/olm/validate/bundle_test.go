package validate

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCommittedBundleIsValid(t *testing.T) {
	report, err := Bundle(filepath.Join("..", "..", "..", "..", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Err(); err != nil {
		t.Fatalf("%v:\n%v", err, report)
	}
}

// TestValidatorsCatchBrokenBundles breaks a copy of the bundle in ways OperatorHub refuses.
func TestValidatorsCatchBrokenBundles(t *testing.T) {
	tests := []struct {
		name, from, to, want string
	}{
		{"no display name", "  displayName: etcd Operator\n", "", "displayName"},
		{"bad capability", "capabilities: Seamless Upgrades", "capabilities: Whatever", "capabilities"},
		{"bad category", "categories: Database", "categories: Nonsense", "categories"},
		{"no maintainers", "  maintainers:\n  - email: maintainers@quorumkit.dev\n    name: quorumkit maintainers\n", "", "maintainers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "..", "..", "bundle"), dir).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			csv := filepath.Join(dir, "bundle", "manifests", "etcd-operator.clusterserviceversion.yaml")
			data, err := os.ReadFile(csv)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), tt.from) {
				t.Fatalf("the CSV no longer contains %q; update the test", tt.from)
			}
			if err := os.WriteFile(csv, []byte(strings.Replace(string(data), tt.from, tt.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			report, err := Bundle(filepath.Join(dir, "bundle"))
			if err != nil {
				t.Fatal(err)
			}
			if report.Err() == nil || !strings.Contains(strings.ToLower(errorsText(report)), strings.ToLower(tt.want)) {
				t.Fatalf("no error about %s:\n%v", tt.want, report)
			}
		})
	}
}

func errorsText(r Report) string {
	var b strings.Builder
	for _, f := range r {
		if f.Error {
			b.WriteString(f.String() + "\n")
		}
	}
	return b.String()
}

func TestKubeMinors(t *testing.T) {
	got, err := kubeMinors("1.33.0")
	if err != nil || strings.Join(got, ",") != "1.33,1.34,1.35" {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", "one", "2.0.0", "1.99.0"} {
		if _, err := kubeMinors(bad); err == nil || !strings.Contains(err.Error(), "minKubeVersion") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
