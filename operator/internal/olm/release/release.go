// Package release reads config/releases.yaml, the record of every released version of the OLM package.
// It is the source of truth for the bundle's version and upgrade fields and for the catalog's channels,
// and it is checked on load so that a bad record fails with the field and the fix.
package release

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

// Record is config/releases.yaml.
type Record struct {
	// Package is the OLM package name.
	Package string `json:"package"`
	// DefaultChannel is the channel a Subscription gets when it names none.
	DefaultChannel string `json:"defaultChannel"`
	// OperatorImage, BundleImage and CatalogImage are repositories; tags are v<version>.
	OperatorImage string `json:"operatorImage"`
	BundleImage   string `json:"bundleImage"`
	CatalogImage  string `json:"catalogImage"`
	// Releases, oldest first.
	Releases []Release `json:"releases"`
}

// Release is one released version.
type Release struct {
	Version     string   `json:"version"`
	BundleImage string   `json:"bundleImage"`
	Channels    []string `json:"channels"`
}

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	imageRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+$`)
	tagRE   = regexp.MustCompile(`^(.+):([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$`)
)

// Load reads and checks a release record.
func Load(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the release record: %w", err)
	}
	var r Record
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w (fields are package, defaultChannel, operatorImage, bundleImage, catalogImage, releases)", path, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Validate checks every field, reporting all problems at once.
func (r *Record) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !nameRE.MatchString(r.Package) {
		add("package %q must be a lowercase DNS label such as etcd-operator", r.Package)
	}
	for field, repo := range map[string]string{"operatorImage": r.OperatorImage, "bundleImage": r.BundleImage, "catalogImage": r.CatalogImage} {
		if !imageRE.MatchString(repo) {
			add("%s %q must be an image repository without tag, such as quay.io/org/name", field, repo)
		}
	}
	if len(r.Releases) == 0 {
		add("releases is empty; add the first release with make release VERSION=0.1.0")
	}
	var prev *semver.Version
	inDefault := false
	for i, rel := range r.Releases {
		where := fmt.Sprintf("releases[%d] (version %q)", i, rel.Version)
		v, err := semver.Parse(rel.Version)
		if err != nil {
			add("%s: version must be a semver such as 1.2.3 without a leading v: %v", where, err)
			continue
		}
		if prev != nil && !v.GT(*prev) {
			add("%s: versions must increase down the list, but %s follows %s; list releases oldest first", where, v, prev)
		}
		prev = &v
		if !tagRE.MatchString(rel.BundleImage) || !imageRE.MatchString(tagRE.FindStringSubmatch(rel.BundleImage)[1]) {
			add("%s: bundleImage %q must be a tagged image reference such as %s:v%s", where, rel.BundleImage, r.BundleImage, rel.Version)
		}
		if len(rel.Channels) == 0 {
			add("%s: channels is empty; list at least %q", where, r.DefaultChannel)
		}
		for _, ch := range rel.Channels {
			if !nameRE.MatchString(ch) {
				add("%s: channel %q must be a lowercase DNS label such as stable", where, ch)
			}
		}
		inDefault = inDefault || slices.Contains(rel.Channels, r.DefaultChannel)
	}
	if r.DefaultChannel == "" {
		add("defaultChannel is empty; set it to stable")
	} else if len(r.Releases) > 0 && !inDefault {
		add("defaultChannel %q has no release; add it to a release's channels or pick a channel that has one", r.DefaultChannel)
	}
	return errors.Join(errs...)
}

// Latest is the newest release: the one bundle/ describes.
func (r *Record) Latest() Release { return r.Releases[len(r.Releases)-1] }

// Previous returns the release before version v, if any.
func (r *Record) Previous(v string) (Release, bool) {
	i := slices.IndexFunc(r.Releases, func(x Release) bool { return x.Version == v })
	if i <= 0 {
		return Release{}, false
	}
	return r.Releases[i-1], true
}

// SkipRange is the olm.skipRange of version v: every older release can upgrade to it directly. The first
// release has none.
func (r *Record) SkipRange(v string) string {
	if len(r.Releases) == 0 || r.Releases[0].Version == v {
		return ""
	}
	return fmt.Sprintf(">=%s <%s", r.Releases[0].Version, v)
}

// CSVName is the ClusterServiceVersion name of a version.
func (r *Record) CSVName(v string) string { return fmt.Sprintf("%s.v%s", r.Package, v) }

// OperatorImageRef is the operator image of a version.
func (r *Record) OperatorImageRef(v string) string { return fmt.Sprintf("%s:v%s", r.OperatorImage, v) }

// Channels lists every channel used, sorted.
func (r *Record) Channels() []string {
	var out []string
	for _, rel := range r.Releases {
		for _, ch := range rel.Channels {
			if !slices.Contains(out, ch) {
				out = append(out, ch)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Add appends a release, checking that it is newer than the last one.
func (r *Record) Add(version string, channels []string) error {
	r.Releases = append(r.Releases, Release{Version: version, Channels: channels,
		BundleImage: fmt.Sprintf("%s:v%s", r.BundleImage, version)})
	if err := r.Validate(); err != nil {
		r.Releases = r.Releases[:len(r.Releases)-1]
		return err
	}
	return nil
}

// Save writes the record back with its header comment.
func (r *Record) Save(path string) error {
	data, err := yaml.Marshal(r)
	if err != nil {
		return err
	}
	header := "# Every released version of the etcd-operator OLM package, oldest first: the source of truth for bundle\n" +
		"# versions, the catalog's channels and its upgrade graph. Add a release with `make release VERSION=x.y.z`.\n"
	return os.WriteFile(path, append([]byte(header), data...), 0o644)
}
