package images

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// OperatorBinaryPath is where the operator binary sits in its image and what the entrypoint runs.
const OperatorBinaryPath = "/etcd-operator"

// DefaultCACertsPath is the CA bundle of Debian, Ubuntu and Alpine build machines, and where Go's
// crypto/x509 looks first on Linux.
const DefaultCACertsPath = "/etc/ssl/certs/ca-certificates.crt"

// OperatorImageOptions describes the operator image beyond its binary.
type OperatorImageOptions struct {
	// Version is the operator version, e.g. "0.1.0"; it becomes the org.opencontainers.image.version label.
	Version string
	// Source is the repository URL (label org.opencontainers.image.source).
	// Default: https://github.com/quorumkit/etcd-operator.
	Source string
	// Licenses is an SPDX expression (label org.opencontainers.image.licenses). Default: Apache-2.0.
	Licenses string
	// CACertsPath is the CA bundle copied to /etc/ssl/certs/ca-certificates.crt, so the operator can
	// verify TLS servers outside the cluster. Default: DefaultCACertsPath. The image takes the build
	// machine's bundle when the file exists and goes without one when it does not; the Kubernetes API
	// server's CA comes from the service account mount either way.
	CACertsPath string
}

// OCI label keys of the operator image.
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelLicenses = "org.opencontainers.image.licenses"
)

func (o OperatorImageOptions) withDefaults() (OperatorImageOptions, error) {
	if o.Version == "" {
		return o, errors.New("operator image: Version is empty: pass the release version, e.g. 0.1.0")
	}
	if o.Source == "" {
		o.Source = "https://github.com/quorumkit/etcd-operator"
	}
	if o.Licenses == "" {
		o.Licenses = "Apache-2.0"
	}
	if o.CACertsPath == "" {
		o.CACertsPath = DefaultCACertsPath
	}
	return o, nil
}

// BuildOperatorImage builds the operator image: scratch plus one layer with the static binary at
// /etcd-operator (mode 0755), /etc/passwd and /etc/group naming user 65532 "nonroot", and the build
// machine's CA bundle at /etc/ssl/certs/ca-certificates.crt when opts.CACertsPath exists. It runs as
// 65532:65532 from / with entrypoint ["/etcd-operator"], for linux/runtime.GOARCH.
func BuildOperatorImage(binaryPath string, opts OperatorImageOptions) (v1.Image, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkStaticBinary(binaryPath); err != nil {
		return nil, fmt.Errorf("operator image: %w (make build writes bin/etcd-operator)", err)
	}
	l := newLayer()
	if err := l.diskFile(OperatorBinaryPath, binaryPath, 0o755, 0, 0); err != nil {
		return nil, fmt.Errorf("operator image: %w", err)
	}
	addUsers(l)
	switch _, err := os.Stat(opts.CACertsPath); {
	case err == nil:
		if err := l.diskFile(DefaultCACertsPath, opts.CACertsPath, 0o644, 0, 0); err != nil {
			return nil, fmt.Errorf("operator image: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("operator image: CA bundle %s: %w", opts.CACertsPath, err)
	}
	user := strconv.Itoa(NonRootUID)
	return assemble([]layerSpec{{l, "etcd-operator binary, users and CA certificates"}}, func(c *v1.Config) {
		c.User = user + ":" + user
		c.Entrypoint = []string{OperatorBinaryPath}
		c.WorkingDir = "/"
		c.Labels = map[string]string{
			LabelTitle:    "etcd-operator",
			LabelSource:   opts.Source,
			LabelVersion:  opts.Version,
			LabelLicenses: opts.Licenses,
		}
	})
}
