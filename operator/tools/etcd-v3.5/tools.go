//go:build tools

// Package tools pins the older etcd server that upgrade tests start clusters from (v3.5 to v3.6).
package tools

import _ "go.etcd.io/etcd/server/v3"
