package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/catalog"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/operatorhub"
	"github.com/quorumkit/etcd-operator/operator/internal/olm/release"
)

func runOperatorHub(args []string) error {
	fs := flag.NewFlagSet("operatorhub", flag.ContinueOnError)
	p := commonFlags(fs)
	out := fs.String("out", filepath.Join("build", "operatorhub"), "where to write the submission tree")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p.resolve()
	rec, err := release.Load(p.record)
	if err != nil {
		return err
	}
	cfg, err := catalog.ValidateDir(context.Background(), p.catalog)
	if err != nil {
		return err
	}
	dir, err := operatorhub.Write(*out, rec, cfg)
	if err != nil {
		return err
	}
	if err := operatorhub.Check(dir); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d versions) and it passes the submission checks; copy operators/%s into a community-operators checkout\n",
		dir, len(rec.Releases), rec.Package)
	return nil
}
