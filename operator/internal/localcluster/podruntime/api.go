// Package podruntime runs a Pod's containers as plain processes on this machine: each Pod gets its own
// network namespace joined to the local cluster's bridge by a veth pair, and each container a private
// mount namespace whose root is a small directory tree holding the image's binary, the Pod's volumes at
// their mount paths and the Pod's /etc/hosts and /etc/resolv.conf. Nothing is mounted or listens in the
// machine's own namespaces.
//
// It knows nothing about the Kubernetes API: the node agent (package node) resolves a Pod into these
// plain specs and reports status.
package podruntime

import (
	"net/netip"
	"syscall"
	"time"
)

// Config describes the cluster network sandboxes attach to.
type Config struct {
	// ClusterNetNS is the name (as `ip netns` knows it) of the cluster's network namespace, which holds
	// the bridge.
	ClusterNetNS string
	// Bridge is the bridge inside ClusterNetNS that pod veths join (localcluster uses "br0").
	Bridge string
	// Gateway is the bridge's address, the pods' default route (10.244.0.1).
	Gateway netip.Addr
	// PrefixLen is the pod network's prefix length (16 for 10.244.0.0/16).
	PrefixLen int
	// Dir is where sandboxes keep their root trees and logs.
	Dir string
	// InitBinary is the path of the podinit helper (operator/cmd/podinit) that builds a container's mount
	// namespace and execs the container's command.
	InitBinary string
}

// SandboxSpec is a Pod's network identity.
type SandboxSpec struct {
	ID       string     // unique and stable for the Pod (its UID); names the namespace and veth
	IP       netip.Addr // the Pod's address, inside the pod network
	Hostname string     // the Pod's hostname (spec.hostname or its name)
}

// Mount places a host path at a path inside the container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// ContainerSpec is one container, already resolved from the Pod: its image mapped to a local binary,
// its volumes materialized as host directories or files.
type ContainerSpec struct {
	Name string
	// Binary is the host path of the image's executable; ImagePath is where the image holds it (for
	// example /usr/local/bin/etcd), so a command naming that path runs it.
	Binary    string
	ImagePath string
	// Argv is the full command line (the Pod's command and args, or the image's entrypoint).
	Argv       []string
	Env        []string // KEY=value
	WorkingDir string
	UID, GID   uint32
	Groups     []uint32
	Mounts     []Mount // volumes, /etc/hosts, /etc/resolv.conf, service-account token ...
	// ReadOnlyRoot makes the root tree read-only (securityContext.readOnlyRootFilesystem); /tmp stays
	// writable only if a volume is mounted there.
	ReadOnlyRoot bool
	LogPath      string // stdout and stderr are appended here
}

// ExitStatus is how a container process ended.
type ExitStatus struct {
	Code     int            // exit code, or 128+signal when killed by a signal
	Signal   syscall.Signal // 0 if it exited by itself
	Started  time.Time
	Finished time.Time
}
