// Command olm builds what ships the operator through OLM: the bundle (bundle/), the file-based catalog
// (catalog/), release records, container images and the OperatorHub submission tree. It does the work of
// operator-sdk and opm with their Go libraries. Run from the repository root; see `olm help`.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/sirupsen/logrus"

	"github.com/quorumkit/etcd-operator/operator/internal/olm/images"
)

const usage = `usage: olm <command> [flags]

commands:
  bundle        generate bundle/ from config/ and config/releases.yaml, then validate it
  validate      validate bundle/ as OperatorHub does (every Kubernetes minor from minKubeVersion)
  catalog       generate and validate the file-based catalog in catalog/
  release       add a release: olm release -version 0.2.0 [-channels stable,candidate]
  images        build the operator, bundle and catalog images (OCI layouts; -registry to push)
  operatorhub   write and check the community-operators submission tree
  verify        fail if bundle/ or catalog/ differ from a fresh generation
  dockerfiles   fail if bundle.Dockerfile or catalog.Dockerfile drift from the Go-built images
`

func main() {
	// operator-registry logs routine notes (such as optional bundle files) through logrus at info.
	logrus.SetLevel(logrus.WarnLevel)
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	commands := map[string]func([]string) error{
		"bundle":      runBundle,
		"validate":    runValidate,
		"catalog":     runCatalog,
		"release":     runRelease,
		"images":      runImages,
		"operatorhub": runOperatorHub,
		"verify":      runVerify,
		"dockerfiles": runDockerfiles,
	}
	run, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "olm: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "olm "+os.Args[1]+":", err)
		os.Exit(1)
	}
}

func runDockerfiles(args []string) error {
	fs := flag.NewFlagSet("dockerfiles", flag.ContinueOnError)
	p := commonFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := images.CheckDockerfiles(p.root); err != nil {
		return err
	}
	fmt.Println("bundle.Dockerfile and catalog.Dockerfile match the Go-built images")
	return nil
}
