package images

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpmPinMatchesRootModule guards "the cache is served by the operator-registry that built it":
// the root module (whose pkg/cache BuildCatalogImage links), the opm tools module, the opm binary
// in bin/ and catalog.Dockerfile's opm tag must all name one version.
func TestOpmPinMatchesRootModule(t *testing.T) {
	root := repoRoot(t)
	rootVersion, err := ModuleVersion(filepath.Join(root, "go.mod"), RegistryModule)
	if err != nil {
		t.Fatal(err)
	}
	opmVersion, err := ModuleVersion(filepath.Join(root, "operator", "tools", "opm", "go.mod"), RegistryModule)
	if err != nil {
		t.Fatal(err)
	}
	if opmVersion != rootVersion {
		t.Errorf("operator/tools/opm/go.mod pins %s %s, go.mod %s: set one version in both", RegistryModule, opmVersion, rootVersion)
	}
	linked, err := LinkedRegistryVersion()
	if err != nil || linked != rootVersion {
		t.Errorf("linked operator-registry %q (%v), go.mod %s", linked, err, rootVersion)
	}
	bi, err := buildinfo.ReadFile(opmBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if v := registryVersion(bi); v != rootVersion {
		t.Errorf("bin/opm is built from operator-registry %q, go.mod pins %s: run make tools", v, rootVersion)
	}
	data, err := os.ReadFile(filepath.Join(root, "catalog.Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "FROM "+OpmImage+":"+rootVersion+"\n") {
		t.Errorf("catalog.Dockerfile is not FROM %s:%s", OpmImage, rootVersion)
	}
}

func TestModuleVersion(t *testing.T) {
	cases := []struct {
		name, gomod, want, wantErr string
	}{
		{"block", "module m\n\nrequire (\n\tgithub.com/operator-framework/operator-registry v1.65.0 // indirect\n\tx.io/y v1.0.0\n)\n", "v1.65.0", ""},
		{"one line", "module m\nrequire github.com/operator-framework/operator-registry v1.2.3\n", "v1.2.3", ""},
		{"absent", "module m\nrequire x.io/y v1.0.0\n", "", "does not require"},
		{"similar name", "module m\nrequire github.com/operator-framework/operator-registry-extra v9.9.9\n", "", "does not require"},
		{"replaced", "module m\nrequire github.com/operator-framework/operator-registry v1.65.0\nreplace github.com/operator-framework/operator-registry => ../fork\n", "", "replaces"},
		{"replaced in block", "module m\nrequire github.com/operator-framework/operator-registry v1.65.0\nreplace (\n\tgithub.com/operator-framework/operator-registry v1.65.0 => x.io/fork v1.0.0\n)\n", "", "replaces"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "go.mod")
			if err := os.WriteFile(file, []byte(tc.gomod), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ModuleVersion(file, RegistryModule)
			if got != tc.want || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %q, %v; want %q, error containing %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
