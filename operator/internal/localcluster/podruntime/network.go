package podruntime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// createNetwork adds the sandbox's network namespace and a veth pair: the host end joins the cluster
// bridge inside the cluster's namespace, the pod end becomes eth0 in the new namespace with the Pod's IP
// and a default route via the bridge (so Service addresses reach kube-proxy's rules in the cluster
// namespace). The pair is created inside the cluster's namespace with its peer placed straight into the
// pod's, so no interface ever appears in the machine's own namespace.
func (s *Sandbox) createNetwork() error {
	cfg := s.rt.cfg
	if err := s.rt.runIP("netns", "add", s.netns); err != nil {
		return err
	}
	// Hairpin lets a Pod reach itself through a Service address: kube-proxy's DNAT sends the packet back
	// out of the port it came in on.
	if err := s.rt.runIPBatch(cfg.ClusterNetNS,
		fmt.Sprintf("link add %s type veth peer name eth0 netns %s", s.veth, s.netns),
		fmt.Sprintf("link set %s master %s", s.veth, cfg.Bridge),
		fmt.Sprintf("link set %s type bridge_slave hairpin on", s.veth),
		fmt.Sprintf("link set %s up", s.veth),
	); err != nil {
		return err
	}
	return s.rt.runIPBatch(s.netns,
		"link set lo up",
		fmt.Sprintf("addr add %s/%d dev eth0", s.spec.IP, cfg.PrefixLen),
		"link set eth0 up",
		fmt.Sprintf("route add default via %s dev eth0", cfg.Gateway),
	)
}

// SetLinkUp cuts (false) or restores (true) the Pod's network by setting the host end of its veth down or
// up. The Pod's processes keep running; packets to and from it are dropped while the link is down.
func (s *Sandbox) SetLinkUp(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	if err := s.rt.runIP("-n", s.rt.cfg.ClusterNetNS, "link", "set", s.veth, state); err != nil {
		return fmt.Errorf("podruntime: sandbox %s: set link %s: %w", s.spec.ID, state, err)
	}
	return nil
}

// deleteNetwork removes the veth pair and the namespace. The veth is deleted explicitly because the
// kernel destroys a deleted namespace's interfaces asynchronously: the host end would otherwise linger
// on the bridge for a while.
func (s *Sandbox) deleteNetwork() error {
	var errs []error
	if s.rt.linkExists(s.rt.cfg.ClusterNetNS, s.veth) {
		if err := s.rt.runIP("-n", s.rt.cfg.ClusterNetNS, "link", "del", s.veth); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", s.netns)); err == nil {
		if err := s.rt.runIP("netns", "delete", s.netns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Runtime) linkExists(netns, link string) bool {
	return exec.Command(r.ip, "-n", netns, "link", "show", "dev", link).Run() == nil
}

func (r *Runtime) runIP(args ...string) error {
	out, err := exec.Command(r.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runIPBatch runs several ip commands in one namespace with one process: each ip start costs more than
// the netlink calls it makes.
func (r *Runtime) runIPBatch(netns string, cmds ...string) error {
	cmd := exec.Command(r.ip, "-n", netns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ip -n %s: %q: %w: %s", netns, cmds, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netnsPIDs lists the processes inside a network namespace: a sandbox's containers, exec'd commands
// and anything they started.
func (r *Runtime) netnsPIDs(netns string) ([]string, error) {
	if _, err := os.Stat(filepath.Join("/run/netns", netns)); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	out, err := exec.Command(r.ip, "netns", "pids", netns).Output()
	return strings.Fields(string(out)), err
}
