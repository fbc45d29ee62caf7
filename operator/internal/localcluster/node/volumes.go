package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podVolumes are the Pod's materialized volumes.
type podVolumes struct {
	paths       map[string]string // volume name -> host path
	rendered    []corev1.Volume   // volumes whose files the agent writes and refreshes
	tokens      map[string]*token // projected service-account tokens, by volume/path
	nextRefresh time.Time
}

// token is a service-account token and when to replace it.
type token struct {
	value     string
	refreshAt time.Time
}

// volumeRefreshPeriod is how often configMap, secret and downwardAPI contents are re-read, roughly
// the kubelet's sync period.
const volumeRefreshPeriod = time.Minute

// ensureVolumes materializes the Pod's volumes once, then refreshes the written ones when due (tokens
// before 80% of their lifetime, the rest every minute). While a volume cannot be set up the containers
// wait, with a FailedMount event.
func (w *podWorker) ensureVolumes() bool {
	if w.volumes != nil {
		if time.Now().After(w.volumes.nextRefresh) && w.node.online() {
			if err := w.renderVolumes(); err != nil {
				w.report(w.podRef(), "FailedMount", err.Error())
			}
		}
		w.wakeBy(w.volumes.nextRefresh)
		return true
	}
	v := &podVolumes{paths: map[string]string{}, tokens: map[string]*token{}}
	for _, vol := range w.view.Spec.Volumes {
		p, rendered, err := w.setupVolume(vol)
		if err != nil {
			w.report(w.podRef(), "FailedMount", fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", vol.Name, err))
			w.wakeBy(time.Now().Add(w.a.opts.Timing.BackoffStart))
			return false
		}
		v.paths[vol.Name] = p
		if rendered {
			v.rendered = append(v.rendered, vol)
		}
	}
	prev := w.volumes
	w.volumes = v
	if err := w.renderVolumes(); err != nil {
		w.volumes = prev
		w.report(w.podRef(), "FailedMount", err.Error())
		w.wakeBy(time.Now().Add(w.a.opts.Timing.BackoffStart))
		return false
	}
	delete(w.reported, "FailedMount/")
	return true
}

// setupVolume prepares one volume's host path; rendered is true for volumes whose files the agent
// writes (configMap, secret, downwardAPI, projected).
func (w *podWorker) setupVolume(vol corev1.Volume) (hostPath string, rendered bool, err error) {
	own := filepath.Join(w.dir, "volumes", vol.Name)
	switch {
	case vol.EmptyDir != nil:
		// Medium: Memory gets a plain directory too; nothing of ours depends on tmpfs.
		return own, false, w.makeWritableDir(own)
	case vol.HostPath != nil:
		return w.hostPathVolume(vol.HostPath)
	case vol.PersistentVolumeClaim != nil:
		p, err := w.claimPath(vol.PersistentVolumeClaim.ClaimName)
		if err != nil {
			return "", false, err
		}
		return p, false, w.applyFSGroup(p)
	case vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil, vol.Projected != nil:
		return own, true, os.MkdirAll(own, 0o755)
	}
	return "", false, errors.New("this volume type is not supported by the localcluster node agent " +
		"(supported: emptyDir, hostPath, persistentVolumeClaim, configMap, secret, downwardAPI, projected)")
}

func (w *podWorker) hostPathVolume(h *corev1.HostPathVolumeSource) (string, bool, error) {
	typ := corev1.HostPathUnset
	if h.Type != nil {
		typ = *h.Type
	}
	switch typ {
	case corev1.HostPathDirectoryOrCreate:
		return h.Path, false, os.MkdirAll(h.Path, 0o755)
	case corev1.HostPathFileOrCreate:
		f, err := os.OpenFile(h.Path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			err = f.Close()
		}
		return h.Path, false, err
	}
	if _, err := os.Stat(h.Path); err != nil {
		return "", false, fmt.Errorf("hostPath %s: %w", h.Path, err)
	}
	return h.Path, false, nil
}

// makeWritableDir creates an emptyDir: world-writable like the kubelet's, then fsGroup applied.
func (w *podWorker) makeWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	return w.applyFSGroup(dir)
}

// claimPath resolves a PersistentVolumeClaim to the host path of its bound PersistentVolume (hostPath or
// local, as the provisioner creates them).
func (w *podWorker) claimPath(claim string) (string, error) {
	ctx, cancel := w.apiContext()
	defer cancel()
	pvc, err := w.a.client.CoreV1().PersistentVolumeClaims(w.ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("PersistentVolumeClaim %s is not bound yet", claim)
	}
	pv, err := w.a.client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	switch {
	case pv.Spec.Local != nil:
		return pv.Spec.Local.Path, nil
	case pv.Spec.HostPath != nil:
		return pv.Spec.HostPath.Path, nil
	}
	return "", fmt.Errorf("PersistentVolume %s is neither local nor hostPath", pv.Name)
}

// applyFSGroup gives fsGroup group ownership of a writable volume and g+rwX, with the setgid bit on
// directories so new files inherit the group. With fsGroupChangePolicy OnRootMismatch it stops when the
// volume's root already has the right group and mode.
func (w *podWorker) applyFSGroup(dir string) error {
	sc := w.view.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	if sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch {
		if rootMatches(dir, gid) {
			return nil
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if err := os.Lchown(p, -1, gid); err != nil {
			return err
		}
		mode := info.Mode() | 0o060
		if d.IsDir() {
			mode |= 0o010 | fs.ModeSetgid
		} else if info.Mode()&0o100 != 0 {
			mode |= 0o010
		}
		return os.Chmod(p, mode&(fs.ModePerm|fs.ModeSetgid))
	})
}

func statGID(info fs.FileInfo) (int, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Gid), true
}

func rootMatches(dir string, gid int) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := statGID(info)
	return ok && st == gid && info.Mode()&0o070 == 0o070 && info.Mode()&fs.ModeSetgid != 0
}

// renderVolumes writes every configMap, secret, downwardAPI and projected volume, replacing files only
// when their contents changed, and schedules the next refresh.
func (w *podWorker) renderVolumes() error {
	v := w.volumes
	next := time.Now().Add(volumeRefreshPeriod)
	gid := -1
	if sc := w.view.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		gid = int(*sc.FSGroup)
	}
	for _, vol := range v.rendered {
		files, err := w.volumeFiles(vol)
		if err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
		if _, err := writeAtomic(v.paths[vol.Name], files, gid); err != nil {
			return fmt.Errorf("MountVolume.SetUp failed for volume %q : %w", vol.Name, err)
		}
	}
	for _, t := range v.tokens {
		if t.refreshAt.Before(next) {
			next = t.refreshAt
		}
	}
	v.nextRefresh = next
	return nil
}

// volumeFiles computes the files of a written volume.
func (w *podWorker) volumeFiles(vol corev1.Volume) (map[string]fileData, error) {
	ctx, cancel := w.apiContext()
	defer cancel()
	files := map[string]fileData{}
	switch {
	case vol.ConfigMap != nil:
		return files, w.configMapFiles(ctx, files, vol.ConfigMap.Name, vol.ConfigMap.Items, vol.ConfigMap.Optional, vol.ConfigMap.DefaultMode)
	case vol.Secret != nil:
		return files, w.secretFiles(ctx, files, vol.Secret.SecretName, vol.Secret.Items, vol.Secret.Optional, vol.Secret.DefaultMode)
	case vol.DownwardAPI != nil:
		return files, w.downwardFiles(files, vol.DownwardAPI.Items, vol.DownwardAPI.DefaultMode)
	}
	p := vol.Projected
	for i, s := range p.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = w.configMapFiles(ctx, files, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, p.DefaultMode)
		case s.Secret != nil:
			err = w.secretFiles(ctx, files, s.Secret.Name, s.Secret.Items, s.Secret.Optional, p.DefaultMode)
		case s.DownwardAPI != nil:
			err = w.downwardFiles(files, s.DownwardAPI.Items, p.DefaultMode)
		case s.ServiceAccountToken != nil:
			var t string
			t, err = w.serviceAccountToken(ctx, fmt.Sprintf("%s/%d", vol.Name, i), s.ServiceAccountToken)
			files[s.ServiceAccountToken.Path] = fileData{data: []byte(t), mode: modeOr(p.DefaultMode)}
		default:
			err = errors.New("projected source not supported by the localcluster node agent " +
				"(supported: configMap, secret, downwardAPI, serviceAccountToken)")
		}
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

func modeOr(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func itemMode(item corev1.KeyToPath, def *int32) os.FileMode {
	if item.Mode != nil {
		return os.FileMode(*item.Mode)
	}
	return modeOr(def)
}

// keyFiles adds data's keys as files: all keys, or only items (key -> path), as the kubelet does.
func keyFiles(files map[string]fileData, data map[string][]byte, items []corev1.KeyToPath, def *int32, what string) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = fileData{data: v, mode: modeOr(def)}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("configuration of %s has no key %q", what, it.Key)
		}
		files[it.Path] = fileData{data: v, mode: itemMode(it, def)}
	}
	return nil
}

func (w *podWorker) configMapFiles(ctx context.Context, files map[string]fileData, name string, items []corev1.KeyToPath, optional *bool, def *int32) error {
	cm, err := w.a.src.ConfigMap(ctx, w.ns, name)
	if apierrors.IsNotFound(err) && name == "kube-root-ca.crt" && len(w.a.opts.CAPEM) > 0 {
		// kube-controller-manager publishes it shortly after a namespace appears; the CA is the same.
		cm, err = &corev1.ConfigMap{Data: map[string]string{"ca.crt": string(w.a.opts.CAPEM)}}, nil
	}
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil
		}
		return err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(files, data, items, def, "ConfigMap "+w.ns+"/"+name)
}

func (w *podWorker) secretFiles(ctx context.Context, files map[string]fileData, name string, items []corev1.KeyToPath, optional *bool, def *int32) error {
	s, err := w.a.src.Secret(ctx, w.ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			return nil
		}
		return err
	}
	return keyFiles(files, s.Data, items, def, "Secret "+w.ns+"/"+name)
}

func (w *podWorker) downwardFiles(files map[string]fileData, items []corev1.DownwardAPIVolumeFile, def *int32) error {
	pc := podContext{pod: w.view, podIP: w.ip, hostIP: w.a.opts.NodeIP, allocatable: nodeAllocatable}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(pc, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			c := containerByName(w.view, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return fmt.Errorf("downwardAPI item %s: no container %q", it.Path, it.ResourceFieldRef.ContainerName)
			}
			v, err = resourceValue(pc, c, it.ResourceFieldRef)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI item %s: %w", it.Path, err)
		}
		mode := modeOr(def)
		if it.Mode != nil {
			mode = os.FileMode(*it.Mode)
		}
		files[it.Path] = fileData{data: []byte(v), mode: mode}
	}
	return nil
}

func containerByName(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// serviceAccountToken returns a token bound to the Pod from the TokenRequest API, requesting a new one
// once 80% of the current one's lifetime has passed (the kubelet's rule).
func (w *podWorker) serviceAccountToken(ctx context.Context, key string, src *corev1.ServiceAccountTokenProjection) (string, error) {
	if t := w.volumes.tokens[key]; t != nil && time.Now().Before(t.refreshAt) {
		return t.value, nil
	}
	expiration := int64(3600)
	if src.ExpirationSeconds != nil {
		expiration = *src.ExpirationSeconds
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &expiration,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: w.name, UID: w.uid},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	sa := w.view.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	issued := time.Now()
	resp, err := w.a.client.CoreV1().ServiceAccounts(w.ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token for service account %s/%s: %w", w.ns, sa, err)
	}
	lifetime := resp.Status.ExpirationTimestamp.Sub(issued)
	// The apiserver may extend the token's life far beyond what was asked (a year for kube-api-access's
	// 3607 s); the kubelet then still refreshes it daily.
	w.volumes.tokens[key] = &token{value: resp.Status.Token, refreshAt: issued.Add(min(lifetime*8/10, 24*time.Hour))}
	return resp.Status.Token, nil
}
