package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the one timestamp every file and config in our images carries, so that a digest changes
// only when content changes (SOURCE_DATE_EPOCH=0 in reproducible-builds terms).
var epoch = time.Unix(0, 0).UTC()

// owner and permission bits of the files a layer entry gets; image content never inherits them from
// the build machine, whose umask and checkout modes vary.
type perms struct {
	dirMode, fileMode int64
	uid, gid          int
}

// rootReadOnly is for bundle and catalog content: owned by root, readable by every user.
var rootReadOnly = perms{dirMode: 0o755, fileMode: 0o644}

type layerEntry struct {
	hdr  tar.Header
	data []byte
}

// layerBuilder collects the files of one image layer and writes them as a tar in name order, so the
// same inputs always give the same bytes.
type layerBuilder struct {
	entries map[string]*layerEntry
}

func newLayer() *layerBuilder { return &layerBuilder{entries: map[string]*layerEntry{}} }

// clean turns an image path such as "/etc/passwd" into the tar name "etc/passwd".
func clean(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

func (b *layerBuilder) dir(name string, mode int64, uid, gid int) {
	name = clean(name)
	if name == "" {
		return
	}
	b.entries[name] = &layerEntry{hdr: tar.Header{
		Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: gid, ModTime: epoch,
	}}
}

// parents adds the missing parent directories of name, owned by root, as a runtime would create them.
func (b *layerBuilder) parents(name string) {
	for d := path.Dir(clean(name)); d != "." && d != "/"; d = path.Dir(d) {
		if _, ok := b.entries[d]; !ok {
			b.dir(d, 0o755, 0, 0)
		}
	}
}

func (b *layerBuilder) file(name string, data []byte, mode int64, uid, gid int) {
	b.parents(name)
	name = clean(name)
	b.entries[name] = &layerEntry{hdr: tar.Header{
		Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: uid, Gid: gid, ModTime: epoch, Size: int64(len(data)),
	}, data: data}
}

func (b *layerBuilder) diskFile(name, src string, mode int64, uid, gid int) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read %s for image path %s: %w", src, name, err)
	}
	b.file(name, data, mode, uid, gid)
	return nil
}

// tree copies the directory src to dst in the image with the modes and owner of p. Only directories
// and regular files are copied: a symlink or device in a bundle or catalog is a mistake, and following
// it would put build-machine content into the image.
func (b *layerBuilder) tree(src, dst string, p perms) error {
	return filepath.WalkDir(src, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", src, err)
		}
		rel, err := filepath.Rel(src, file)
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			b.parents(target)
			b.dir(target, p.dirMode, p.uid, p.gid)
			return nil
		case d.Type().IsRegular():
			return b.diskFile(target, file, p.fileMode, p.uid, p.gid)
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link: images copy only regular files and directories; replace it with a copy of its target", file)
		default:
			return fmt.Errorf("%s is a special file (%s): images copy only regular files and directories", file, d.Type())
		}
	})
}

// build writes the layer as a gzip-compressed OCI layer. It compresses once here (go-containerregistry
// would otherwise recompress for the digest and again for every push) at the default level, with no
// name or time in the gzip header, so the compressed digest is reproducible too.
func (b *layerBuilder) build() (v1.Layer, error) {
	names := make([]string, 0, len(b.entries))
	for name := range b.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, name := range names {
		e := b.entries[name]
		hdr := e.hdr
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("write tar header for %s: %w", name, err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, fmt.Errorf("write tar content of %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	var gzBuf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gzBuf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(zw, &tarBuf); err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress layer: %w", err)
	}
	compressed := gzBuf.Bytes()
	opener := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(compressed)), nil }
	layer, err := tarball.LayerFromOpener(opener, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make layer: %w", err)
	}
	return layer, nil
}
