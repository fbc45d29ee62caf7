//go:build tools

// Package tools pins the etcd server that envtest and the end-to-end suite run.
package tools

import _ "go.etcd.io/etcd/server/v3"
