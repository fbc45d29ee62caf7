// Package images builds the operator, bundle and catalog container images with go-containerregistry,
// from files on disk and without a container engine, and writes them as OCI layouts or pushes them.
//
// Every image is reproducible: files and configs carry the Unix epoch as their time and layers are
// written in name order, so a digest changes only when content changes. The one exception is the
// catalog's pre-built cache (see BuildCatalogImage), whose database files embed a random hash seed.
package images

import (
	"debug/elf"
	"fmt"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRootUID is the user the operator and catalog images run as: distroless's "nonroot", so that
// Pods with runAsNonRoot pass without a numeric runAsUser.
const NonRootUID = 65532

// passwd and group name the non-root user, so tools that resolve the image's user find it.
var (
	passwd = []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")
	group = []byte("root:x:0:\nnonroot:x:65532:\n")
)

// addUsers puts /etc/passwd, /etc/group and the non-root user's home into a layer.
func addUsers(l *layerBuilder) {
	l.file("/etc/passwd", passwd, 0o644, 0, 0)
	l.file("/etc/group", group, 0o644, 0, 0)
	l.dir("/home/nonroot", 0o700, NonRootUID, NonRootUID)
}

// layerSpec is one layer and the history line that says where it came from.
type layerSpec struct {
	layer     *layerBuilder
	createdBy string
}

// assemble builds an OCI image from scratch with the given layers and lets edit fill in the config.
// OS and created time are set here; edit sets architecture, user, entrypoint, labels and so on.
func assemble(specs []layerSpec, edit func(*v1.Config)) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, s := range specs {
		layer, err := s.layer.build()
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", s.createdBy, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: s.createdBy, Comment: "built by operator/internal/olm/images"},
		})
		if err != nil {
			return nil, fmt.Errorf("append layer %q: %w", s.createdBy, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	edit(&cf.Config)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set config: %w", err)
	}
	return img, nil
}

// elfMachines maps GOARCH to the ELF machine of its binaries, for the architectures Kubernetes nodes run.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390,
}

// checkStaticBinary fails unless path is a statically linked Linux executable for runtime.GOARCH:
// our images have no libc or dynamic loader, so anything else would fail only at container start.
func checkStaticBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not a Linux ELF executable (%w): build it with GOOS=linux CGO_ENABLED=0", path, err)
	}
	defer func() { _ = f.Close() }()
	if want, ok := elfMachines[runtime.GOARCH]; ok && f.Machine != want {
		return fmt.Errorf("%s is built for %s, but the image is for %s (%s): build it with GOARCH=%s",
			path, f.Machine, runtime.GOARCH, want, runtime.GOARCH)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked, but the image has no libc or loader: build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}
