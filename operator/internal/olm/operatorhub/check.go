package operatorhub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/validate"
)

// Check validates a submission tree operators/<package>/ as the community pipeline does: the package
// name agrees across folder, CSV and annotations; each folder's name equals its CSV's version; every
// replaces names another version in the tree and not itself; no NetworkPolicy ships; and every version
// passes the bundle validators.
func Check(pkgDir string) error {
	pkg := filepath.Base(pkgDir)
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return fmt.Errorf("read %s: %w", pkgDir, err)
	}
	versions := map[string]string{} // folder -> CSV name
	replaces := map[string]string{} // folder -> replaces
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "catalog-templates" {
			continue
		}
		dir := filepath.Join(pkgDir, e.Name())
		b, err := manifests.GetBundleFromDir(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
			continue
		}
		csv := b.CSV
		switch {
		case b.Package != pkg:
			errs = append(errs, fmt.Errorf("%s: annotations name package %q but the folder is %q; they must agree", dir, b.Package, pkg))
		case !strings.HasPrefix(csv.Name, pkg+".v"):
			errs = append(errs, fmt.Errorf("%s: CSV %s must be named %s.v<version>", dir, csv.Name, pkg))
		case csv.Spec.Version.String() != e.Name():
			errs = append(errs, fmt.Errorf("%s: folder %s holds CSV version %s; name the folder after the version", dir, e.Name(), csv.Spec.Version))
		case csv.Spec.Replaces == csv.Name:
			errs = append(errs, fmt.Errorf("%s: CSV %s replaces itself", dir, csv.Name))
		}
		if hasNetworkPolicy(filepath.Join(dir, "manifests")) {
			errs = append(errs, fmt.Errorf("%s: ships a NetworkPolicy, which the community catalog does not accept", dir))
		}
		report, err := validate.Bundle(dir)
		if err == nil {
			err = report.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", dir, err))
		}
		versions[e.Name()], replaces[e.Name()] = csv.Name, csv.Spec.Replaces
	}
	if len(versions) == 0 {
		errs = append(errs, fmt.Errorf("%s has no version folders", pkgDir))
	}
	known := map[string]bool{}
	for _, name := range versions {
		known[name] = true
	}
	for folder, r := range replaces {
		if r != "" && !known[r] {
			errs = append(errs, fmt.Errorf("%s/%s replaces %s, which is not in the submission; include that version or fix replaces", pkgDir, folder, r))
		}
	}
	if _, err := os.Stat(filepath.Join(pkgDir, "ci.yaml")); err != nil {
		errs = append(errs, fmt.Errorf("%s has no ci.yaml", pkgDir))
	}
	return errors.Join(errs...)
}

func hasNetworkPolicy(dir string) bool {
	files, _ := os.ReadDir(dir)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err == nil && strings.Contains(string(data), "kind: NetworkPolicy") {
			return true
		}
	}
	return false
}
