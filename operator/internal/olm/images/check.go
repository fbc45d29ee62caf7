package images

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// OpmImage is the upstream opm image catalog.Dockerfile builds on; its tag is the operator-registry
// version, which must be the one this module links (it built the cache format the image's opm reads).
const OpmImage = "quay.io/operator-framework/opm"

// CheckDockerfiles checks that bundle.Dockerfile and catalog.Dockerfile at repoRoot build what the Go
// builders of this package build, so the two ways of making the images cannot drift apart:
//   - bundle.Dockerfile: FROM scratch, LABELs equal to bundle/metadata/annotations.yaml, and COPYs of
//     exactly the directories BuildBundleImage puts in the image, to the same paths;
//   - catalog.Dockerfile: FROM the opm image tagged with go.mod's operator-registry version, the catalog
//     ADDed to /configs, the cache built by RUN opm serve --cache-only, and ENTRYPOINT, CMD and the
//     configs label equal to BuildCatalogImage's;
//   - operator/tools/opm/go.mod pins the same operator-registry version as go.mod.
//
// Every problem is reported, each with its file and line.
func CheckDockerfiles(repoRoot string) error {
	version, err := ModuleVersion(filepath.Join(repoRoot, "go.mod"), RegistryModule)
	if err != nil {
		return err
	}
	var errs []error
	if opmVersion, err := ModuleVersion(filepath.Join(repoRoot, "operator", "tools", "opm", "go.mod"), RegistryModule); err != nil {
		errs = append(errs, err)
	} else if opmVersion != version {
		errs = append(errs, fmt.Errorf("operator/tools/opm/go.mod pins %s %s but go.mod has %s: opm must serve the cache "+
			"format this module builds; set the same version in both and rebuild with make tools", RegistryModule, opmVersion, version))
	}
	errs = append(errs,
		checkBundleDockerfile(filepath.Join(repoRoot, "bundle.Dockerfile"), filepath.Join(repoRoot, "bundle"), "bundle"),
		checkCatalogDockerfile(filepath.Join(repoRoot, "catalog.Dockerfile"), "catalog", version))
	return errors.Join(errs...)
}

// checkBundleDockerfile checks file against the bundle in bundleDir, whose path relative to the
// build context is srcDir.
func checkBundleDockerfile(file, bundleDir, srcDir string) error {
	ins, err := parseDockerfile(file)
	if err != nil {
		return err
	}
	annotations, err := ReadAnnotations(bundleDir)
	if err != nil {
		return fmt.Errorf("check %s: %w", file, err)
	}
	paths, err := BundleImagePaths(bundleDir)
	if err != nil {
		return fmt.Errorf("check %s: %w", file, err)
	}
	d := &dockerfileErrors{file: file}
	got := map[string]string{}
	var copies []string
	for _, in := range ins {
		switch in.cmd {
		case "FROM":
			if in.args != "scratch" {
				d.add(in.line, "FROM %s: a bundle image is FROM scratch", in.args)
			}
		case "LABEL":
			l, err := labels(in.args)
			if err != nil {
				d.add(in.line, "%v", err)
			}
			for k, v := range l {
				got[k] = v
			}
		case "COPY", "ADD":
			srcs, dst, err := copySpec(in.args)
			if err != nil {
				d.add(in.line, "%v", err)
				continue
			}
			copies = append(copies, strings.Join(srcs, " ")+" -> "+dst)
		default:
			d.add(in.line, "%s: a bundle Dockerfile has only FROM, LABEL and COPY", in.cmd)
		}
	}
	for _, k := range sortedKeys(annotations, got) {
		want, inAnnotations := annotations[k]
		have, inDockerfile := got[k]
		switch {
		case !inDockerfile:
			d.add(0, "LABEL %s=%s is missing (it is in %s)", k, want, filepath.Join(bundleDir, AnnotationsFile))
		case !inAnnotations:
			d.add(0, "LABEL %s is not in %s: remove it or add it there", k, filepath.Join(bundleDir, AnnotationsFile))
		case want != have:
			d.add(0, "LABEL %s=%s differs from %s, which says %s", k, have, filepath.Join(bundleDir, AnnotationsFile), want)
		}
	}
	var want []string
	for _, p := range paths {
		want = append(want, path.Join(srcDir, p)+" -> /"+p+"/")
	}
	if !slices.Equal(copies, want) {
		d.add(0, "copies %q, but the bundle image holds %q (COPY <bundle dir>/<path> /<path>/ for each)", copies, want)
	}
	return d.err()
}

// checkCatalogDockerfile checks file against BuildCatalogImage's layout, the catalog being at srcDir
// in the build context and operator-registry at version.
func checkCatalogDockerfile(file, srcDir, version string) error {
	ins, err := parseDockerfile(file)
	if err != nil {
		return err
	}
	d := &dockerfileErrors{file: file}
	seen := map[string]int{}
	wantRun := []string{CatalogOpmPath, "serve", CatalogConfigsDir, "--cache-dir=" + CatalogCacheDir, "--cache-only"}
	for _, in := range ins {
		seen[in.cmd] = in.line
		switch in.cmd {
		case "FROM":
			if want := OpmImage + ":" + version; in.args != want {
				d.add(in.line, "FROM %s, want %s: the image's opm must read the cache format of %s %s", in.args, want, RegistryModule, version)
			}
		case "ADD", "COPY":
			srcs, dst, err := copySpec(in.args)
			if err != nil || !slices.Equal(srcs, []string{srcDir}) || strings.TrimSuffix(dst, "/") != CatalogConfigsDir {
				d.add(in.line, "%s %s, want %s %s %s", in.cmd, in.args, in.cmd, srcDir, CatalogConfigsDir)
			}
		case "RUN":
			d.wantExec(in, wantRun)
			if seen["ADD"]+seen["COPY"] == 0 {
				d.add(in.line, "RUN comes before the catalog is added: the cache must be built from it")
			}
		case "ENTRYPOINT":
			d.wantExec(in, CatalogEntrypoint())
		case "CMD":
			d.wantExec(in, CatalogCmd())
		case "LABEL":
			l, err := labels(in.args)
			if err != nil {
				d.add(in.line, "%v", err)
			} else if v, ok := l[ConfigsLabel]; ok && v != CatalogConfigsDir {
				d.add(in.line, "LABEL %s=%s, want %s", ConfigsLabel, v, CatalogConfigsDir)
			} else if ok {
				seen["configs label"] = in.line
			}
		default:
			d.add(in.line, "%s is not part of the catalog image BuildCatalogImage builds", in.cmd)
		}
	}
	d.wantSeen(seen, srcDir)
	return d.err()
}

// wantSeen reports the catalog Dockerfile instructions that never appeared.
func (d *dockerfileErrors) wantSeen(seen map[string]int, srcDir string) {
	for _, need := range []string{"FROM", "RUN", "ENTRYPOINT", "CMD", "configs label"} {
		if seen[need] == 0 {
			d.add(0, "%s is missing", need)
		}
	}
	if seen["ADD"]+seen["COPY"] == 0 {
		d.add(0, "ADD %s %s is missing", srcDir, CatalogConfigsDir)
	}
}

func (d *dockerfileErrors) wantExec(in instruction, want []string) {
	got, err := execForm(in.args)
	if err != nil {
		d.add(in.line, "%s %v", in.cmd, err)
	} else if !slices.Equal(got, want) {
		d.add(in.line, "%s %q, want %q", in.cmd, got, want)
	}
}

func sortedKeys(maps ...map[string]string) []string {
	set := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			set[k] = true
		}
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ModuleVersion returns the version of module that the go.mod file requires. A replace directive for
// it is an error: the version would then not say which code is built.
func ModuleVersion(gomod, module string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("read go.mod: %w", err)
	}
	defer func() { _ = f.Close() }()
	version := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		if len(fields) > 0 && (fields[0] == "require" || fields[0] == "replace") {
			fields = fields[1:] // a one-line directive, or the "(" of a block
		}
		switch {
		case len(fields) > 0 && fields[0] == module && slices.Contains(fields, "=>"):
			return "", fmt.Errorf("%s replaces %s: pin it with require only, so its version says what is built", gomod, module)
		case len(fields) == 2 && fields[0] == module:
			version = fields[1]
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s: %w", gomod, err)
	}
	if version == "" {
		return "", fmt.Errorf("%s does not require %s", gomod, module)
	}
	return version, nil
}
