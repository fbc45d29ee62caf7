package e2e_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/deploy"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
)

const (
	oldVersion = "3.5.21"
	newVersion = "3.6.7"
	settle     = 3 * time.Minute
)

// create makes a cluster in a namespace of its own and waits until it has settled.
func create(t *testing.T, ns string, size int32, version string, mutate func(*etcdv1.EtcdCluster)) (context.Context, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	const name = "etcd"
	c := harness.NewCluster(ns, name, size, version, mutate)
	if err := env.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	// Scenarios share two cores: a finished scenario's members must not slow the next one's.
	// Cleanups run last-in first-out: the logs are dumped before the cluster is deleted.
	t.Cleanup(func() {
		if err := env.Client.Delete(context.Background(), c); err != nil {
			t.Errorf("delete %s/%s: %v", ns, name, err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			var logs strings.Builder
			env.DumpLogs(context.Background(), &logs, ns, 60)
			t.Log("logs of the operator and of " + ns + ":\n" + logs.String())
		}
	})
	took := waitSettled(t, ctx, ns, name)
	t.Logf("%d members at %s available in %s", size, version, took)
	return ctx, name
}

func waitSettled(t *testing.T, ctx context.Context, ns, name string) time.Duration {
	t.Helper()
	took, err := env.WaitSettled(ctx, ns, name, settle)
	if err != nil {
		t.Fatal(err)
	}
	return took
}

func update(t *testing.T, ctx context.Context, ns, name string, change func(*etcdv1.EtcdCluster)) {
	t.Helper()
	if err := env.Update(ctx, ns, name, change); err != nil {
		t.Fatal(err)
	}
}

// Scenario 1: a 3-member cluster becomes Available and serves data through its client Service.
func TestCreateAndServeThroughService(t *testing.T) {
	ctx, name := create(t, "e2e-create", 3, newVersion, nil)
	l := startLoad(t, "e2e-create", name)
	svc, err := env.ServiceEndpoint(ctx, "e2e-create", name)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := env.EtcdClient(svc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	if _, err := cli.Put(ctx, "greeting", "hello"); err != nil {
		t.Fatalf("put through the client Service: %v", err)
	}
	resp, err := cli.Get(ctx, "greeting")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "hello" {
		t.Fatalf("get through the client Service: %v %v", resp, err)
	}
	time.Sleep(3 * time.Second) // let the load run against the settled cluster
	l.finish()
}

// Scenario 2: scale 3 -> 5 -> 3 under load.
func TestScaleUpAndDown(t *testing.T) {
	const ns = "e2e-scale"
	ctx, name := create(t, ns, 3, newVersion, nil)
	l := startLoad(t, ns, name)
	for _, size := range []int32{5, 3} {
		update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Size = size })
		t.Logf("scaled to %d in %s", size, waitSettled(t, ctx, ns, name))
	}
	l.finish()
	assertPods(t, ctx, ns, name, 3)
}

// Scenario 3: a member Pod deleted, one etcd process killed with SIGKILL, then the leader killed.
func TestMemberFailures(t *testing.T) {
	const ns = "e2e-members"
	ctx, name := create(t, ns, 3, newVersion, nil)
	l := startLoad(t, ns, name)
	leader := mustLeader(t, ctx, ns, name)
	victim := otherMember(t, ctx, ns, name, leader)

	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = ns, victim
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	t.Logf("member Pod %s deleted: healed in %s", victim, waitReplaced(t, ctx, ns, name))

	victim = otherMember(t, ctx, ns, name, mustLeader(t, ctx, ns, name))
	if err := env.Cluster.Agent().KillContainer(ns, victim, "etcd", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd in %s killed: healed in %s", victim, waitReplaced(t, ctx, ns, name))

	leader = mustLeader(t, ctx, ns, name)
	if err := env.Cluster.Agent().KillContainer(ns, leader, "etcd", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s killed: healed in %s", leader, waitReplaced(t, ctx, ns, name))
	l.finish()
}

// Scenario 4: the node of one member stopped and restarted; then the leader's node cut off from the
// network (processes alive) and reconnected.
func TestNodeFailures(t *testing.T) {
	const ns = "e2e-nodes"
	ctx, name := create(t, ns, 3, newVersion, nil)
	l := startLoad(t, ns, name)
	agent := env.Cluster.Agent()

	// A follower on a node without the operator: this part is about losing a member. (Losing the
	// operator's node costs the 30 s of its Deployment's not-ready toleration, then it runs elsewhere.)
	victim, node := followerAwayFromOperator(t, ctx, ns, name)
	if err := agent.StopNode(node); err != nil {
		t.Fatal(err)
	}
	waitUnhealthy(t, ctx, ns, name)
	if err := agent.StartNode(node); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s (member %s) stopped and restarted: healed in %s", node, victim, waitReplaced(t, ctx, ns, name))

	leader := mustLeader(t, ctx, ns, name)
	node = nodeOf(t, ctx, ns, leader)
	if err := agent.Partition(node); err != nil {
		t.Fatal(err)
	}
	// The majority elects a new leader while the old one is cut off.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		now, err := env.Leader(ctx, ns, name)
		return err == nil && now != leader, nil
	}); err != nil {
		t.Fatalf("no new leader while %s (node %s) was partitioned: %v", leader, node, err)
	}
	if err := agent.Heal(node); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader %s's node %s partitioned and healed: healthy in %s", leader, node, waitReplaced(t, ctx, ns, name))
	l.finish()
}

// Scenario 5: a rolling upgrade 3.5 -> 3.6 under load; a downgrade request is refused with a message.
func TestRollingUpgradeAndRefusedDowngrade(t *testing.T) {
	const ns = "e2e-upgrade"
	ctx, name := create(t, ns, 3, oldVersion, nil)
	l := startLoad(t, ns, name)
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Version = newVersion })
	t.Logf("upgraded %s -> %s in %s", oldVersion, newVersion, waitSettled(t, ctx, ns, name))

	err := env.Update(ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Version = oldVersion })
	if err == nil || !strings.Contains(err.Error(), "downgrades") {
		t.Fatalf("a downgrade to %s must be refused with a message about downgrades, got: %v", oldVersion, err)
	}
	t.Logf("downgrade refused: %v", err)
	l.finish()
}

// Scenario 6: the operator exits right after every step it takes (before writing status) while it
// bootstraps, scales up, scales down and upgrades; each restart continues, and the cluster converges.
func TestOperatorKilledAtEveryStep(t *testing.T) {
	const ns = "e2e-crash"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// A killed operator never releases its lease: the shortest lease lets each restart lead at once.
	crashing := deploy.All(deploy.SetEnv("ETCD_OPERATOR_CRASH_AFTER", "any"), deploy.AddArgs("--leader-elect-lease-duration=2s"))
	if err := env.InstallOperator(ctx, crashing); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.InstallOperator(context.Background(), nil); err != nil {
			t.Errorf("reinstall the operator without the crash hook: %v", err)
		}
	}()
	restartsBefore := operatorRestarts(t, ctx)
	_, name := create(t, ns, 3, oldVersion, nil)
	l := startLoad(t, ns, name)
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Size = 5 })
	t.Logf("scale-up converged in %s", waitSettled(t, ctx, ns, name))
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Size = 3 })
	t.Logf("scale-down converged in %s", waitSettled(t, ctx, ns, name))
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Version = newVersion })
	t.Logf("upgrade converged in %s", waitSettled(t, ctx, ns, name))
	crashes := operatorRestarts(t, ctx) - restartsBefore
	// Bootstrap 1, scale-up 3 steps per member, scale-down at least 2 per member, upgrade 3 members.
	if crashes < 12 {
		t.Errorf("the operator restarted %d times; the crash hook should have fired after every step (12 or more)", crashes)
	}
	t.Logf("operator killed and restarted %d times", crashes)
	l.finish()
}

// Scenario 7: nothing changes while paused; the change happens after resuming.
func TestPause(t *testing.T) {
	const ns = "e2e-pause"
	ctx, name := create(t, ns, 3, newVersion, nil)
	l := startLoad(t, ns, name)
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Paused = true; c.Spec.Size = 5 })
	// Several reconciles happen in this time (the resync is 10 s and every Pod event triggers one).
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		assertPods(t, ctx, ns, name, 3)
		time.Sleep(time.Second)
	}
	var c etcdv1.EtcdCluster
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		t.Fatal(err)
	}
	if cond := findCondition(&c, etcdv1.ConditionProgressing); cond == nil || cond.Reason != etcdv1.ReasonPaused {
		t.Errorf("a paused cluster must say so in Progressing, got %+v", cond)
	}
	update(t, ctx, ns, name, func(c *etcdv1.EtcdCluster) { c.Spec.Paused = false })
	t.Logf("resumed: scaled to 5 in %s", waitSettled(t, ctx, ns, name))
	l.finish()
}
