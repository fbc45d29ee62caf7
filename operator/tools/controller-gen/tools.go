//go:build tools

// Package tools pins controller-gen, which writes the CRDs, RBAC and deepcopy code.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
