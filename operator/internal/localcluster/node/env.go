package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// objectSource reads the ConfigMaps and Secrets a Pod refers to.
type objectSource interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// podContext is what env and downward API values are computed from, besides the Pod itself.
type podContext struct {
	pod         *corev1.Pod
	podIP       netip.Addr
	hostIP      netip.Addr
	allocatable corev1.ResourceList // a limit left unset reads as the node's allocatable, as in kubelet
}

// envVar is one resolved variable, in the order the container sees them.
type envVar struct{ Name, Value string }

// configError is a problem in the Pod's configuration that keeps a container from being created; the
// container waits with reason CreateContainerConfigError and this message.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func configErrorf(format string, args ...any) error {
	return &configError{fmt.Sprintf(format, args...)}
}

// kubernetesServiceEnv is the kubernetes Service's part of the docker-link style variables a kubelet
// injects (KUBERNETES_SERVICE_HOST, KUBERNETES_PORT_443_TCP, ...). Links for the Pod's own namespace's
// Services are not injected: nothing of ours reads them, and etcd would see ETCD_* names as its flags.
func kubernetesServiceEnv(svc netip.AddrPort) []envVar {
	if !svc.IsValid() {
		return nil
	}
	host, port := svc.Addr().String(), strconv.Itoa(int(svc.Port()))
	url := "tcp://" + svc.String()
	prefix := "KUBERNETES_PORT_" + port + "_TCP"
	return []envVar{
		{"KUBERNETES_SERVICE_HOST", host},
		{"KUBERNETES_SERVICE_PORT", port},
		{"KUBERNETES_SERVICE_PORT_HTTPS", port},
		{"KUBERNETES_PORT", url},
		{prefix, url},
		{prefix + "_PROTO", "tcp"},
		{prefix + "_PORT", port},
		{prefix + "_ADDR", host},
	}
}

// resolveEnv computes a container's environment as the kubelet does: envFrom first, then env in order
// (each value may refer to variables defined before it and to the service variables with $(NAME)), then
// the service variables not already defined.
func resolveEnv(ctx context.Context, pc podContext, c *corev1.Container, serviceEnv []envVar, src objectSource) ([]envVar, error) {
	var out []envVar
	index := map[string]int{}
	set := func(name, value string) {
		if i, ok := index[name]; ok {
			out[i].Value = value
			return
		}
		index[name] = len(out)
		out = append(out, envVar{name, value})
	}
	for _, from := range c.EnvFrom {
		data, err := envFromData(ctx, pc.pod.Namespace, from, src)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			name := from.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) == 0 { // the kubelet skips invalid names too
				set(name, data[k])
			}
		}
	}
	lookup := func(name string) (string, bool) {
		if i, ok := index[name]; ok {
			return out[i].Value, true
		}
		for _, s := range serviceEnv {
			if s.Name == name {
				return s.Value, true
			}
		}
		return "", false
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup))
			continue
		}
		v, ok, err := envValueFrom(ctx, pc, c, e.ValueFrom, src)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	for _, s := range serviceEnv {
		if _, defined := index[s.Name]; !defined {
			set(s.Name, s.Value)
		}
	}
	return out, nil
}

func envFromData(ctx context.Context, ns string, from corev1.EnvFromSource, src objectSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ctx, ns, from.ConfigMapRef.Name)
		if err != nil {
			return optionalMissing(err, from.ConfigMapRef.Optional)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := src.Secret(ctx, ns, from.SecretRef.Name)
		if err != nil {
			return optionalMissing(err, from.SecretRef.Optional)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

func optionalMissing(err error, optional *bool) (map[string]string, error) {
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, nil
	}
	return nil, wrapConfigError(err)
}

// wrapConfigError turns a missing object into a configError (the Pod must be fixed or the object
// created) and leaves other errors (the apiserver unreachable) as they are, to be retried.
func wrapConfigError(err error) error {
	if apierrors.IsNotFound(err) {
		return &configError{err.Error()}
	}
	return err
}

// envValueFrom resolves one valueFrom. ok is false when an optional source is missing: the variable is
// then not set at all.
func envValueFrom(ctx context.Context, pc podContext, c *corev1.Container, from *corev1.EnvVarSource, src objectSource) (string, bool, error) {
	ns := pc.pod.Namespace
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(pc, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := resourceValue(pc, c, from.ResourceFieldRef)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := src.ConfigMap(ctx, ns, ref.Name)
		if err != nil {
			_, err = optionalMissing(err, ref.Optional)
			return "", false, err
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if ref.Optional != nil && *ref.Optional {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in ConfigMap %s/%s", ref.Key, ns, ref.Name)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := src.Secret(ctx, ns, ref.Name)
		if err != nil {
			_, err = optionalMissing(err, ref.Optional)
			return "", false, err
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if ref.Optional != nil && *ref.Optional {
			return "", false, nil
		}
		return "", false, configErrorf("couldn't find key %s in Secret %s/%s", ref.Key, ns, ref.Name)
	}
	return "", false, configErrorf("valueFrom has no supported source")
}

// fieldValue resolves a downward API field path, for env and for downwardAPI volume files.
func fieldValue(pc podContext, path string) (string, error) {
	pod := pc.pod
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	addr := func(a netip.Addr) string {
		if a.IsValid() {
			return a.String()
		}
		return ""
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return addr(pc.podIP), nil
	case "status.hostIP", "status.hostIPs":
		return addr(pc.hostIP), nil
	}
	return "", configErrorf("unsupported fieldRef %q", path)
}

// subscript parses `base['key']`.
func subscript(path, base string) (string, bool) {
	rest, ok := strings.CutPrefix(path, base+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels or annotations as the downward API does: key="value" lines, sorted.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceValue resolves a resourceFieldRef: the container's request or limit divided by the divisor,
// rounded up; an unset limit is the node's allocatable.
func resourceValue(pc podContext, c *corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		found := false
		for _, other := range slices.Concat(pc.pod.Spec.InitContainers, pc.pod.Spec.Containers) {
			if other.Name == ref.ContainerName {
				c, found = &other, true
				break
			}
		}
		if !found {
			return "", configErrorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", configErrorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, set := list[corev1.ResourceName(name)]
	if !set && kind == "limits" {
		q = pc.allocatable[corev1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(corev1.ResourceCPU) {
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	}
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
}

// expandArgv applies $(NAME) expansion with the container's final environment.
func expandArgv(argv []string, env []envVar) []string {
	lookup := func(name string) (string, bool) {
		for _, e := range env {
			if e.Name == name {
				return e.Value, true
			}
		}
		return "", false
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = expand(a, lookup)
	}
	return out
}

// containerArgv is the command line per the kubelet's rules: command replaces the image's ENTRYPOINT
// and then the image's CMD is dropped; args replace CMD.
func containerArgv(c *corev1.Container, img Image) []string {
	switch {
	case len(c.Command) > 0:
		return slices.Concat(c.Command, c.Args)
	case len(c.Args) > 0:
		return slices.Concat(img.Entrypoint, c.Args)
	default:
		return slices.Concat(img.Entrypoint, img.Cmd)
	}
}

func asConfigError(err error, target **configError) bool { return errors.As(err, target) }
