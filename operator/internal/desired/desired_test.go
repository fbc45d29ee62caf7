package desired

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func minimal() *etcdv1.EtcdCluster {
	return &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "1111-2222"},
		Spec:       etcdv1.EtcdClusterSpec{Size: 3, Version: "3.6.7", Storage: etcdv1.StorageSpec{Kind: etcdv1.StorageEphemeral}},
	}
}

func full() *etcdv1.EtcdCluster {
	c := minimal()
	c.Spec.Size = 5
	c.Spec.Storage = etcdv1.StorageSpec{Kind: etcdv1.StoragePersistent, Size: ptr.To(resource.MustParse("8Gi")),
		StorageClassName: ptr.To("fast"), RetentionPolicy: &etcdv1.PVCRetentionPolicy{WhenScaled: etcdv1.PVCDelete, WhenDeleted: etcdv1.PVCDelete}}
	c.Spec.Pod = etcdv1.PodSettings{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
		Tolerations:               []corev1.Toleration{{Key: "dedicated", Value: "etcd", Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector:              map[string]string{"disk": "ssd"},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway}},
		PriorityClassName:         "etcd-critical",
		Labels:                    map[string]string{"team": "platform"},
		Annotations:               map[string]string{"prometheus.io/scrape": "true"},
	}
	c.Spec.Etcd = etcdv1.EtcdTuning{QuotaBackendBytes: ptr.To(resource.MustParse("8Gi")),
		AutoCompaction: &etcdv1.AutoCompaction{Mode: etcdv1.CompactionRevision, Retention: "10000"},
		SnapshotCount:  ptr.To[int64](5000), HeartbeatIntervalMillis: ptr.To[int32](200), ElectionTimeoutMillis: ptr.To[int32](2000)}
	return c
}

func TestGolden(t *testing.T) {
	cfg := DefaultConfig()
	bootstrap := Member{Name: "demo-0", InitialState: "new", InitialCluster: "demo-0=a,demo-1=b,demo-2=c"}
	joiner := Member{Name: "demo-5", InitialState: "existing", InitialCluster: "demo-0=a,demo-5=f"}
	cases := map[string]any{
		"pod-minimal-bootstrap": MemberPod(minimal(), cfg, bootstrap),
		"pod-full-joiner":       MemberPod(full(), cfg, joiner),
		"pvc-full":              MemberPVC(full(), "demo-5"),
		"service-peer":          PeerService(minimal()),
		"service-client":        ClientService(minimal()),
		"pdb-5":                 PodDisruptionBudget(full()),
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./operator/internal/desired -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("%s differs from %s; if the change is intended, run with -update.\ngot:\n%s", name, path, got)
			}
		})
	}
}

func TestPDBKeepsQuorum(t *testing.T) {
	for size, want := range map[int32]int{1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 7: 3} {
		c := minimal()
		c.Spec.Size = size
		if got := PodDisruptionBudget(c).Spec.MaxUnavailable.IntValue(); got != want {
			t.Errorf("size %d: maxUnavailable %d, want %d", size, got, want)
		}
	}
}

func TestConfigHashTracksSettingsNotVersion(t *testing.T) {
	base := ConfigHash(minimal())
	v := minimal()
	v.Spec.Version = "3.6.8"
	v.Spec.Size = 5
	if ConfigHash(v) != base {
		t.Error("version or size changed the config hash: they must not recreate Pods")
	}
	tuned := minimal()
	tuned.Spec.Etcd.SnapshotCount = ptr.To[int64](1)
	res := minimal()
	res.Spec.Pod.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	for name, c := range map[string]*etcdv1.EtcdCluster{"tuning": tuned, "resources": res} {
		if ConfigHash(c) == base {
			t.Errorf("%s change did not change the config hash", name)
		}
	}
}

func TestUserLabelsCannotOverrideReserved(t *testing.T) {
	c := minimal()
	c.Spec.Pod.Labels = map[string]string{etcdv1.LabelCluster: "other", "team": "a"}
	p := MemberPod(c, DefaultConfig(), Member{Name: "demo-0", InitialState: "new"})
	if p.Labels[etcdv1.LabelCluster] != "demo" || p.Labels["team"] != "a" {
		t.Fatalf("labels = %v", p.Labels)
	}
}

func TestDefaultRequestsOnlyWhereUnset(t *testing.T) {
	got := resources(corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
	if _, ok := got.Requests[corev1.ResourceCPU]; ok {
		t.Error("a CPU request was added beside a CPU limit (the API server defaults it to the limit)")
	}
	if got.Requests.Memory().String() != "128Mi" {
		t.Errorf("memory request = %s, want 128Mi", got.Requests.Memory())
	}
}

func TestTuningFlags(t *testing.T) {
	args := EtcdArgs(full(), DefaultConfig(), Member{Name: "demo-0", InitialState: "new"})
	for _, want := range []string{"--quota-backend-bytes=8589934592", "--auto-compaction-mode=revision", "--auto-compaction-retention=10000",
		"--snapshot-count=5000", "--heartbeat-interval=200", "--election-timeout=2000", "--initial-cluster-token=1111-2222",
		"--advertise-client-urls=http://demo-0.demo-peer.db.svc.cluster.local:2379"} {
		if !slices.Contains(args, want) {
			t.Errorf("missing %s in %v", want, args)
		}
	}
}

func TestRetentionPolicy(t *testing.T) {
	c := minimal()
	if PVCOwned(c) || !DeletePVCOnScaleDown(c) {
		t.Error("defaults: claims are kept with the cluster and deleted on scale-down")
	}
	if !PVCOwned(full()) || MemberPVC(full(), "demo-1").OwnerReferences == nil {
		t.Error("whenDeleted: Delete must make the cluster own its claims")
	}
	c.Spec.Storage.RetentionPolicy = &etcdv1.PVCRetentionPolicy{WhenScaled: etcdv1.PVCRetain}
	if DeletePVCOnScaleDown(c) {
		t.Error("whenScaled: Retain must keep claims")
	}
}
