package node

import (
	_ "embed"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// ImageTableFile names the checked-in table in messages, so a Pod stuck on an unknown image tells the
// reader which file to edit.
const ImageTableFile = "operator/internal/localcluster/node/images.yaml"

//go:embed images.yaml
var defaultImages []byte

// Image is what the agent knows of a container image: which local binary stands for it and the image
// defaults a Pod may rely on.
type Image struct {
	Ref        string   // the reference as listed
	Binary     string   // absolute path of the binary on this machine
	Path       string   // where the image holds the executable
	User       uint32   // the image's default uid
	Group      uint32   // the image's default gid
	Entrypoint []string // ENTRYPOINT
	Cmd        []string // CMD
}

// ImageTable maps image references to local binaries.
type ImageTable struct {
	images map[string]Image
}

// imageEntry is one entry of images.yaml.
type imageEntry struct {
	Image      string   `json:"image"`
	Binary     string   `json:"binary"`
	Path       string   `json:"path"`
	User       *int64   `json:"user"`
	Group      *int64   `json:"group,omitempty"`
	Entrypoint []string `json:"entrypoint,omitempty"`
	Cmd        []string `json:"cmd,omitempty"`
}

// DefaultImageTable is the checked-in table, with binaries resolved in binDir.
func DefaultImageTable(binDir string) (*ImageTable, error) {
	return ParseImageTable(defaultImages, binDir)
}

// ParseImageTable reads a table in the format of images.yaml. Unknown fields, duplicates and malformed
// entries are errors: a typo must not quietly turn into ImageNotInTable at run time. Whether a binary
// exists is checked only when a Pod uses it, so a table may list images not built on this machine.
func ParseImageTable(data []byte, binDir string) (*ImageTable, error) {
	var doc struct {
		Images []imageEntry `json:"images"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("image table: %w", err)
	}
	t := &ImageTable{images: map[string]Image{}}
	for i, e := range doc.Images {
		img, err := e.resolve(binDir)
		if err != nil {
			return nil, fmt.Errorf("image table entry %d (%q): %w", i, e.Image, err)
		}
		if _, dup := t.images[img.Ref]; dup {
			return nil, fmt.Errorf("image table: %q is listed twice", img.Ref)
		}
		t.images[img.Ref] = img
	}
	return t, nil
}

func (e imageEntry) resolve(binDir string) (Image, error) {
	switch {
	case e.Image == "" || strings.ContainsAny(e.Image, " \t"):
		return Image{}, fmt.Errorf("image must be a reference without spaces")
	case e.Binary == "" || strings.Contains(e.Binary, "/") || e.Binary == "." || e.Binary == "..":
		return Image{}, fmt.Errorf("binary must be a file name in the bin directory, got %q", e.Binary)
	case !path.IsAbs(e.Path):
		return Image{}, fmt.Errorf("path must be absolute, got %q", e.Path)
	case e.User == nil:
		return Image{}, fmt.Errorf("user is required (the image's default uid)")
	}
	img := Image{Ref: e.Image, Binary: filepath.Join(binDir, e.Binary), Path: path.Clean(e.Path),
		Entrypoint: e.Entrypoint, Cmd: e.Cmd}
	var err error
	if img.User, err = toID("user", *e.User); err != nil {
		return Image{}, err
	}
	if e.Group != nil {
		if img.Group, err = toID("group", *e.Group); err != nil {
			return Image{}, err
		}
	}
	return img, nil
}

func toID(what string, v int64) (uint32, error) {
	if v < 0 || v > 1<<31-1 {
		return 0, fmt.Errorf("%s %d is out of range", what, v)
	}
	return uint32(v), nil
}

// Lookup finds ref. A reference with both a tag and a digest (repo:tag@sha256:...) also matches an entry
// listed by digest alone or by tag alone.
func (t *ImageTable) Lookup(ref string) (Image, bool) {
	if img, ok := t.images[ref]; ok {
		return img, true
	}
	repoTag, digest, hasDigest := strings.Cut(ref, "@")
	if !hasDigest {
		return Image{}, false
	}
	repo := repoTag
	if i := strings.LastIndex(repoTag, ":"); i > strings.LastIndex(repoTag, "/") {
		repo = repoTag[:i]
	}
	if img, ok := t.images[repo+"@"+digest]; ok {
		return img, true
	}
	img, ok := t.images[repoTag]
	return img, ok && repoTag != repo
}

// notInTableMessage tells what to do about an unknown image.
func notInTableMessage(ref string) string {
	return fmt.Sprintf("image %q is not in the localcluster image table: add an entry mapping it to a binary "+
		"in the bin directory to %s", ref, ImageTableFile)
}
