package node

import (
	"context"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// mapSource serves ConfigMaps and Secrets from maps, answering NotFound like the apiserver.
type mapSource struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (m mapSource) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := m.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (m mapSource) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if s, ok := m.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-0", Namespace: "db", UID: "uid-1",
			Labels: map[string]string{"app": "etcd", "b": "x\"y"}, Annotations: map[string]string{"note": "hi"}},
		Spec: corev1.PodSpec{NodeName: "node-a", ServiceAccountName: "sa", Containers: []corev1.Container{{Name: "etcd",
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			}}}},
	}
}

func TestResolveEnv(t *testing.T) {
	src := mapSource{
		cms:     map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"LEVEL": "debug", "dotted.name-ok": "kept", "PORT": "2379"}}},
		secrets: map[string]*corev1.Secret{"creds": {Data: map[string][]byte{"password": []byte("s3cret")}}},
	}
	pc := podContext{pod: testPod(), podIP: netip.MustParseAddr("10.244.1.2"), hostIP: netip.MustParseAddr("10.244.0.1"),
		allocatable: nodeAllocatable}
	c := &corev1.Container{Name: "etcd", Resources: pc.pod.Spec.Containers[0].Resources,
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}, Prefix: "CFG_"},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		Env: []corev1.EnvVar{
			{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "URL", Value: "http://$(POD_IP):$(PORT)/$(NAME)?svc=$(KUBERNETES_SERVICE_HOST)&later=$(LATER)&esc=$$(NAME)"},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "LATER", Value: "x"},
			{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU_LIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "CPU_REQ_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "CPU_REQ", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "missing"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "LEVEL", Value: "info"},                   // env overrides envFrom
			{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"}, // and the service variables
		},
	}
	env, err := resolveEnv(context.Background(), pc, c, kubernetesServiceEnv(netip.MustParseAddrPort("10.96.0.1:443")), src)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range env {
		if _, dup := got[e.Name]; dup {
			t.Errorf("%s set twice", e.Name)
		}
		got[e.Name] = e.Value
	}
	want := map[string]string{
		"CFG_LEVEL": "debug", "CFG_PORT": "2379", "LEVEL": "info", "PORT": "2379",
		"CFG_dotted.name-ok": "kept", "dotted.name-ok": "kept", // names are relaxed since Kubernetes 1.34
		"NAME": "demo-0",
		// POD_IP and LATER are defined after URL: left unexpanded, as kubelet does.
		"URL":    "http://$(POD_IP):2379/demo-0?svc=10.96.0.1&later=$(LATER)&esc=$(NAME)",
		"POD_IP": "10.244.1.2", "LATER": "x", "APP": "etcd", "HOST_IP": "10.244.0.1",
		"MEM_MI": "2048", "CPU_LIMIT": "4", "CPU_REQ_M": "250", "CPU_REQ": "1",
		"PASSWORD":                      "s3cret",
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "6443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected %s=%q", k, got[k])
			}
		}
	}
	argv := expandArgv([]string{"/usr/local/bin/etcd", "--name=$(NAME)", "--x=$(NOPE)"}, env)
	if !reflect.DeepEqual(argv, []string{"/usr/local/bin/etcd", "--name=demo-0", "--x=$(NOPE)"}) {
		t.Errorf("argv = %q", argv)
	}
}

func TestResolveEnvErrors(t *testing.T) {
	pc := podContext{pod: testPod()}
	src := mapSource{cms: map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"a": "1"}}}}
	ref := func(name, key string, optional *bool) corev1.EnvVar {
		return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: optional}}}
	}
	for name, tc := range map[string]struct {
		env  corev1.EnvVar
		want string // "" means no error and V unset
	}{
		"missing configmap":          {ref("nope", "a", nil), `configmaps "nope" not found`},
		"missing key":                {ref("cfg", "b", nil), "couldn't find key b in ConfigMap db/cfg"},
		"optional missing key":       {ref("cfg", "b", ptr.To(true)), ""},
		"optional missing configmap": {ref("nope", "a", ptr.To(true)), ""},
		"bad field":                  {corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}}, "unsupported fieldRef"},
	} {
		env, err := resolveEnv(context.Background(), pc, &corev1.Container{Name: "etcd", Env: []corev1.EnvVar{tc.env}}, nil, src)
		switch {
		case tc.want == "" && (err != nil || len(env) != 0):
			t.Errorf("%s: %v, %v", name, env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		case tc.want != "":
			var cfg *configError
			if !asConfigError(err, &cfg) {
				t.Errorf("%s: %v is not a configError (the container would not wait with CreateContainerConfigError)", name, err)
			}
		}
	}
}

func TestContainerArgv(t *testing.T) {
	img := Image{Entrypoint: []string{"/ep"}, Cmd: []string{"--default"}}
	for _, tc := range []struct {
		cmd, args, want []string
	}{
		{nil, nil, []string{"/ep", "--default"}},
		{nil, []string{"--a"}, []string{"/ep", "--a"}},
		{[]string{"/bin/x"}, nil, []string{"/bin/x"}},
		{[]string{"/bin/x"}, []string{"--a"}, []string{"/bin/x", "--a"}},
	} {
		got := containerArgv(&corev1.Container{Command: tc.cmd, Args: tc.args}, img)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("command %q args %q: %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
	}
}

func TestFieldValueMaps(t *testing.T) {
	v, err := fieldValue(podContext{pod: testPod()}, "metadata.labels")
	if err != nil || v != "app=\"etcd\"\nb=\"x\\\"y\"" {
		t.Fatalf("labels rendered %q, %v", v, err)
	}
}
