//go:build tools

// Package tools pins kustomize, which renders config/.
package tools

import _ "sigs.k8s.io/kustomize/kustomize/v5"
