package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/quorumkit/etcd-operator/operator/internal/localcluster/podruntime"
)

// handlerEnv is what a probe or hook needs to reach a container: the Pod's address, its sandbox and
// process (for exec) and the in-namespace dialer.
type handlerEnv struct {
	podIP     netip.Addr
	container *corev1.Container
	sandbox   *podruntime.Sandbox
	proc      *podruntime.Process
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

// check runs one probe or hook action; ok is false with a kubelet-like message on failure.
func (e handlerEnv) check(ctx context.Context, h corev1.ProbeHandler) (ok bool, msg string) {
	switch {
	case h.HTTPGet != nil:
		return e.httpGet(ctx, h.HTTPGet)
	case h.TCPSocket != nil:
		return e.tcp(ctx, h.TCPSocket)
	case h.GRPC != nil:
		return e.grpc(ctx, h.GRPC)
	case h.Exec != nil:
		out, code, err := e.sandbox.Exec(ctx, e.proc, h.Exec.Command)
		if err != nil {
			return false, err.Error()
		}
		if code != 0 {
			return false, fmt.Sprintf("command %q exited with %d: %s", h.Exec.Command, code, strings.TrimSpace(string(out)))
		}
		return true, ""
	}
	return false, "no supported handler (exec, httpGet, tcpSocket, grpc)"
}

// port resolves a numeric or named container port.
func (e handlerEnv) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range e.container.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("container %s has no port named %q", e.container.Name, p.StrVal)
}

func (e handlerEnv) host(h string) string {
	if h != "" {
		return h
	}
	return e.podIP.String()
}

func (e handlerEnv) httpGet(ctx context.Context, g *corev1.HTTPGetAction) (bool, string) {
	port, err := e.port(g.Port)
	if err != nil {
		return false, err.Error()
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	url := fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(e.host(g.Host), strconv.Itoa(port)), path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.35")
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
		} else {
			req.Header.Set(h.Name, h.Value)
		}
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:       e.dial,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // as the kubelet: probes do not verify
	}}
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Sprintf("Get %q: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 10*1024))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return false, fmt.Sprintf("HTTP probe failed with statuscode: %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return true, ""
}

func (e handlerEnv) tcp(ctx context.Context, t *corev1.TCPSocketAction) (bool, string) {
	port, err := e.port(t.Port)
	if err != nil {
		return false, err.Error()
	}
	addr := net.JoinHostPort(e.host(t.Host), strconv.Itoa(port))
	conn, err := e.dial(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Sprintf("dial tcp %s: %v", addr, err)
	}
	_ = conn.Close()
	return true, ""
}

func (e handlerEnv) grpc(ctx context.Context, g *corev1.GRPCAction) (bool, string) {
	addr := net.JoinHostPort(e.podIP.String(), strconv.Itoa(int(g.Port)))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return e.dial(ctx, "tcp", a) }))
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = conn.Close() }()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return false, fmt.Sprintf("failed to connect service %q within %v: %v", addr, timeoutOf(ctx), err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return false, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus())
	}
	return true, ""
}

func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d).Round(time.Second)
	}
	return 0
}

// probeKind names a probe in events ("Liveness probe failed: ...").
type probeKind string

const (
	startupProbe   probeKind = "Startup"
	livenessProbe  probeKind = "Liveness"
	readinessProbe probeKind = "Readiness"
)

// startProbes runs c's probes for instance inst until it exits: the startup probe first, then liveness
// and readiness. Results come back to the worker through post; each probe reports only transitions.
func (w *podWorker) startProbes(c *container, inst int) {
	ctx, cancel := context.WithCancel(w.a.ctx)
	c.stopProbes = cancel
	spec := c.spec
	env := handlerEnv{podIP: w.ip, container: &spec, sandbox: w.sandbox, proc: c.proc, dial: w.a.opts.Dial}
	started := c.startedAt
	go func() {
		if p := spec.StartupProbe; p != nil {
			if !w.runProbe(ctx, env, c, inst, startupProbe, p, started) {
				return
			}
			w.post(func() {
				if inst == c.instance && c.proc != nil {
					c.status.Started = ptrTrue()
					if spec.ReadinessProbe == nil {
						c.status.Ready = true
					}
				}
			})
		}
		if p := spec.LivenessProbe; p != nil {
			go w.runProbe(ctx, env, c, inst, livenessProbe, p, started)
		}
		if p := spec.ReadinessProbe; p != nil {
			w.runProbe(ctx, env, c, inst, readinessProbe, p, started)
		}
	}()
}

func ptrTrue() *bool { t := true; return &t }

// runProbe probes every period after the initial delay. A startup probe returns true on its first
// success; reaching failureThreshold makes startup and liveness probes restart the container (and
// return false); readiness flips the ready flag after successThreshold/failureThreshold results. It
// returns false when ctx ends.
func (w *podWorker) runProbe(ctx context.Context, env handlerEnv, c *container, inst int, kind probeKind, p *corev1.Probe, started time.Time) bool {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	successes, failures := max(p.SuccessThreshold, 1), max(p.FailureThreshold, 1)
	if !sleepCtx(ctx, time.Until(started.Add(time.Duration(p.InitialDelaySeconds)*time.Second))) {
		return false
	}
	ready := false
	var okRun, failRun int32
	for {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		ok, msg := env.check(pctx, p.ProbeHandler)
		cancel()
		if ctx.Err() != nil {
			return false
		}
		if ok {
			okRun, failRun = okRun+1, 0
		} else {
			okRun, failRun = 0, failRun+1
			w.post(func() {
				if inst == c.instance {
					w.event(w.containerRef(c), "Warning", "Unhealthy", fmt.Sprintf("%s probe failed: %s", kind, msg))
				}
			})
		}
		switch kind {
		case startupProbe:
			if okRun >= 1 {
				return true
			}
			if failRun >= failures {
				w.restartUnhealthy(c, inst, kind, p)
				return false
			}
		case livenessProbe:
			if failRun >= failures {
				w.restartUnhealthy(c, inst, kind, p)
				return false
			}
		case readinessProbe:
			if !ready && okRun >= successes || ready && failRun >= failures {
				ready = !ready
				r := ready
				w.post(func() {
					if inst == c.instance && c.proc != nil {
						c.status.Ready = r
					}
				})
			}
		}
		if !sleepCtx(ctx, period) {
			return false
		}
	}
}

// restartUnhealthy stops instance inst after a failed startup or liveness probe, like a kubelet; the
// restart policy decides what follows.
func (w *podWorker) restartUnhealthy(c *container, inst int, kind probeKind, p *corev1.Probe) {
	w.post(func() {
		if inst != c.instance || c.proc == nil {
			return
		}
		w.event(w.containerRef(c), corev1.EventTypeNormal, "Killing",
			fmt.Sprintf("Container %s failed %s probe, will be restarted", c.spec.Name, strings.ToLower(string(kind))))
		w.stopContainer(c, containerGrace(w.view, p), true)
	})
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// hookRunner returns a function that runs a lifecycle handler (exec, httpGet, sleep) against proc and
// records a warning event named failReason if it fails.
func (w *podWorker) hookRunner(c *container, proc *podruntime.Process, h *corev1.LifecycleHandler, failReason string) func(context.Context) {
	env := handlerEnv{podIP: w.ip, container: &c.spec, sandbox: w.sandbox, proc: proc, dial: w.a.opts.Dial}
	ref := w.containerRef(c)
	return func(ctx context.Context) {
		if h.Sleep != nil {
			sleepCtx(ctx, time.Duration(h.Sleep.Seconds)*time.Second)
			return
		}
		ok, msg := env.check(ctx, corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket})
		if !ok {
			w.a.logf("pod %s/%s: %s: %s", w.ns, w.name, failReason, msg)
			if w.node.online() {
				w.node.recorder.Event(ref, corev1.EventTypeWarning, failReason, msg)
			}
		}
	}
}

// runPostStart runs the postStart hook; if it fails the container is killed, as the kubelet does.
func (w *podWorker) runPostStart(c *container, inst int, h *corev1.LifecycleHandler) {
	env := handlerEnv{podIP: w.ip, container: &c.spec, sandbox: w.sandbox, proc: c.proc, dial: w.a.opts.Dial}
	grace := containerGrace(w.view, nil)
	go func() {
		ctx, cancel := context.WithTimeout(w.a.ctx, grace)
		defer cancel()
		if h.Sleep != nil {
			sleepCtx(ctx, time.Duration(h.Sleep.Seconds)*time.Second)
			return
		}
		ok, msg := env.check(ctx, corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket})
		if ok {
			return
		}
		w.post(func() {
			if inst == c.instance && c.proc != nil {
				w.event(w.containerRef(c), corev1.EventTypeWarning, "FailedPostStartHook", msg)
				w.stopContainer(c, containerGrace(w.view, nil), false)
			}
		})
	}()
}
