package images

import (
	"context"
	"fmt"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/pkg/image"
)

// Registry is operator-registry's image.Registry on top of go-containerregistry: it lets
// action.Render (and so `opm render`'s code) read bundle and catalog images from a registry with no
// container runtime and no containers/image storage on disk. Pulled images stay in memory; their
// layers are fetched when unpacked.
type Registry struct {
	mu     sync.Mutex
	images map[string]v1.Image
}

var _ image.Registry = (*Registry)(nil)

// NewRegistry returns an empty Registry. Loopback registries are reached over plain HTTP; others
// with the Docker config's credentials.
func NewRegistry() *Registry { return &Registry{images: map[string]v1.Image{}} }

// Pull fetches the manifest and config of ref.
func (r *Registry) Pull(ctx context.Context, ref image.Reference) error {
	parsed, err := parseRef(ref.String())
	if err != nil {
		return err
	}
	img, err := remote.Image(parsed, remoteOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[ref.String()] = img
	return nil
}

func (r *Registry) pulled(ref image.Reference) (v1.Image, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	img, ok := r.images[ref.String()]
	if !ok {
		return nil, fmt.Errorf("image %s has not been pulled", ref)
	}
	return img, nil
}

// Unpack writes the filesystem of the pulled image ref into dir, with this process's ownership.
func (r *Registry) Unpack(_ context.Context, ref image.Reference, dir string) error {
	img, err := r.pulled(ref)
	if err != nil {
		return err
	}
	if err := Extract(img, dir, false); err != nil {
		return fmt.Errorf("unpack %s: %w", ref, err)
	}
	return nil
}

// Labels returns the labels of the pulled image ref.
func (r *Registry) Labels(_ context.Context, ref image.Reference) (map[string]string, error) {
	img, err := r.pulled(ref)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config of %s: %w", ref, err)
	}
	return cf.Config.Labels, nil
}

// Destroy forgets the pulled images; nothing was written to disk.
func (r *Registry) Destroy() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images = map[string]v1.Image{}
	return nil
}
