package podruntime

import "net/netip"

// InitSpec is what Start and Exec hand to podinit (operator/cmd/podinit), as a JSON file: the contract
// between the two. podinit is a separate executable because a Go process cannot enter a new mount
// namespace itself (unshare(CLONE_NEWNS) fails once it has several threads), while a freshly started
// helper can be given one.
//
// podinit is run as `podinit run SPEC` (build the root and exec the container) or `podinit exec SPEC --
// ARGV...` (from inside the container's namespaces, run ARGV in its root with its identity).
type InitSpec struct {
	// RootDir is an empty directory that podinit turns into the container's root. Its mounts exist only
	// in the container's mount namespace; in every other namespace it stays a tree of empty mount points.
	RootDir string
	// ParentPID is the runtime's pid. podinit re-arms the parent-death signal after changing credentials
	// (which clears it) and refuses to exec if its parent is no longer that process.
	ParentPID int
	Hostname  string
	IP        netip.Addr // written to the default /etc/hosts with Hostname
	// Container is the container as Start received it, with the runtime's default environment added.
	Container ContainerSpec
}

// SyncFD is the descriptor on which `podinit run` reports to Sandbox.Start. It writes SyncStarted
// first, then an error message if it fails. The descriptor is close-on-exec, so end of file after
// SyncStarted alone means the container's command is running; end of file before it means podinit never
// ran (ip netns exec failed: its message is in the container's log).
const (
	SyncFD      = 3
	SyncStarted = byte(0)
)
