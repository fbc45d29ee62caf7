package v1alpha1_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/quorumkit/etcd-operator/operator/api/v1alpha1"
	"github.com/quorumkit/etcd-operator/operator/internal/testenv"
)

// These tests send EtcdClusters to a real kube-apiserver with the generated CRD installed, so they check
// the OpenAPI schema, the defaults and every CEL rule exactly as a cluster applies them.

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

const namespace = "default"

var serial atomic.Int32

// freshName returns a name no other case uses.
func freshName() string { return fmt.Sprintf("validation-%03d", serial.Add(1)) }

// validationCase is one object sent to the API server. The object starts as the minimal valid spec
// {size: 3, version: "3.6.7"}; spec edits it before the create. When update or patch is set, the create must
// succeed and the verdict is about the update that follows. want lists substrings the rejection must contain (the
// field and the fix); an empty want means the request must be accepted, after which check may inspect
// the stored object.
type validationCase struct {
	name    string
	spec    func(s *v1.EtcdClusterSpec)
	raw     map[string]any // instead of spec: the spec sent as written, for omitted fields and plain integers
	update  func(s *v1.EtcdClusterSpec)
	patch   string // instead of update: a JSON merge patch, for values the typed client cannot send
	want    []string
	notWant []string // substrings the rejection must not contain
	check   func(t *testing.T, got *v1.EtcdCluster)
}

func q(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }

func persistent(size string) v1.StorageSpec {
	return v1.StorageSpec{Kind: v1.StoragePersistent, Size: q(size)}
}

func persistentClass(size, class string) v1.StorageSpec {
	s := persistent(size)
	s.StorageClassName = ptr.To(class)
	return s
}

func version(v string) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) { s.Version = v }
}

func storage(st v1.StorageSpec) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) { s.Storage = st }
}

func tuning(e v1.EtcdTuning) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) { s.Etcd = e }
}

func compaction(mode v1.CompactionMode, retention string) func(*v1.EtcdClusterSpec) {
	return tuning(v1.EtcdTuning{AutoCompaction: &v1.AutoCompaction{Mode: mode, Retention: retention}})
}

func labels(l map[string]string) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) { s.Pod.Labels = l }
}

func annotations(a map[string]string) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) { s.Pod.Annotations = a }
}

func quota(v any) map[string]any {
	return map[string]any{"etcd": map[string]any{"quotaBackendBytes": v}}
}

// Fragments of the rules' messages.
const (
	sizeMsg        = "spec.size must be between 1 and 9"
	versionMsg     = "spec.version must be a supported etcd version 3.5.x or 3.6.x"
	versionFix     = "for example 3.6.7"
	downgradeMsg   = "spec.version: downgrades and minor-version skips are refused"
	downgradeFix   = "upgrade one minor version at a time"
	kindMsg        = "spec.storage.kind is immutable"
	sizeReqMsg     = "spec.storage.size is required when spec.storage.kind is Persistent, for example size: 8Gi"
	sizeZeroMsg    = "spec.storage.size must be greater than zero, for example 8Gi"
	classMsg       = "spec.storage.storageClassName is immutable"
	sizeImmutable  = "spec.storage.size is immutable for Persistent storage"
	classEphMsg    = "spec.storage.storageClassName applies only to kind Persistent; remove it or set kind: Persistent"
	retentionEph   = "spec.storage.retentionPolicy applies only to kind Persistent; remove it or set kind: Persistent"
	quotaMsg       = "spec.etcd.quotaBackendBytes must be between 16Mi and 100Gi, for example 8Gi"
	revisionMsg    = "spec.etcd.autoCompaction.retention must be a positive integer number of revisions when mode is Revision, for example 10000"
	periodicMsg    = "spec.etcd.autoCompaction.retention must be a duration when mode is Periodic, for example 1h or 30m"
	snapshotMsg    = "spec.etcd.snapshotCount must be between 1 and 10000000"
	heartbeatMsg   = "spec.etcd.heartbeatIntervalMillis must be between 10 and 5000"
	electionMsg    = "spec.etcd.electionTimeoutMillis must be between 50 and 50000"
	fiveTimesMsg   = "spec.etcd.electionTimeoutMillis must be at least 5 times spec.etcd.heartbeatIntervalMillis"
	labelMsg       = "spec.pod.labels must not use the reserved prefixes etcd.quorumkit.dev/ and app.kubernetes.io/; rename the label"
	annotationMsg  = "spec.pod.annotations must not use the reserved prefix etcd.quorumkit.dev/; rename the annotation"
	unsupportedMsg = "Unsupported value"
)

func cases() []validationCase {
	return []validationCase{
		// Size.
		{name: "size 0", spec: func(s *v1.EtcdClusterSpec) { s.Size = 0 }, want: []string{"spec.size", sizeMsg, "3, 5 or 7"}},
		{name: "size 10", spec: func(s *v1.EtcdClusterSpec) { s.Size = 10 }, want: []string{"spec.size", sizeMsg}},
		{name: "size -1", spec: func(s *v1.EtcdClusterSpec) { s.Size = -1 }, want: []string{"spec.size", sizeMsg}},
		{name: "size 1 and 9 accepted", spec: func(s *v1.EtcdClusterSpec) { s.Size = 1 },
			update: func(s *v1.EtcdClusterSpec) { s.Size = 9 }},
		{name: "size update to 0", update: func(s *v1.EtcdClusterSpec) { s.Size = 0 }, want: []string{"spec.size", sizeMsg}},

		// Version format.
		{name: "version v3.6.7", spec: version("v3.6.7"), want: []string{"spec.version", versionMsg, "without a leading v", versionFix}},
		{name: "version 3.4.0", spec: version("3.4.0"), want: []string{"spec.version", versionMsg, versionFix}},
		{name: "version 3.7.0", spec: version("3.7.0"), want: []string{"spec.version", versionMsg, versionFix}},
		{name: "version 4.0.0", spec: version("4.0.0"), want: []string{"spec.version", versionMsg, versionFix}},
		{name: "version 3.6", spec: version("3.6"), want: []string{"spec.version", versionMsg, "MAJOR.MINOR.PATCH"}},
		{name: "version latest", spec: version("latest"), want: []string{"spec.version", versionMsg, versionFix}},
		{name: "version 3.6.07", spec: version("3.6.07"), want: []string{"spec.version", versionMsg}},
		{name: "version 3.6.7-rc.0", spec: version("3.6.7-rc.0"), want: []string{"spec.version", versionMsg}},
		// The typed client always sends version (no omitempty), so an unset Go field is "" and refused;
		// only an omitted field is defaulted (see "omitted version and size default").
		{name: "version empty string", spec: version(""), want: []string{"spec.version", versionMsg}},
		{name: "version too long", spec: version("3.6." + strings.Repeat("1", 40)), want: []string{"spec.version", "Too long", "32"}},
		{name: "version 3.5.0 accepted", spec: version("3.5.0")},
		{name: "version 3.6.123 accepted", spec: version("3.6.123")},
		// A patch too large for CEL's int could not be ordered by the downgrade rule.
		{name: "version with 20-digit patch", spec: version("3.6.99999999999999999999"), want: []string{"spec.version", versionMsg}},

		// Version changes.
		{name: "downgrade 3.6.7 to 3.6.5", update: version("3.6.5"), want: []string{"spec.version", downgradeMsg, downgradeFix, "never to a lower version"}},
		{name: "downgrade 3.6.7 to 3.5.21", update: version("3.5.21"), want: []string{"spec.version", downgradeMsg, downgradeFix}},
		{name: "downgrade 3.6.10 to 3.6.9 (numeric, not lexical)", spec: version("3.6.10"), update: version("3.6.9"), want: []string{downgradeMsg}},
		// A malformed new version gets the format message only, not an error from the ordering rule.
		{name: "update to latest", update: version("latest"), want: []string{"spec.version", versionMsg}, notWant: []string{downgradeMsg}},
		{name: "update to 3.6", update: version("3.6"), want: []string{"spec.version", versionMsg}, notWant: []string{downgradeMsg}},
		{name: "update to v3.6.8", update: version("v3.6.8"), want: []string{"spec.version", versionMsg}, notWant: []string{downgradeMsg}},
		{name: "update to empty", update: version(""), want: []string{"spec.version", versionMsg}, notWant: []string{downgradeMsg}},
		{name: "update to 4.0.0", update: version("4.0.0"), want: []string{"spec.version", versionMsg}},
		{name: "update to 20-digit patch", update: version("3.6.99999999999999999999"), want: []string{"spec.version", versionMsg}},
		{name: "upgrade 3.5.21 to 3.7.0 refused by format", spec: version("3.5.21"), update: version("3.7.0"), want: []string{"spec.version", versionMsg}},
		{name: "upgrade 3.5.21 to 3.6.7", spec: version("3.5.21"), update: version("3.6.7"),
			check: func(t *testing.T, got *v1.EtcdCluster) { wantEqual(t, "spec.version", got.Spec.Version, "3.6.7") }},
		{name: "upgrade 3.5.21 to 3.6.0 (lower patch, next minor)", spec: version("3.5.21"), update: version("3.6.0")},
		{name: "patch upgrade 3.6.5 to 3.6.7", spec: version("3.6.5"), update: version("3.6.7")},
		{name: "patch upgrade 3.6.9 to 3.6.10 (numeric, not lexical)", spec: version("3.6.9"), update: version("3.6.10")},
		{name: "patch upgrade 3.5.0 to 3.5.21", spec: version("3.5.0"), update: version("3.5.21")},
		{name: "same version, other change", update: func(s *v1.EtcdClusterSpec) { s.Size = 5; s.Paused = true }},

		// Storage on create.
		{name: "storage kind Local", spec: storage(v1.StorageSpec{Kind: "Local"}), want: []string{"spec.storage.kind", unsupportedMsg, `"Ephemeral", "Persistent"`}},
		{name: "persistent without size", spec: storage(v1.StorageSpec{Kind: v1.StoragePersistent}), want: []string{"spec.storage", sizeReqMsg}},
		{name: "persistent size 0", spec: storage(persistent("0")), want: []string{"spec.storage.size", sizeZeroMsg}},
		{name: "persistent size -1Gi", spec: storage(persistent("-1Gi")), want: []string{"spec.storage.size", sizeZeroMsg}},
		{name: "ephemeral size 0", spec: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, Size: q("0")}), want: []string{"spec.storage.size", sizeZeroMsg}},
		{name: "ephemeral with storageClassName", spec: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, StorageClassName: ptr.To("fast")}),
			want: []string{"spec.storage", classEphMsg}},
		{name: "ephemeral with retentionPolicy", spec: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, RetentionPolicy: &v1.PVCRetentionPolicy{WhenDeleted: v1.PVCDelete}}),
			want: []string{"spec.storage", retentionEph}},
		{name: "default kind with storageClassName", spec: storage(v1.StorageSpec{StorageClassName: ptr.To("fast")}),
			want: []string{"spec.storage", classEphMsg}},
		{name: "retention whenScaled Keep", spec: storage(v1.StorageSpec{Kind: v1.StoragePersistent, Size: q("1Gi"), RetentionPolicy: &v1.PVCRetentionPolicy{WhenScaled: "Keep"}}),
			want: []string{"spec.storage.retentionPolicy.whenScaled", unsupportedMsg, `"Delete", "Retain"`}},
		{name: "retention whenDeleted delete (case)", spec: storage(v1.StorageSpec{Kind: v1.StoragePersistent, Size: q("1Gi"), RetentionPolicy: &v1.PVCRetentionPolicy{WhenDeleted: "delete"}}),
			want: []string{"spec.storage.retentionPolicy.whenDeleted", unsupportedMsg}},
		{name: "storage size not a quantity", raw: map[string]any{"storage": map[string]any{"kind": "Persistent", "size": "8 GB"}},
			want: []string{"spec.storage.size", "should match"}},
		{name: "storage kind defaults to Ephemeral",
			check: func(t *testing.T, got *v1.EtcdCluster) {
				wantEqual(t, "spec.storage.kind", got.Spec.Storage.Kind, v1.StorageEphemeral)
			}},
		{name: "persistent retention defaults", spec: storage(v1.StorageSpec{Kind: v1.StoragePersistent, Size: q("8Gi"), RetentionPolicy: &v1.PVCRetentionPolicy{}}),
			check: func(t *testing.T, got *v1.EtcdCluster) {
				wantEqual(t, "whenScaled", got.Spec.Storage.RetentionPolicy.WhenScaled, v1.PVCDelete)
				wantEqual(t, "whenDeleted", got.Spec.Storage.RetentionPolicy.WhenDeleted, v1.PVCRetain)
			}},
		{name: "ephemeral with size limit accepted", spec: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, Size: q("1Gi")})},

		// Storage changes.
		{name: "kind Ephemeral to Persistent", update: storage(persistent("8Gi")), want: []string{"spec.storage", kindMsg, "backup and restore"}},
		{name: "kind Persistent to Ephemeral", spec: storage(persistent("8Gi")), update: storage(v1.StorageSpec{Kind: v1.StorageEphemeral}),
			want: []string{"spec.storage", kindMsg}},
		{name: "storageClassName changed", spec: storage(persistentClass("8Gi", "fast")), update: storage(persistentClass("8Gi", "slow")),
			want: []string{"spec.storage", classMsg, "create a new EtcdCluster"}},
		{name: "storageClassName added", spec: storage(persistent("8Gi")), update: storage(persistentClass("8Gi", "fast")), want: []string{classMsg}},
		{name: "storageClassName removed", spec: storage(persistentClass("8Gi", "fast")), update: storage(persistent("8Gi")), want: []string{classMsg}},
		{name: "persistent size changed", spec: storage(persistent("8Gi")), update: storage(persistent("16Gi")),
			want: []string{"spec.storage", sizeImmutable, "volume expansion is not supported"}},
		{name: "persistent size removed", spec: storage(persistent("8Gi")), update: storage(v1.StorageSpec{Kind: v1.StoragePersistent}), want: []string{sizeReqMsg}},
		{name: "persistent size changed to a non-quantity", spec: storage(persistent("8Gi")),
			patch: `{"spec":{"storage":{"size":"8 GB"}}}`, want: []string{"spec.storage.size", "should match"}},
		{name: "persistent size rewritten as equal quantity", spec: storage(persistent("8Gi")), update: storage(persistent("8192Mi"))},
		{name: "ephemeral size limit changed", spec: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, Size: q("1Gi")}),
			update: storage(v1.StorageSpec{Kind: v1.StorageEphemeral, Size: q("2Gi")})},
		{name: "retention policy changed", spec: storage(v1.StorageSpec{Kind: v1.StoragePersistent, Size: q("8Gi"), RetentionPolicy: &v1.PVCRetentionPolicy{WhenDeleted: v1.PVCRetain}}),
			update: storage(v1.StorageSpec{Kind: v1.StoragePersistent, Size: q("8Gi"), RetentionPolicy: &v1.PVCRetentionPolicy{WhenDeleted: v1.PVCDelete}})},

		// Tuning.
		{name: "quota 1Mi", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("1Mi")}), want: []string{"spec.etcd.quotaBackendBytes", quotaMsg}},
		{name: "quota 200Gi", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("200Gi")}), want: []string{"spec.etcd.quotaBackendBytes", quotaMsg}},
		{name: "quota one byte under 16Mi", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("16777215")}), want: []string{quotaMsg}},
		{name: "quota 16Mi accepted", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("16Mi")})},
		{name: "quota 100Gi accepted", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("100Gi")})},
		{name: "quota 0.5Gi accepted", spec: tuning(v1.EtcdTuning{QuotaBackendBytes: q("0.5Gi")})},
		{name: "quota not a quantity", raw: map[string]any{"size": 3, "version": "3.6.7", "etcd": map[string]any{"quotaBackendBytes": "8 GB"}},
			want: []string{"spec.etcd.quotaBackendBytes", "should match"}},
		{name: "quota plain integer 8589934592 accepted", raw: quota(int64(8589934592)),
			check: func(t *testing.T, got *v1.EtcdCluster) {
				if got.Spec.Etcd.QuotaBackendBytes == nil || got.Spec.Etcd.QuotaBackendBytes.Cmp(resource.MustParse("8Gi")) != 0 {
					t.Errorf("spec.etcd.quotaBackendBytes = %v, want 8Gi", got.Spec.Etcd.QuotaBackendBytes)
				}
			}},
		{name: "quota plain integer 1048576", raw: quota(int64(1048576)), want: []string{"spec.etcd.quotaBackendBytes", quotaMsg}},
		{name: "compaction Revision 1h", spec: compaction(v1.CompactionRevision, "1h"), want: []string{"spec.etcd.autoCompaction", revisionMsg}},
		{name: "compaction Revision 0", spec: compaction(v1.CompactionRevision, "0"), want: []string{revisionMsg}},
		// etcd parses the retention into an int64; a value that overflows it stops etcd from starting.
		{name: "compaction Revision 19 digits", spec: compaction(v1.CompactionRevision, "9999999999999999999"), want: []string{revisionMsg}},
		{name: "compaction Revision 18 digits accepted", spec: compaction(v1.CompactionRevision, "999999999999999999")},
		{name: "compaction Periodic overflowing hours", spec: compaction(v1.CompactionPeriodic, "99999999999999h"), want: []string{periodicMsg}},
		{name: "compaction Periodic 5 components of 99999h accepted", spec: compaction(v1.CompactionPeriodic, "99999h99999h99999h99999h99999h")},
		{name: "compaction Revision 10000 accepted", spec: compaction(v1.CompactionRevision, "10000")},
		{name: "compaction Periodic abc", spec: compaction(v1.CompactionPeriodic, "abc"), want: []string{"spec.etcd.autoCompaction", periodicMsg}},
		{name: "compaction Periodic 10 (no unit)", spec: compaction(v1.CompactionPeriodic, "10"), want: []string{periodicMsg}},
		{name: "compaction Periodic empty", spec: compaction(v1.CompactionPeriodic, ""), want: []string{periodicMsg}},
		{name: "compaction Periodic 0s", spec: compaction(v1.CompactionPeriodic, "0s"), want: []string{"spec.etcd.autoCompaction.retention must be longer than zero", "remove spec.etcd.autoCompaction"}},
		{name: "compaction Periodic 0h0.0m", spec: compaction(v1.CompactionPeriodic, "0h0.0m"), want: []string{"must be longer than zero"}},
		{name: "compaction Periodic 0h30m accepted", spec: compaction(v1.CompactionPeriodic, "0h30m")},
		{name: "compaction Periodic 30m accepted", spec: compaction(v1.CompactionPeriodic, "30m")},
		{name: "compaction Periodic 1h30m accepted", spec: compaction(v1.CompactionPeriodic, "1h30m")},
		{name: "compaction Periodic 1.5h accepted", spec: compaction(v1.CompactionPeriodic, "1.5h")},
		{name: "compaction mode Hourly", spec: compaction("Hourly", "1h"), want: []string{"spec.etcd.autoCompaction.mode", unsupportedMsg, `"Periodic", "Revision"`}},
		{name: "compaction without mode", raw: map[string]any{"etcd": map[string]any{"autoCompaction": map[string]any{"retention": "1h"}}},
			want: []string{"spec.etcd.autoCompaction.mode", "Required value"}},
		{name: "snapshotCount 0", spec: tuning(v1.EtcdTuning{SnapshotCount: ptr.To[int64](0)}), want: []string{"spec.etcd.snapshotCount", snapshotMsg}},
		{name: "snapshotCount 10000001", spec: tuning(v1.EtcdTuning{SnapshotCount: ptr.To[int64](10000001)}), want: []string{snapshotMsg}},
		{name: "heartbeat 5", spec: tuning(v1.EtcdTuning{HeartbeatIntervalMillis: ptr.To[int32](5)}), want: []string{"spec.etcd.heartbeatIntervalMillis", heartbeatMsg}},
		{name: "heartbeat 5001", spec: tuning(v1.EtcdTuning{HeartbeatIntervalMillis: ptr.To[int32](5001), ElectionTimeoutMillis: ptr.To[int32](50000)}), want: []string{heartbeatMsg}},
		{name: "election 40", spec: tuning(v1.EtcdTuning{ElectionTimeoutMillis: ptr.To[int32](40), HeartbeatIntervalMillis: ptr.To[int32](10)}),
			want: []string{"spec.etcd.electionTimeoutMillis", electionMsg}},
		{name: "election 50001", spec: tuning(v1.EtcdTuning{ElectionTimeoutMillis: ptr.To[int32](50001)}), want: []string{electionMsg}},
		{name: "heartbeat 300 with default election", spec: tuning(v1.EtcdTuning{HeartbeatIntervalMillis: ptr.To[int32](300)}),
			want: []string{"spec.etcd", fiveTimesMsg, "1000 and 100"}},
		{name: "election 400 with default heartbeat", spec: tuning(v1.EtcdTuning{ElectionTimeoutMillis: ptr.To[int32](400)}), want: []string{fiveTimesMsg}},
		{name: "election 1499 heartbeat 300", spec: tuning(v1.EtcdTuning{HeartbeatIntervalMillis: ptr.To[int32](300), ElectionTimeoutMillis: ptr.To[int32](1499)}),
			want: []string{fiveTimesMsg}},
		{name: "election 1500 heartbeat 300 accepted", spec: tuning(v1.EtcdTuning{HeartbeatIntervalMillis: ptr.To[int32](300), ElectionTimeoutMillis: ptr.To[int32](1500)})},
		{name: "election 500 with default heartbeat accepted", spec: tuning(v1.EtcdTuning{ElectionTimeoutMillis: ptr.To[int32](500)})},
		{name: "tuning bounds accepted", spec: tuning(v1.EtcdTuning{SnapshotCount: ptr.To[int64](1), HeartbeatIntervalMillis: ptr.To[int32](10), ElectionTimeoutMillis: ptr.To[int32](50)})},

		// Reserved label and annotation prefixes.
		{name: "label etcd.quorumkit.dev/", spec: labels(map[string]string{"etcd.quorumkit.dev/member": "x"}), want: []string{"spec.pod.labels", labelMsg}},
		{name: "label app.kubernetes.io/", spec: labels(map[string]string{"team": "a", "app.kubernetes.io/name": "etcd"}), want: []string{"spec.pod.labels", labelMsg}},
		{name: "annotation etcd.quorumkit.dev/", spec: annotations(map[string]string{"etcd.quorumkit.dev/x": "y"}), want: []string{"spec.pod.annotations", annotationMsg}},
		{name: "label and annotation accepted", spec: func(s *v1.EtcdClusterSpec) {
			s.Pod.Labels = map[string]string{"team": "a", "example.com/etcd.quorumkit.dev": "b"}
			s.Pod.Annotations = map[string]string{"app.kubernetes.io/managed-by": "me"}
		}},

		// Good specs and defaults.
		{name: "minimal spec accepted", check: func(t *testing.T, got *v1.EtcdCluster) {
			wantEqual(t, "spec.size", got.Spec.Size, int32(3))
			wantEqual(t, "spec.version", got.Spec.Version, "3.6.7")
		}},
		{name: "omitted version and size default", raw: map[string]any{},
			check: func(t *testing.T, got *v1.EtcdCluster) {
				wantEqual(t, "spec.size", got.Spec.Size, int32(3))
				wantEqual(t, "spec.version", got.Spec.Version, "3.6.7")
				wantEqual(t, "spec.storage.kind", got.Spec.Storage.Kind, v1.StorageEphemeral)
			}},
		{name: "omitted version defaults", raw: map[string]any{"size": 5},
			check: func(t *testing.T, got *v1.EtcdCluster) {
				wantEqual(t, "spec.size", got.Spec.Size, int32(5))
				wantEqual(t, "spec.version", got.Spec.Version, "3.6.7")
			}},
		{name: "storage without kind defaults to Ephemeral", raw: map[string]any{"storage": map[string]any{"size": "1Gi"}},
			check: func(t *testing.T, got *v1.EtcdCluster) {
				wantEqual(t, "spec.storage.kind", got.Spec.Storage.Kind, v1.StorageEphemeral)
			}},
		{name: "persistent size as plain integer accepted", raw: map[string]any{"storage": map[string]any{"kind": "Persistent", "size": int64(8589934592)}}},
		{name: "full spec accepted", spec: fullSpec, check: func(t *testing.T, got *v1.EtcdCluster) {
			want := &v1.EtcdCluster{}
			fullSpec(&want.Spec)
			wantEqual(t, "spec.size", got.Spec.Size, want.Spec.Size)
			wantEqual(t, "spec.version", got.Spec.Version, want.Spec.Version)
			wantEqual(t, "spec.storage.storageClassName", *got.Spec.Storage.StorageClassName, "fast")
			wantEqual(t, "spec.storage.retentionPolicy", *got.Spec.Storage.RetentionPolicy, *want.Spec.Storage.RetentionPolicy)
			wantEqual(t, "spec.etcd.autoCompaction", *got.Spec.Etcd.AutoCompaction, *want.Spec.Etcd.AutoCompaction)
			wantEqual(t, "spec.etcd.electionTimeoutMillis", *got.Spec.Etcd.ElectionTimeoutMillis, int32(2500))
			wantEqual(t, "spec.pod.priorityClassName", got.Spec.Pod.PriorityClassName, "etcd-critical")
			wantEqual(t, "spec.pod.tolerations", len(got.Spec.Pod.Tolerations), 1)
			wantEqual(t, "spec.pod.topologySpreadConstraints", len(got.Spec.Pod.TopologySpreadConstraints), 1)
			wantEqual(t, "spec.paused", got.Spec.Paused, true)
		}},
		{name: "full spec update of every mutable field", spec: fullSpec, update: func(s *v1.EtcdClusterSpec) {
			s.Size, s.Version, s.Paused = 7, "3.6.7", false
			s.Storage.RetentionPolicy = &v1.PVCRetentionPolicy{WhenScaled: v1.PVCDelete, WhenDeleted: v1.PVCDelete}
			s.Pod.PriorityClassName = "other"
			s.Pod.Labels = map[string]string{"team": "b"}
			s.Etcd = v1.EtcdTuning{QuotaBackendBytes: q("4Gi"), AutoCompaction: &v1.AutoCompaction{Mode: v1.CompactionRevision, Retention: "5000"}}
		}},
	}
}

// fullSpec sets every field of the spec to a valid, non-default value.
func fullSpec(s *v1.EtcdClusterSpec) {
	*s = v1.EtcdClusterSpec{
		Size:    5,
		Version: "3.5.21",
		Storage: v1.StorageSpec{
			Kind:             v1.StoragePersistent,
			Size:             q("8Gi"),
			StorageClassName: ptr.To("fast"),
			RetentionPolicy:  &v1.PVCRetentionPolicy{WhenScaled: v1.PVCRetain, WhenDeleted: v1.PVCDelete},
		},
		Pod: v1.PodSettings{
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}},
				}}},
			}},
			Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}},
			NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
			}},
			PriorityClassName: "etcd-critical",
			Labels:            map[string]string{"team": "storage"},
			Annotations:       map[string]string{"example.com/owner": "storage"},
		},
		Etcd: v1.EtcdTuning{
			QuotaBackendBytes:       q("8Gi"),
			AutoCompaction:          &v1.AutoCompaction{Mode: v1.CompactionPeriodic, Retention: "1h"},
			SnapshotCount:           ptr.To[int64](50000),
			HeartbeatIntervalMillis: ptr.To[int32](250),
			ElectionTimeoutMillis:   ptr.To[int32](2500),
		},
		Paused: true,
	}
}

func TestValidation(t *testing.T) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			name := freshName()
			var err error
			if c.raw != nil {
				err = env.Client.Create(ctx, rawCluster(name, c.raw))
			} else {
				obj := &v1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
					Spec: v1.EtcdClusterSpec{Size: 3, Version: "3.6.7"}}
				if c.spec != nil {
					c.spec(&obj.Spec)
				}
				err = env.Client.Create(ctx, obj)
			}
			if c.update != nil || c.patch != "" {
				if err != nil {
					t.Fatalf("create before the update was refused: %v", err)
				}
				obj := get(t, name)
				if c.patch != "" {
					err = env.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(c.patch)))
				} else {
					c.update(&obj.Spec)
					err = env.Client.Update(ctx, obj)
				}
			}
			if len(c.want) > 0 {
				wantRejected(t, err, c.want...)
				for _, w := range c.notWant {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error contains %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("refused, want accepted: %v", err)
			}
			if c.check != nil {
				c.check(t, get(t, name))
			}
		})
	}
}

// TestScaleSubresource checks that the /scale subresource, which autoscalers and `kubectl scale` use,
// is bound by the same rule as spec.size.
func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	obj := &v1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: freshName(), Namespace: namespace},
		Spec: v1.EtcdClusterSpec{Size: 3, Version: "3.6.7"}}
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	scale := func(replicas int32) error {
		s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		return env.Client.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(s))
	}
	for _, replicas := range []int32{0, 10} {
		wantRejected(t, scale(replicas), "spec.size", sizeMsg)
		wantEqual(t, fmt.Sprintf("spec.size after refused scale to %d", replicas), get(t, obj.Name).Spec.Size, int32(3))
	}
	if err := scale(5); err != nil {
		t.Fatalf("scale to 5 refused: %v", err)
	}
	wantEqual(t, "spec.size after scale to 5", get(t, obj.Name).Spec.Size, int32(5))
}

func rawCluster(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(),
		"kind":       "EtcdCluster",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec":       spec,
	}}
}

func get(t *testing.T, name string) *v1.EtcdCluster {
	t.Helper()
	obj := &v1.EtcdCluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	return obj
}

// wantRejected checks that err is an Invalid error containing every fragment of want, and that every
// cause names the spec field it is about: the house rule is that each error names the field and the fix.
func wantRejected(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want refused with %q", want)
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) || status.ErrStatus.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("error is not Invalid: %v", err)
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not contain %q:\n%s", w, msg)
		}
	}
	if status.ErrStatus.Details == nil || len(status.ErrStatus.Details.Causes) == 0 {
		t.Fatalf("error has no causes: %v", err)
	}
	for _, c := range status.ErrStatus.Details.Causes {
		if c.Field == "<nil>" && strings.Contains(c.Message, "some validation rules were not checked") {
			continue // the API server's notice that schema errors kept the CEL rules from running
		}
		// The scale subresource's own check reports its path with a leading dot (".spec.size").
		if !strings.HasPrefix(strings.TrimPrefix(c.Field, "."), "spec") || !strings.Contains(c.Field+": "+c.Message, "spec.") {
			t.Errorf("cause does not name a spec field: field %q, message %q", c.Field, c.Message)
		}
		// A CEL rule that fails to evaluate reports "<error> evaluating rule: <message>".
		if strings.Contains(c.Message, "evaluating rule") {
			t.Errorf("a rule failed to evaluate instead of refusing cleanly: %s: %s\nfull error: %v", c.Field, c.Message, err)
		}
	}
}

func wantEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
