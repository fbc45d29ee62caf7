//go:build tools

// Package tools pins opm, which serves the file-based catalog in the catalog image. Its
// operator-registry version must equal the root module's: the catalog cache that
// operator/internal/olm/images pre-builds is only accepted by the same pkg/cache version
// (a test in that package compares the two go.mod files).
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
