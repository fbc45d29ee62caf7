package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/bundle"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/validate"
)

// paths are the repository locations every command works with.
type paths struct {
	root, record, bundle, catalog string
}

func commonFlags(fs *flag.FlagSet) *paths {
	p := &paths{}
	fs.StringVar(&p.root, "root", ".", "repository root")
	return p
}

func (p *paths) resolve() {
	p.record = filepath.Join(p.root, "config", "releases.yaml")
	p.bundle = filepath.Join(p.root, "bundle")
	p.catalog = filepath.Join(p.root, "catalog")
}

func runBundle(args []string) error {
	fs := flag.NewFlagSet("bundle", flag.ContinueOnError)
	p := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	return generateBundle(p)
}

// freshBundle generates the bundle for the record's latest release, keeping the committed createdAt
// when nothing else changed.
func freshBundle(p *paths) (*release.Record, *bundle.Bundle, error) {
	rec, err := release.Load(p.record)
	if err != nil {
		return nil, nil, err
	}
	b, err := bundle.Generate(bundle.Options{Root: p.root, Record: rec, Previous: p.bundle, Now: time.Now})
	return rec, b, err
}

func generateBundle(p *paths) error {
	_, b, err := freshBundle(p)
	if err != nil {
		return err
	}
	if err := b.Files.Write(p.bundle); err != nil {
		return fmt.Errorf("write %s: %w", p.bundle, err)
	}
	fmt.Printf("wrote %s for %s (%d files)\n", p.bundle, b.CSV.Name, len(b.Files))
	return validateBundle(p.bundle)
}

func runValidate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	p := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	return validateBundle(p.bundle)
}

func validateBundle(dir string) error {
	report, err := validate.Bundle(dir)
	if err != nil {
		return err
	}
	for _, f := range report {
		fmt.Println("  " + f.String())
	}
	if err := report.Err(); err != nil {
		return err
	}
	fmt.Printf("%s passes every validator (%d warnings)\n", dir, len(report))
	return nil
}
