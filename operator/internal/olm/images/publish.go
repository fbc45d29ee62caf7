package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// RefNameAnnotation is the OCI annotation that names an image in a layout's index.json; skopeo,
// crane, podman and buildah find "oci:<dir>:<ref>" by it.
const RefNameAnnotation = "org.opencontainers.image.ref.name"

// WriteLayout writes img into the OCI image layout at dir (creating it when absent) under ref.
// An image already in the layout under the same ref is replaced; other images stay.
func WriteLayout(dir string, img v1.Image, ref string) error {
	if ref == "" {
		return errors.New("write OCI layout: empty ref: name the image, e.g. quay.io/quorumkit/etcd-operator:v0.1.0")
	}
	p, err := layout.FromPath(dir)
	if errors.Is(err, fs.ErrNotExist) {
		p, err = layout.Write(dir, empty.Index)
	}
	if err != nil {
		return fmt.Errorf("open OCI layout %s: %w", dir, err)
	}
	annotations := map[string]string{RefNameAnnotation: ref}
	if err := p.ReplaceImage(img, match.Annotation(RefNameAnnotation, ref), layout.WithAnnotations(annotations)); err != nil {
		return fmt.Errorf("write %s to OCI layout %s: %w", ref, dir, err)
	}
	return nil
}

// parseRef parses an image reference; a loopback registry (localhost, 127.0.0.0/8, ::1) is reached
// over plain HTTP, as local test and kind registries serve.
func parseRef(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("parse image reference %q: %w", ref, err)
	}
	if isLoopback(r.Context().RegistryStr()) {
		r, err = name.ParseReference(ref, name.Insecure)
		if err != nil {
			return nil, fmt.Errorf("parse image reference %q: %w", ref, err)
		}
	}
	return r, nil
}

func isLoopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// remoteOptions authenticates with the Docker config's credentials (~/.docker/config.json,
// $DOCKER_CONFIG), as docker and podman logins leave them.
func remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
}

// Push uploads img to the registry as ref (tag or digest reference).
func Push(img v1.Image, ref string) error {
	r, err := parseRef(ref)
	if err != nil {
		return err
	}
	if err := remote.Write(r, img, remoteOptions(context.Background())...); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	return nil
}
