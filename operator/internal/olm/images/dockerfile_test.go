package images

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dockerfileValues collects a Dockerfile's merged LABELs, COPY destinations and last ENTRYPOINT/CMD.
func dockerfileValues(t *testing.T, file string) (labelsOut map[string]string, copyDsts, entrypoint, cmd []string) {
	t.Helper()
	ins, err := parseDockerfile(file)
	if err != nil {
		t.Fatal(err)
	}
	labelsOut = map[string]string{}
	for _, in := range ins {
		switch in.cmd {
		case "LABEL":
			l, err := labels(in.args)
			if err != nil {
				t.Fatalf("%s:%d: %v", file, in.line, err)
			}
			for k, v := range l {
				labelsOut[k] = v
			}
		case "COPY", "ADD":
			_, dst, err := copySpec(in.args)
			if err != nil {
				t.Fatal(err)
			}
			copyDsts = append(copyDsts, strings.Trim(dst, "/"))
		case "ENTRYPOINT":
			entrypoint, _ = execForm(in.args)
		case "CMD":
			cmd, _ = execForm(in.args)
		}
	}
	return labelsOut, copyDsts, entrypoint, cmd
}

// TestDockerfilesMatchBuilders checks the repository's Dockerfiles against the images the Go builders
// make: the fixture bundle has the annotations the real one has, so bundle.Dockerfile must match it.
func TestDockerfilesMatchBuilders(t *testing.T) {
	root := repoRoot(t)
	bundleFile, catalogFile := filepath.Join(root, "bundle.Dockerfile"), filepath.Join(root, "catalog.Dockerfile")
	if err := checkBundleDockerfile(bundleFile, fixtureBundle(t), "bundle"); err != nil {
		t.Errorf("bundle.Dockerfile against the fixture bundle:\n%v", err)
	}
	version, err := ModuleVersion(filepath.Join(root, "go.mod"), RegistryModule)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkCatalogDockerfile(catalogFile, "catalog", version); err != nil {
		t.Errorf("catalog.Dockerfile:\n%v", err)
	}

	// And directly against built images, so a mistake shared by the checker and a builder still shows.
	bundleImg, err := BuildBundleImage(fixtureBundle(t))
	if err != nil {
		t.Fatal(err)
	}
	l, dsts, _, _ := dockerfileValues(t, bundleFile)
	if got := config(t, bundleImg).Config.Labels; !mapsEqual(got, l) {
		t.Errorf("bundle.Dockerfile LABELs %v, bundle image labels %v", l, got)
	}
	var tops []string
	for k := range imageFiles(t, bundleImg) {
		if k == "manifests" || k == "metadata" || k == "tests/scorecard" {
			tops = append(tops, k)
		}
	}
	slices.Sort(tops)
	slices.Sort(dsts)
	if !slices.Equal(dsts, tops) || len(dsts) != 3 {
		t.Errorf("bundle.Dockerfile copies to %q, the bundle image has %q", dsts, tops)
	}

	_, catalogImg := fixtureCatalogImage(t)
	c := config(t, catalogImg).Config
	l, dsts, entrypoint, cmd := dockerfileValues(t, catalogFile)
	if !mapsEqual(l, c.Labels) || !slices.Equal(dsts, []string{"configs"}) ||
		!slices.Equal(entrypoint, c.Entrypoint) || !slices.Equal(cmd, c.Cmd) {
		t.Errorf("catalog.Dockerfile labels %v copies %q entrypoint %q cmd %q; image labels %v entrypoint %q cmd %q",
			l, dsts, entrypoint, cmd, c.Labels, c.Entrypoint, c.Cmd)
	}
}

// TestDockerfileCheckFindsDrift breaks copies of the Dockerfiles one way each and expects the
// checker to name the problem and the line.
func TestDockerfileCheckFindsDrift(t *testing.T) {
	root := repoRoot(t)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	bundleDF, catalogDF := read("bundle.Dockerfile"), read("catalog.Dockerfile")
	cases := []struct {
		name, file, old, new, want string
	}{
		{"label value", "bundle", "channel.default.v1=stable", "channel.default.v1=candidate", "channel.default.v1=candidate differs"},
		{"label missing", "bundle", "LABEL operators.operatorframework.io.bundle.package.v1=etcd-operator\n", "", "package.v1=etcd-operator is missing"},
		{"copy destination", "bundle", "COPY bundle/metadata /metadata/", "COPY bundle/metadata /meta/", "bundle/metadata -> /meta/"},
		{"bundle base", "bundle", "FROM scratch", "FROM busybox", "FROM busybox"},
		{"opm tag", "catalog", "opm:v1.65.0", "opm:latest", "opm:latest, want quay.io/operator-framework/opm:v1.65.0"},
		{"configs path", "catalog", "ADD catalog /configs", "ADD catalog /catalog", "ADD catalog /catalog"},
		{"shell-form cmd", "catalog", `CMD ["serve", "/configs", "--cache-dir=/tmp/cache", "--cache-enforce-integrity"]`, "CMD serve /configs", "not the exec"},
		{"cmd drift", "catalog", `, "--cache-enforce-integrity"]`, "]", "CMD"},
		{"catalog never added", "catalog", "ADD catalog /configs\n", "", "RUN comes before the catalog is added"},
		{"configs label", "catalog", "index.configs.v1=/configs", "index.configs.v1=/cfg", "index.configs.v1=/cfg, want /configs"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := map[string]string{"bundle": bundleDF, "catalog": catalogDF}[tc.file]
			broken := strings.Replace(src, tc.old, tc.new, 1)
			if broken == src {
				t.Fatalf("%s.Dockerfile has no %q to break", tc.file, tc.old)
			}
			file := filepath.Join(t.TempDir(), tc.file+".Dockerfile")
			if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.file == "bundle" {
				err = checkBundleDockerfile(file, fixtureBundle(t), "bundle")
			} else {
				err = checkCatalogDockerfile(file, "catalog", "v1.65.0")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), file) {
				t.Errorf("got %v, want an error naming %s and containing %q", err, file, tc.want)
			}
		})
	}
}

func TestParseLabelsAndWords(t *testing.T) {
	got, err := labels(`a=1 "b c"="d e" f='g h' i=j\ k`)
	want := map[string]string{"a": "1", "b c": "d e", "f": "g h", "i": "j k"}
	if err != nil || !mapsEqual(got, want) {
		t.Errorf("labels: %v (%v), want %v", got, err, want)
	}
	if got, err := labels("legacy some value"); err != nil || got["legacy"] != "some value" {
		t.Errorf("legacy LABEL: %v (%v)", got, err)
	}
	if _, err := labels(`a="unterminated`); err == nil {
		t.Error("an unterminated quote parsed")
	}
}
