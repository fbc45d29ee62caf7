package node

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestSecurityIDs(t *testing.T) {
	img := Image{User: 0, Group: 0}
	nonroot := Image{User: 65532, Group: 65532}
	for name, tc := range map[string]struct {
		pod     *corev1.PodSecurityContext
		ctr     *corev1.SecurityContext
		img     Image
		want    ids
		wantErr string
	}{
		"image default":  {img: nonroot, want: ids{uid: 65532, gid: 65532}},
		"pod overrides":  {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000)}, img: img, want: ids{uid: 1000, gid: 2000}},
		"container wins": {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}, ctr: &corev1.SecurityContext{RunAsUser: ptr.To[int64](7)}, img: img, want: ids{uid: 7}},
		"groups and fsGroup": {pod: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1), SupplementalGroups: []int64{5, 6}, FSGroup: ptr.To[int64](6)},
			img: img, want: ids{uid: 1, groups: []uint32{5, 6}}},
		"fsGroup joins": {pod: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](65532)}, img: nonroot, want: ids{uid: 65532, gid: 65532, groups: []uint32{65532}}},
		"runAsNonRoot refuses root": {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, img: img,
			wantErr: "container has runAsNonRoot and image will run as root"},
		"runAsNonRoot on the container": {ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}, img: nonroot,
			wantErr: "runAsNonRoot"},
		"runAsNonRoot satisfied":       {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)}, img: img, want: ids{uid: 65532}},
		"container lifts runAsNonRoot": {pod: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}, ctr: &corev1.SecurityContext{RunAsNonRoot: ptr.To(false)}, img: img},
	} {
		pod := testPod()
		pod.Spec.SecurityContext = tc.pod
		c := &corev1.Container{Name: "etcd", SecurityContext: tc.ctr}
		got, err := securityIDs(pod, c, tc.img)
		if tc.wantErr != "" {
			var cfg *configError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !asConfigError(err, &cfg) {
				t.Errorf("%s: err %v, want a configError with %q", name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, tc.want)
		}
	}
}

func TestUnsupported(t *testing.T) {
	if r, _ := unsupported(testPod()); r != "" {
		t.Fatalf("a plain pod is unsupported: %s", r)
	}
	pod := testPod()
	pod.Spec.HostNetwork = true
	if r, msg := unsupported(pod); r != "UnsupportedByLocalcluster" || !strings.Contains(msg, "spec.hostNetwork") {
		t.Errorf("hostNetwork: %s %s", r, msg)
	}
	pod = testPod()
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
	if _, msg := unsupported(pod); !strings.Contains(msg, "hostPort 8080") {
		t.Errorf("hostPort: %s", msg)
	}
}
