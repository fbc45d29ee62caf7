package node

import (
	"context"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// containerSpec resolves c into what the runtime runs.
func (w *podWorker) containerSpec(c *container, img Image) (podruntime.ContainerSpec, error) {
	ids, err := securityIDs(w.view, &c.spec, img)
	if err != nil {
		return podruntime.ContainerSpec{}, err
	}
	pc := podContext{pod: w.view, podIP: w.ip, hostIP: w.a.opts.NodeIP, allocatable: nodeAllocatable}
	ctx, cancel := w.apiContext()
	defer cancel()
	// The kubelet adds the kubernetes Service's variables even with enableServiceLinks: false.
	env, err := resolveEnv(ctx, pc, &c.spec, kubernetesServiceEnv(w.a.opts.KubernetesService), w.a.src)
	if err != nil {
		return podruntime.ContainerSpec{}, err
	}
	mounts, err := w.mounts(&c.spec, env)
	if err != nil {
		return podruntime.ContainerSpec{}, err
	}
	kv := make([]string, len(env))
	for i, e := range env {
		kv[i] = e.Name + "=" + e.Value
	}
	readOnlyRoot := c.spec.SecurityContext != nil && c.spec.SecurityContext.ReadOnlyRootFilesystem != nil &&
		*c.spec.SecurityContext.ReadOnlyRootFilesystem
	return podruntime.ContainerSpec{
		Name:         c.spec.Name,
		Binary:       img.Binary,
		ImagePath:    img.Path,
		Argv:         expandArgv(containerArgv(&c.spec, img), env),
		Env:          kv,
		WorkingDir:   c.spec.WorkingDir,
		UID:          ids.uid,
		GID:          ids.gid,
		Groups:       ids.groups,
		Mounts:       mounts,
		ReadOnlyRoot: readOnlyRoot,
		LogPath:      w.logPath(c),
	}, nil
}

func (w *podWorker) logPath(c *container) string {
	return filepath.Join(w.dir, "logs", c.spec.Name+".log")
}

// mounts are the container's volume mounts plus the Pod's /etc files.
func (w *podWorker) mounts(c *corev1.Container, env []envVar) ([]podruntime.Mount, error) {
	var out []podruntime.Mount
	for _, vm := range c.VolumeMounts {
		host, ok := w.volumes.paths[vm.Name]
		if !ok {
			return nil, configErrorf("volume mount %q names no volume of the Pod", vm.Name)
		}
		if vm.SubPath != "" || vm.SubPathExpr != "" {
			sub := vm.SubPath
			if vm.SubPathExpr != "" {
				sub = expandArgv([]string{vm.SubPathExpr}, env)[0]
			}
			if path.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
				return nil, configErrorf("subPath %q of volume mount %q must be relative and stay inside the volume", sub, vm.Name)
			}
			host = filepath.Join(host, sub)
		}
		out = append(out, podruntime.Mount{HostPath: host, ContainerPath: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	etc := filepath.Join(w.dir, "etc")
	for _, f := range []string{"hosts", "resolv.conf", "hostname"} {
		if !slices.ContainsFunc(out, func(m podruntime.Mount) bool { return m.ContainerPath == "/etc/"+f }) {
			out = append(out, podruntime.Mount{HostPath: filepath.Join(etc, f), ContainerPath: "/etc/" + f})
		}
	}
	return out, nil
}

// ids is the identity a container runs with.
type ids struct {
	uid, gid uint32
	groups   []uint32
}

// securityIDs applies the security context: the container's settings override the Pod's, which
// override the image's user; fsGroup joins the supplemental groups. runAsNonRoot refuses uid 0 with the
// kubelet's message.
func securityIDs(pod *corev1.Pod, c *corev1.Container, img Image) (ids, error) {
	out := ids{uid: img.User, gid: img.Group}
	var nonRoot *bool
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			out.uid = uint32(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			out.gid = uint32(*sc.RunAsGroup)
		}
		nonRoot = sc.RunAsNonRoot
		for _, g := range sc.SupplementalGroups {
			out.groups = append(out.groups, uint32(g))
		}
		if sc.FSGroup != nil && !slices.Contains(out.groups, uint32(*sc.FSGroup)) {
			out.groups = append(out.groups, uint32(*sc.FSGroup))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			out.uid = uint32(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			out.gid = uint32(*sc.RunAsGroup)
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	if nonRoot != nil && *nonRoot && out.uid == 0 {
		return ids{}, configErrorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)",
			pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)
	}
	return out, nil
}

// clientSource reads ConfigMaps and Secrets straight from the apiserver.
type clientSource struct{ client kubernetes.Interface }

func (s clientSource) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return s.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (s clientSource) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return s.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}
