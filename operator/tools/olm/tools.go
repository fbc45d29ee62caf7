//go:build tools

// Package tools pins OLM v0 (operator-lifecycle-manager): the olm and catalog operators and the
// package-server aggregated API, built by scripts/build-tool.sh for the local cluster. OLM's CRDs ship
// inside the same module, under deploy/chart/crds.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/package-server"
)
