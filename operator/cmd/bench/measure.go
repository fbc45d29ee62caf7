package main

import (
	"context"
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/harness"
	"github.com/quorumkit/etcd-operator/operator/internal/e2e/workload"
)

const (
	oldVersion = "3.5.21"
	newVersion = "3.6.7"
	settle     = 3 * time.Minute
)

// bench collects every run's figures.
type bench struct {
	env  *harness.Env
	runs int

	create3, create5, scaleUpPerMember, podDeleted, processKilled []time.Duration
	upgrade                                                       []time.Duration
	upgradeFailedOps                                              []int
	idle                                                          idleFigures
}

// lifecycle creates a 3-member cluster, scales it to 5, deletes a member Pod, kills a member's etcd
// process, deletes the cluster, and creates a 5-member one: once per run, each in a fresh namespace.
func (b *bench) lifecycle(ctx context.Context) error {
	for run := range b.runs {
		ns := fmt.Sprintf("bench-life-%d", run)
		took, err := b.createSettled(ctx, ns, "etcd", 3, newVersion)
		if err != nil {
			return err
		}
		b.create3 = append(b.create3, took)

		begin := time.Now()
		if err := b.env.Update(ctx, ns, "etcd", func(c *etcdv1.EtcdCluster) { c.Spec.Size = 5 }); err != nil {
			return err
		}
		if _, err := b.env.WaitSettled(ctx, ns, "etcd", settle); err != nil {
			return err
		}
		b.scaleUpPerMember = append(b.scaleUpPerMember, time.Since(begin)/2)

		pod, err := b.someFollower(ctx, ns)
		if err != nil {
			return err
		}
		if err := b.env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: objectMeta(ns, pod)}); err != nil {
			return err
		}
		if took, err = b.env.WaitHealed(ctx, ns, "etcd", settle); err != nil {
			return err
		}
		b.podDeleted = append(b.podDeleted, took)

		if pod, err = b.someFollower(ctx, ns); err != nil {
			return err
		}
		if err := b.env.Cluster.Agent().KillContainer(ns, pod, "etcd", syscall.SIGKILL); err != nil {
			return err
		}
		if took, err = b.env.WaitHealed(ctx, ns, "etcd", settle); err != nil {
			return err
		}
		b.processKilled = append(b.processKilled, took)
		if err := b.env.Client.Delete(ctx, &etcdv1.EtcdCluster{ObjectMeta: objectMeta(ns, "etcd")}); err != nil {
			return err
		}

		if took, err = b.createSettled(ctx, ns, "big", 5, newVersion); err != nil {
			return err
		}
		b.create5 = append(b.create5, took)
		if err := b.env.Client.Delete(ctx, &etcdv1.EtcdCluster{ObjectMeta: objectMeta(ns, "big")}); err != nil {
			return err
		}
		progress("run %d: create 3 %s, scale-up per member %s, pod deleted -> healthy %s, process killed -> healthy %s, create 5 %s",
			run+1, b.create3[run], b.scaleUpPerMember[run], b.podDeleted[run], b.processKilled[run], b.create5[run])
	}
	return nil
}

// upgrades rolls 3 members from 3.5 to 3.6 under a client load, once per run.
func (b *bench) upgrades(ctx context.Context) error {
	for run := range b.runs {
		ns := fmt.Sprintf("bench-upgrade-%d", run)
		if _, err := b.createSettled(ctx, ns, "etcd", 3, oldVersion); err != nil {
			return err
		}
		svc, err := b.env.ServiceEndpoint(ctx, ns, "etcd")
		if err != nil {
			return err
		}
		load, err := workload.Start(workload.Config{Endpoints: []string{"http://" + svc}, DialContext: b.env.DialContext, Pause: 10 * time.Millisecond})
		if err != nil {
			return err
		}
		time.Sleep(time.Second) // the load is running before the upgrade begins
		begin := time.Now()
		if err := b.env.Update(ctx, ns, "etcd", func(c *etcdv1.EtcdCluster) { c.Spec.Version = newVersion }); err != nil {
			return err
		}
		_, err = b.env.WaitSettled(ctx, ns, "etcd", settle)
		took := time.Since(begin)
		h := load.Stop()
		if err != nil {
			return err
		}
		if err := workload.Check(h, 2*time.Minute, "").Err(); err != nil {
			return fmt.Errorf("upgrade run %d: %w", run+1, err)
		}
		counts := h.Counts()
		failed := counts.Puts.Unknown + counts.Puts.Failed + counts.Gets.Failed
		b.upgrade = append(b.upgrade, took)
		b.upgradeFailedOps = append(b.upgradeFailedOps, failed)
		progress("run %d: upgrade %s, client operations %s", run+1, took, counts)
		if err := b.env.Client.Delete(ctx, &etcdv1.EtcdCluster{ObjectMeta: objectMeta(ns, "etcd")}); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) createSettled(ctx context.Context, ns, name string, size int32, version string) (time.Duration, error) {
	begin := time.Now()
	if err := b.env.Create(ctx, harness.NewCluster(ns, name, size, version, nil)); err != nil {
		return 0, err
	}
	if _, err := b.env.WaitSettled(ctx, ns, name, settle); err != nil {
		return 0, err
	}
	return time.Since(begin), nil
}

func (b *bench) someFollower(ctx context.Context, ns string) (string, error) {
	leader, err := b.env.Leader(ctx, ns, "etcd")
	if err != nil {
		return "", err
	}
	eps, err := b.env.MemberEndpoints(ctx, ns, "etcd")
	if err != nil {
		return "", err
	}
	for pod := range eps {
		if pod != leader {
			return pod, nil
		}
	}
	return "", fmt.Errorf("%s/etcd has no follower", ns)
}

func objectMeta(ns, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name}
}
