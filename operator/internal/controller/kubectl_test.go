package controller_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestKubectlAsAUserWouldUseIt runs the pinned kubectl against the API server: the commands the README
// tells users to run must work on a reconciled cluster.
func TestKubectlAsAUserWouldUseIt(t *testing.T) {
	kubectl, kubeconfig := env.Kubectl(t), env.Kubeconfig(t, "user")
	h := newHarness(t, spec3())
	h.settle()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(h.ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "-n", h.ns}, args...)...).CombinedOutput()
		return string(out), err
	}

	out, err := run("wait", "--for=condition=Available", "etcdcluster/e", "--timeout=10s")
	if err != nil || !strings.Contains(out, "condition met") {
		t.Fatalf("kubectl wait: %v\n%s", err, out)
	}

	out, err = run("get", "etcd", "e")
	if err != nil {
		t.Fatalf("kubectl get etcd e: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`NAME\s+SIZE\s+READY\s+VERSION\s+AVAILABLE\s+REASON\s+AGE`).MatchString(out) ||
		!regexp.MustCompile(`e\s+3\s+3\s+3\.6\.7\s+True\s+QuorumHealthy`).MatchString(out) {
		t.Fatalf("printer columns:\n%s", out)
	}

	if out, err = run("scale", "etcdcluster/e", "--replicas=5"); err != nil {
		t.Fatalf("kubectl scale: %v\n%s", err, out)
	}
	if got := h.cluster().Spec.Size; got != 5 {
		t.Fatalf("spec.size = %d after kubectl scale --replicas=5", got)
	}
	out, err = run("scale", "etcdcluster/e", "--replicas=0")
	if err == nil || !strings.Contains(out, "spec.size must be between 1 and 9") {
		t.Fatalf("kubectl scale --replicas=0 must be refused with the field and the fix: %v\n%s", err, out)
	}

	out, err = run("explain", "etcdcluster.spec.storage.kind")
	if err != nil || !strings.Contains(out, "Immutable") {
		t.Fatalf("kubectl explain shows the field docs: %v\n%s", err, out)
	}
}
